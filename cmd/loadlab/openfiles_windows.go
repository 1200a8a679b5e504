package main

// fitsOpenFiles has nothing to check on Windows, which has no open-file limit
// per process (its sockets are bounded by memory and ephemeral ports).
func fitsOpenFiles(int, string) error { return nil }
