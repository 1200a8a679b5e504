//go:build !linux

package main

// duetCPUs is 0 outside Linux: server limits are Linux's (cgroups and
// affinity), so a plan duet leaves its servers to the scheduler there.
func duetCPUs() (n int, list string) { return 0, "" }
