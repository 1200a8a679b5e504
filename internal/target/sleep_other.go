//go:build !linux

package target

import "time"

// nanosleep is a plain time.Sleep outside Linux: delays may run long by the
// runtime timer's wake-up delay, which the spin after it then absorbs less.
func nanosleep(d time.Duration) { time.Sleep(d) }
