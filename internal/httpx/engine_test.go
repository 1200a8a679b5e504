package httpx

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseEngine(t *testing.T) {
	tests := []struct {
		in      string
		want    Engine
		wantErr string
	}{
		{"", EngineAuto, ""},
		{"auto", EngineAuto, ""},
		{"epoll", EngineEpoll, ""},
		{"portable", EnginePortable, ""},
		{"kqueue", EngineAuto, `unknown engine "kqueue": use epoll (Linux only) or portable`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEngine(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v %v, want %v", got, err, tt.want)
			}
		})
	}
}

// TestEngineFromEnvironment: LOADLAB_ENGINE chooses the engine of a loop
// whose options do not, and a misspelt value is an error that names it.
func TestEngineFromEnvironment(t *testing.T) {
	t.Setenv(EngineEnv, "portable")
	l, err := NewLoop(time.Now(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Engine() != EnginePortable {
		t.Errorf("engine %v, want portable", l.Engine())
	}
	l.poll.close()

	t.Setenv(EngineEnv, "portabel")
	_, err = NewLoop(time.Now(), Options{})
	if err == nil || !strings.Contains(err.Error(), `LOADLAB_ENGINE=portabel: unknown engine "portabel"`) {
		t.Fatalf("error %v, want one naming LOADLAB_ENGINE=portabel", err)
	}

	t.Setenv(EngineEnv, "")
	l, err = NewLoop(time.Now(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Engine() != platformEngine {
		t.Errorf("engine %v, want the platform's %v", l.Engine(), platformEngine)
	}
	l.poll.close()
}

// serveOnce accepts connections and answers each as answer says, after
// reading the request's first bytes.
func serveOnce(t *testing.T, answer func(c *net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				answer(c.(*net.TCPConn))
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// TestEngineErrorClasses: a reset and a response that is not HTTP fail with
// the same class and message on every engine.
func TestEngineErrorClasses(t *testing.T) {
	reset := func(c *net.TCPConn) { c.SetLinger(0) } // the close sends RST
	garbage := func(c *net.TCPConn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n") }
	tests := []struct {
		name   string
		answer func(c *net.TCPConn)
		class  Failure
		want   string
	}{
		{"reset", reset, FailureReset, "read: connection reset by peer"},
		{"not http", garbage, FailureProtocol, "malformed response"},
	}
	forEachEngine(t, func(t *testing.T, engine Engine) {
		l := startLoop(t, Options{Timeout: 5 * time.Second, Engine: engine})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tg := target(t, serveOnce(t, tt.answer))
				x := do(t, l, l.NewConn(tg), get(tg, "/", false))
				if x.Failure != tt.class || x.Err == nil || !strings.Contains(x.Err.Error(), tt.want) {
					t.Fatalf("class %v err %v, want %v %q", x.Failure, x.Err, tt.class, tt.want)
				}
			})
		}
	})
}

// TestEngineSlowServerDoesNotBlockTheLoop: a server that never reads a big
// request body stalls that request alone. Another connection of the same
// loop still gets its answer at once, and the stalled one times out on time.
func TestEngineSlowServerDoesNotBlockTheLoop(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine Engine) {
		stalled := make(chan struct{})
		t.Cleanup(func() { close(stalled) })
		slow := target(t, serveOnce(t, func(*net.TCPConn) { <-stalled }))
		fast := target(t, serveOnce(t, func(c *net.TCPConn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}))
		const timeout = time.Second
		l := startLoop(t, Options{Timeout: timeout, Engine: engine})

		body := bytes.Repeat([]byte("x"), 32<<20) // far more than the socket buffers take
		r := Request{Method: "POST", Target: "/", Host: slow.Host, Body: body}
		big := &Exchange{Request: r.Append(nil)}
		slowDone := make(chan struct{})
		l.Post(func() { l.NewConn(slow).Do(big, handlerFunc(func(*Conn, *Exchange) { close(slowDone) })) })

		time.Sleep(50 * time.Millisecond) // the big write is under way
		began := time.Now()
		x := do(t, l, l.NewConn(fast), get(fast, "/", false))
		// A loop blocked by the big write would answer after the timeout, if ever.
		if took := time.Since(began); x.Err != nil || x.Status != 200 || took > timeout/2 {
			t.Errorf("the other connection: %v %d after %v, want 200 well before the timeout (%v)", x.Err, x.Status, took, timeout)
		}
		select {
		case <-slowDone:
		case <-time.After(10 * time.Second):
			t.Fatal("the stalled exchange did not end")
		}
		if big.Failure != FailureTimeout {
			t.Errorf("the stalled exchange: class %v (%v), want timeout", big.Failure, big.Err)
		}
		if took := big.End - big.Start; took < timeout || took > 2*timeout {
			t.Errorf("the stalled exchange ended after %v, want %v to %v", took, timeout, 2*timeout)
		}
	})
}

// TestPortableEarlyResponseWaitsForTheWrite: a server that answers before it
// has read the request's body. The portable engine hands the response over
// only once the body is written, so the handler may reuse the request's
// bytes, and the connection stays usable. (The epoll engine hands it over at
// once, as it always has, and closes the connection: TestEarlyResponseNeverReadBody.)
func TestPortableEarlyResponseWaitsForTheWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const bodySize = 32 << 20
	reading := make(chan time.Time, 1) // when the server starts reading the body
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		readHead := func() bool {
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return false
				}
				if len(line) == 2 {
					return true
				}
			}
		}
		if !readHead() {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nearly")
		time.Sleep(100 * time.Millisecond) // the client is still writing
		reading <- time.Now()
		if _, err := io.CopyN(io.Discard, r, bodySize); err != nil {
			return
		}
		if readHead() {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")
		}
	}()
	l := startLoop(t, Options{Timeout: 10 * time.Second, Engine: EnginePortable})
	tg := target(t, "http://"+ln.Addr().String()+"/")
	c := l.NewConn(tg)
	r := Request{Method: "POST", Target: "/", Host: tg.Host, Body: bytes.Repeat([]byte("x"), bodySize)}
	x := do(t, l, c, &Exchange{Request: r.Append(nil), Keep: true})
	handed := time.Now()
	if x.Err != nil || x.Status != 200 || string(x.Body) != "early" {
		t.Fatalf("early response: %v %d %q", x.Err, x.Status, x.Body)
	}
	// The body is far bigger than the socket buffers: its write can only end
	// after the server began to read it.
	select {
	case at := <-reading:
		if handed.Before(at) {
			t.Errorf("handed over %v before the server began to read the body", at.Sub(handed))
		}
	default:
		t.Error("handed over before the server began to read the body")
	}
	next := do(t, l, c, get(tg, "/", true))
	if next.Err != nil || next.Status != 200 || string(next.Body) != "next" || !next.Reused {
		t.Errorf("the next request: %v %d %q reused %v", next.Err, next.Status, next.Body, next.Reused)
	}
}

