package httpx

import (
	"testing"
	"time"
)

var platformEngines = []Engine{EngineEpoll, EnginePortable}

// TestConnectFailsFromTheLoop (the epoll engine: the portable one always
// connects on a goroutine of its own, so from the loop): a connect that fails at once (here a socket
// of an address family the kernel refuses; in life, no file descriptor
// left) is reported from the loop, not from inside Do. A handler that
// retries at once, as a VU in a closed load does, must not recurse without
// end: before, 30,000 connections over the open-file limit overflowed the
// stack.
func TestConnectFailsFromTheLoop(t *testing.T) {
	l := startLoop(t, Options{Timeout: time.Second, Engine: EngineEpoll})
	tg := target(t, "http://127.0.0.1:1/")
	tg.sys.family = -1 // socket() fails: EAFNOSUPPORT
	c := l.NewConn(tg)
	const tries = 100000
	done := make(chan int, 1)
	var failures int
	var inside bool // set while Do runs
	var h handlerFunc
	h = func(c *Conn, x *Exchange) {
		if inside {
			t.Error("the failure was reported from inside Do")
		}
		if x.Failure != FailureConnect {
			t.Errorf("class %v (%v), want a connect failure", x.Failure, x.Err)
		}
		if failures++; failures == tries {
			done <- failures
			return
		}
		inside = true
		c.Do(x, h)
		inside = false
	}
	x := get(tg, "/", false)
	l.Post(func() { inside = true; c.Do(x, h); inside = false })
	select {
	case n := <-done:
		if n != tries {
			t.Errorf("%d failures, want %d", n, tries)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the retries did not finish in 20 s")
	}
}
