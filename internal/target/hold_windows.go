package target

// allocate returns n bytes; on Windows, from the Go heap.
func allocate(n int) []byte { return make([]byte, n) }
