//go:build !unix && !windows

package dashboard

import "time"

// ownCPU: this platform does not say.
func ownCPU() (time.Duration, bool) { return 0, false }
