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
	"sync/atomic"
	"testing"
	"time"
)

// handlerFunc adapts a function to Handler.
type handlerFunc func(c *Conn, x *Exchange)

func (f handlerFunc) Done(c *Conn, x *Exchange) { f(c, x) }

// forEachEngine runs test on every engine this platform has, each as a
// subtest named for it.
func forEachEngine(t *testing.T, test func(t *testing.T, engine Engine)) {
	for _, e := range platformEngines {
		t.Run(e.String(), func(t *testing.T) { test(t, e) })
	}
}

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

func target(t *testing.T, rawURL string) *Origin {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := ResolveOrigin(context.Background(), u, false)
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

func get(tg *Origin, path string, keep bool) *Exchange {
	r := Request{Method: "GET", Target: path, Host: tg.Host}
	return &Exchange{Request: r.Append(nil), Keep: keep, Idempotent: true}
}

func TestLoopKeepAlive(t *testing.T) { forEachEngine(t, testLoopKeepAlive) }

func testLoopKeepAlive(t *testing.T, engine Engine) {
	var conns atomic.Int32 // counted on the server's goroutines
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	l := startLoop(t, Options{Engine: engine})
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
	if n := conns.Load(); n != 1 {
		t.Errorf("opened %d connections, want 1", n)
	}
}

func TestLoopFailures(t *testing.T) { forEachEngine(t, testLoopFailures) }

func testLoopFailures(t *testing.T, engine Engine) {
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

	l := startLoop(t, Options{Timeout: 300 * time.Millisecond, Engine: engine})
	tests := []struct {
		name  string
		url   string
		class Failure
		want  string
	}{
		{"refused", "http://" + refused + "/", FailureConnect, "connection refused"},
		{"timeout", "http://" + silent.Addr().String() + "/", FailureTimeout, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := target(t, tt.url)
			x := do(t, l, l.NewConn(tg), get(tg, "/", false))
			if x.Failure != tt.class || x.Err == nil || !strings.Contains(x.Err.Error(), tt.want) {
				t.Fatalf("class %v err %v, want %v %q", x.Failure, x.Err, tt.class, tt.want)
			}
			if tt.class == FailureTimeout {
				if took := x.End - x.Start; took < 300*time.Millisecond || took > 600*time.Millisecond {
					t.Errorf("timed out after %v, want 300ms to 600ms", took)
				}
			}
		})
	}
}

func TestLoopTLS(t *testing.T) { forEachEngine(t, testLoopTLS) }

func testLoopTLS(t *testing.T, engine Engine) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("z", 100000))
	}))
	defer srv.Close()
	l := startLoop(t, Options{Timeout: 5 * time.Second, Engine: engine})

	t.Run("unknown authority fails", func(t *testing.T) {
		tg := target(t, srv.URL)
		x := do(t, l, l.NewConn(tg), get(tg, "/", false))
		if x.Failure != FailureTLS || !strings.Contains(x.Err.Error(), "certificate") {
			t.Fatalf("class %v err %v, want a certificate error", x.Failure, x.Err)
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
	forEachEngine(t, testLoopStaleKeepAliveIsRetried)
}

func testLoopStaleKeepAliveIsRetried(t *testing.T, engine Engine) {
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
	l := startLoop(t, Options{Timeout: 2 * time.Second, Engine: engine})
	tg := target(t, "http://"+ln.Addr().String())
	c := l.NewConn(tg)
	do(t, l, c, get(tg, "/", false))
	time.Sleep(100 * time.Millisecond)
	x := do(t, l, c, get(tg, "/", false))
	if x.Err != nil || x.Status != 200 {
		t.Fatalf("second request: %v %d", x.Err, x.Status)
	}
}
