//go:build linux

package server

import (
	"sync"

	"golang.org/x/sys/unix"
)

// subreaper is the package's one global: becoming a child subreaper is a property of
// the whole loadlab process, so it is done once, whoever starts the first server.
var subreaper struct {
	once sync.Once
	err  error
}

// becomeSubreaper makes orphans of any process this process started reparent to it
// instead of init, so a server that daemonizes stays findable and killable. The cost,
// for a process that also starts other children: their orphans become its zombies too;
// loadlab starts no other long-lived children.
func becomeSubreaper() error {
	subreaper.once.Do(func() {
		subreaper.err = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	return subreaper.err
}
