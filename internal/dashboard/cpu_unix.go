//go:build unix

package dashboard

import (
	"syscall"
	"time"
)

// ownCPU is the CPU time loadlab's process has used so far.
func ownCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
