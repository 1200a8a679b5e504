package target

import (
	"time"

	"golang.org/x/sys/unix"
)

// nanosleep sleeps d with one system call, outside Go's timers, whose wake-up
// is late by up to a millisecond.
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}
