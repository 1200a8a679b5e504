//go:build !windows

package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// fitsOpenFiles checks that n connections fit in the files loadlab may open:
// past the limit every new connection fails at once with "too many open
// files", and the run would measure loadlab's limit, not the server.
func fitsOpenFiles(n int, what string) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return nil
	}
	const spare = 64 // the event loops, the log, the result, the sampler
	if avail := int64(lim.Cur) - spare; int64(n) > avail {
		return fmt.Errorf("%s needs %d connections, but loadlab may open only %d files (ulimit -n %d): raise the limit or ask for fewer", what, n, max(avail, 0), lim.Cur)
	}
	return nil
}