// TestEarlyResponseNeverReadBody: a server answers a big upload before
// reading its body, never reads the rest and keeps the connection open (as
// an application server refusing a too-large request may). The response is
// handed over, not timed out; the connection closes, since the rest of the
// body was not sent, and the next request goes on a fresh connection instead
// of being read by the server as body bytes.
func TestEarlyResponseNeverReadBody(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine Engine) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		hold := make(chan struct{})
		defer close(hold)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					r := bufio.NewReader(c)
					first, err := r.ReadString('\n')
					if err != nil {
						return
					}
					for {
						line, err := r.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) == 2 {
							break
						}
					}
					if strings.HasPrefix(first, "GET ") {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						return
					}
					// The upload: answered at once, its body never read, the
					// connection kept open.
					io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\n\r\nbig!")
					<-hold
				}()
			}
		}()
		l := startLoop(t, Options{Timeout: 3 * time.Second, Engine: engine})
		tg := target(t, "http://"+ln.Addr().String()+"/")
		c := l.NewConn(tg)
		r := Request{Method: "POST", Target: "/", Host: tg.Host, Body: bytes.Repeat([]byte("x"), 32<<20)}
		x := do(t, l, c, &Exchange{Request: r.Append(nil), Keep: true})
		if x.Err != nil || x.Status != 413 || string(x.Body) != "big!" {
			t.Fatalf("early response: %v %d %q", x.Err, x.Status, x.Body)
		}
		next := do(t, l, c, get(tg, "/", true))
		if next.Err != nil || next.Status != 200 || string(next.Body) != "ok" || next.Reused {
			t.Errorf("the next request: %v %d %q reused %v, want 200 on a fresh connection", next.Err, next.Status, next.Body, next.Reused)
		}
	})
}

// TestEarlyResponseRequestBytesReused: the handler of an early response
// reuses its request's bytes at once (as a VU builds its next request in
// the same buffer) and sends the next request elsewhere. No engine may go
// on writing the old request from those bytes: the server, reading the
// rest of the body after answering, must never see the new ones.
func TestEarlyResponseRequestBytesReused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine Engine) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		saw := make(chan string, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) == 2 {
					break
				}
			}
			io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
			time.Sleep(200 * time.Millisecond) // the handler has rewritten the bytes by now
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			rest, _ := io.ReadAll(r)
			if i := bytes.IndexByte(rest, 'Z'); i >= 0 {
				saw <- fmt.Sprintf("new bytes at %d of the %d read after the answer", i, len(rest))
				return
			}
			saw <- ""
		}()
		l := startLoop(t, Options{Timeout: 3 * time.Second, Engine: engine})
		tg := target(t, "http://"+ln.Addr().String()+"/")
		r := Request{Method: "POST", Target: "/", Host: tg.Host, Body: bytes.Repeat([]byte("x"), 32<<20)}
		x := &Exchange{Request: r.Append(nil)}
		done := make(chan struct{})
		l.Post(func() {
			l.NewConn(tg).Do(x, handlerFunc(func(*Conn, *Exchange) {
				for i := range x.Request {
					x.Request[i] = 'Z'
				}
				close(done)
			}))
		})
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		if x.Status != 413 {
			t.Fatalf("status %d (%v)", x.Status, x.Err)
		}
		select {
		case msg := <-saw:
			if msg != "" {
				t.Error(msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not finish reading")
		}
	})
}
