package httpx

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// handlerFunc adapts a function to Handler.
type handlerFunc func(c *Conn, x *Exchange)

func (f handlerFunc) Done(c *Conn, x *Exchange) { f(c, x) }

// startLoop runs a loop for the test and stops it at the end.
func startLoop(t *testing.T, opts Options) *Loop {
	t.Helper()
	l, err := NewLoop(time.Now(), opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Run() }()
	t.Cleanup(func() {
		l.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return l
}

func target(t *testing.T, rawURL string) *Target {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := ResolveTarget(context.Background(), u, false)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// do runs one exchange on c from the test goroutine.
func do(t *testing.T, l *Loop, c *Conn, x *Exchange) *Exchange {
	t.Helper()
	done := make(chan struct{})
	l.Post(func() { c.Do(x, handlerFunc(func(*Conn, *Exchange) { close(done) })) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("exchange did not finish in 10s")
	}
	return x
}

func get(tg *Target, path string, keep bool) *Exchange {
	r := Request{Method: "GET", Target: path, Host: tg.Host}
	return &Exchange{Request: r.Append(nil), Keep: keep, Idempotent: true}
}

func TestLoopKeepAlive(t *testing.T) {
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns++
		}
	}
	srv.Start()
	defer srv.Close()
	l := startLoop(t, Options{})
	tg := target(t, srv.URL)
	c := l.NewConn(tg)
	for i, path := range []string{"/a", "/b", "/c"} {
		x := do(t, l, c, get(tg, path, true))
		if x.Err != nil {
			t.Fatalf("%s: %v", path, x.Err)
		}
		if x.Status != 200 || string(x.Body) != "hello "+path || !strings.Contains(string(x.Header), "X-Path: "+path) {
			t.Fatalf("%s: got %d %q %q", path, x.Status, x.Header, x.Body)
		}
		if x.Reused != (i > 0) || (x.ConnectEnd == 0) != (i > 0) {
			t.Errorf("%s: reused %v connect %v", path, x.Reused, x.ConnectTime())
		}
		if !(x.Start <= x.Sent && x.Sent <= x.FirstByte && x.FirstByte <= x.End) {
			t.Errorf("%s: times out of order: %+v", path, x)
		}
	}
	if conns != 1 {
		t.Errorf("opened %d connections, want 1", conns)
	}
}

func TestLoopFailures(t *testing.T) {
	// A listener that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	// A port nobody listens on.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := closed.Addr().String()
	closed.Close()

	l := startLoop(t, Options{Timeout: 300 * time.Millisecond})
	tests := []struct {
		name  string
		url   string
		class Class
		want  string
	}{
		{"refused", "http://" + refused + "/", ClassConnect, "connection refused"},
		{"timeout", "http://" + silent.Addr().String() + "/", ClassTimeout, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := target(t, tt.url)
			x := do(t, l, l.NewConn(tg), get(tg, "/", false))
			if x.Class != tt.class || x.Err == nil || !strings.Contains(x.Err.Error(), tt.want) {
				t.Fatalf("class %v err %v, want %v %q", x.Class, x.Err, tt.class, tt.want)
			}
			if tt.class == ClassTimeout {
				if took := x.End - x.Start; took < 300*time.Millisecond || took > 600*time.Millisecond {
					t.Errorf("timed out after %v, want 300ms to 600ms", took)
				}
			}
		})
	}
}

func TestLoopTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("z", 100000))
	}))
	defer srv.Close()
	l := startLoop(t, Options{Timeout: 5 * time.Second})

	t.Run("unknown authority fails", func(t *testing.T) {
		tg := target(t, srv.URL)
		x := do(t, l, l.NewConn(tg), get(tg, "/", false))
		if x.Class != ClassTLS || !strings.Contains(x.Err.Error(), "certificate") {
			t.Fatalf("class %v err %v, want a certificate error", x.Class, x.Err)
		}
	})
	t.Run("trusted", func(t *testing.T) {
		tg := target(t, srv.URL)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		tg.TLS.RootCAs = pool
		tg.TLS.ServerName = "example.com" // httptest's certificate names example.com and 127.0.0.1
		c := l.NewConn(tg)
		for i := range 3 {
			x := do(t, l, c, get(tg, "/", true))
			if x.Err != nil || x.Status != 200 || len(x.Body) != 100000 {
				t.Fatalf("exchange %d: %v %d %d bytes", i, x.Err, x.Status, len(x.Body))
			}
			if x.Reused != (i > 0) {
				t.Errorf("exchange %d: reused = %v", i, x.Reused)
			}
		}
	})
}

func TestLoopStaleKeepAliveIsRetried(t *testing.T) {
	// A server that closes every connection right after its first response,
	// without saying so: the second request finds the connection dead.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				c.Read(buf)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				time.Sleep(50 * time.Millisecond)
				c.Close()
			}()
		}
	}()
	l := startLoop(t, Options{Timeout: 2 * time.Second})
	tg := target(t, "http://"+ln.Addr().String())
	c := l.NewConn(tg)
	do(t, l, c, get(tg, "/", false))
	time.Sleep(100 * time.Millisecond)
	x := do(t, l, c, get(tg, "/", false))
	if x.Err != nil || x.Status != 200 {
		t.Fatalf("second request: %v %d", x.Err, x.Status)
	}
}

// TestConnectFailsFromTheLoop: a connect that fails at once (here a socket
// of an address family the kernel refuses; in life, no file descriptor
// left) is reported from the loop, not from inside Do. A handler that
// retries at once, as a VU in a closed load does, must not recurse without
// end: before, 30,000 connections over the open-file limit overflowed the
// stack.
func TestConnectFailsFromTheLoop(t *testing.T) {
	l := startLoop(t, Options{Timeout: time.Second})
	tg := target(t, "http://127.0.0.1:1/")
	tg.family = -1 // socket() fails: EAFNOSUPPORT
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
		if x.Class != ClassConnect {
			t.Errorf("class %v (%v), want a connect failure", x.Class, x.Err)
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
