//go:build !linux

package runner

import "runtime"

// usableCPUs is how many CPUs this process may run on: outside Linux, the
// number the Go runtime sees (macOS has no affinity masks; Windows' is not read).
func usableCPUs() (float64, error) { return float64(runtime.NumCPU()), nil }
