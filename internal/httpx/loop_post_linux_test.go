package httpx

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestPostAfterRun: a Post or Stop after Run returned (a socket step's
// goroutine that outlived its loop) writes nothing to the loop's closed
// wake descriptor, which a file opened since may have taken.
func TestPostAfterRun(t *testing.T) {
	l, err := NewLoop(time.Now(), Options{Engine: EngineEpoll})
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(20 * time.Millisecond); l.Stop() }() // from another goroutine, as an engine stops
	if err := l.Run(); err != nil {
		t.Fatal(err)
	}
	wakefd := l.poll.(*epollPoller).wakefd
	var readers []*os.File
	for range 16 { // until a pipe's write end takes the wake descriptor's number
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		readers = append(readers, r)
		if int(w.Fd()) == wakefd {
			break
		}
		if int(r.Fd()) == wakefd {
			r.Close() // let the next pipe's write end have it
		}
	}
	l.Post(func() {})
	l.Stop()
	for _, r := range readers {
		fd := int(r.Fd()) // once: Fd makes the file blocking again
		if err := syscall.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
		var b [16]byte
		if n, _ := syscall.Read(fd, b[:]); n > 0 {
			t.Fatalf("%d bytes written into a pipe that took a descriptor of the closed loop", n)
		}
	}
}
