package httpx

import (
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Server is Go's net/http server speaking HTTP/2: over TLS (h2, by ALPN)
// or cleartext with prior knowledge (h2c). It counts its connections and
// the most handlers running at once.
type h2Server struct {
	srv         *httptest.Server
	conns       atomic.Int32
	running     atomic.Int32
	mostRunning atomic.Int32
}

func newH2Server(t *testing.T, tlsOn bool, maxStreams uint32, h http.HandlerFunc) *h2Server {
	t.Helper()
	s := &h2Server{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "not HTTP/2: "+r.Proto, http.StatusHTTPVersionNotSupported)
			return
		}
		n := s.running.Add(1)
		defer s.running.Add(-1)
		for {
			m := s.mostRunning.Load()
			if n <= m || s.mostRunning.CompareAndSwap(m, n) {
				break
			}
		}
		h(w, r)
	}))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: int(maxStreams)}
	var p http.Protocols
	if tlsOn {
		p.SetHTTP2(true)
		s.srv.Config.Protocols = &p
		s.srv.EnableHTTP2 = true
		s.srv.StartTLS()
	} else {
		p.SetUnencryptedHTTP2(true)
		s.srv.Config.Protocols = &p
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *h2Server) origin(t *testing.T, streams int) *Origin {
	tg := target(t, s.srv.URL)
	if tg.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(s.srv.Certificate())
		tg.TLS.RootCAs = pool
	}
	tg.UseHTTP2(streams)
	return tg
}

// doAll runs one exchange on each conn at once and waits for them all.
func doAll(t *testing.T, l *Loop, conns []*Conn, xs []*Exchange) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(len(conns))
	l.Post(func() {
		for i, c := range conns {
			c.Do(xs[i], handlerFunc(func(_ *Conn, x *Exchange) {
				// Header and Body are valid until the handler returns.
				x.Header, x.Body = bytes.Clone(x.Header), bytes.Clone(x.Body)
				wg.Done()
			}))
		}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("exchanges did not finish in 15s")
	}
}

// TestH2AgainstNetHTTP: slots of one group share one HTTP/2 connection to
// Go's own server, over TLS and as h2c: GETs whose bodies arrive in many
// DATA frames, a POST larger than the initial flow-control window, a gzip
// body decoded, the server's concurrent-stream limit kept to.
func TestH2AgainstNetHTTP(t *testing.T) {
	for _, tlsOn := range []bool{true, false} {
		name := map[bool]string{true: "h2", false: "h2c"}[tlsOn]
		t.Run(name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e Engine) { testH2AgainstNetHTTP(t, tlsOn, e) })
		})
	}
}

func testH2AgainstNetHTTP(t *testing.T, tlsOn bool, engine Engine) {
	big := strings.Repeat("0123456789", 30_000) // 300 kB: many DATA frames, past the 64 KiB window
	srv := newH2Server(t, tlsOn, 3, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond) // so that streams overlap
		switch r.URL.Path {
		case "/big":
			w.Header().Set("X-Path", r.URL.Path)
			io.WriteString(w, big)
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %d %s %s", r.Method, len(b), r.Host, r.Header.Get("X-Mine"))
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "hello gzip")
			zw.Close()
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		}
	})
	l := startLoop(t, Options{Engine: engine})
	tg := srv.origin(t, 8)
	if want := map[bool]string{true: "h2", false: "h2c"}[tlsOn]; tg.Protocol() != want {
		t.Errorf("protocol %s, want %s", tg.Protocol(), want)
	}
	conns := make([]*Conn, 8)
	for i := range conns {
		conns[i] = l.NewConn(tg)
	}
	body := bytes.Repeat([]byte("b"), 200_000)
	for round := range 4 {
		keep := round < 3 // the last round keeps nothing, as quick mode
		xs := make([]*Exchange, len(conns))
		for i := range xs {
			switch i % 4 {
			case 0:
				xs[i] = get(tg, "/big", true)
			case 1:
				r := Request{Method: "POST", Target: "/echo", Host: tg.Host, Header: []Header{{"X-Mine", "m"}}, Body: body}
				xs[i] = &Exchange{Request: r.Append(nil), Keep: true}
			case 2:
				xs[i] = get(tg, "/gzip", true)
			case 3:
				xs[i] = get(tg, "/204", true)
			}
		}
		for _, x := range xs {
			x.Keep = keep
		}
		doAll(t, l, conns, xs)
		for i, x := range xs {
			if x.Err != nil {
				t.Fatalf("round %d exchange %d: %v (%v)", round, i, x.Err, x.Failure)
			}
			var want string
			status := 200
			if i%4 == 3 {
				status = 204
			}
			if !keep {
				if x.Status != status || x.Body != nil || (status == 200 && x.BodyBytes == 0) {
					t.Errorf("round %d exchange %d kept nothing: %d %q %d bytes", round, i, x.Status, x.Body, x.BodyBytes)
				}
				continue
			}
			switch i % 4 {
			case 0:
				want = big
				if !strings.Contains(string(x.Header), "x-path: /big\r\n") || strings.Contains(string(x.Header), "transfer-encoding") {
					t.Errorf("header block %q", x.Header)
				}
			case 1:
				want = fmt.Sprintf("POST %d %s m", len(body), tg.Host)
			case 2:
				want = "hello gzip"
				if !x.Decoded {
					t.Errorf("gzip body not decoded")
				}
			case 3:
				status = 204
			}
			if x.Status != status || string(x.Body) != want {
				t.Fatalf("round %d exchange %d: %d %q (%d bytes), want %d %.40q", round, i, x.Status, clip(x.Body), len(x.Body), status, want)
			}
			if !(x.Start <= x.Sent && x.Sent <= x.FirstByte && x.FirstByte <= x.End) {
				t.Errorf("times out of order: %+v", x)
			}
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("the server saw %d connections, want 1 for 8 streams", n)
	}
	if n := srv.mostRunning.Load(); n > 3 || n < 2 {
		t.Errorf("%d streams at once, want 2 or 3 (the server allows 3)", n)
	}
}

// TestH2Timeout: a stream that times out is reset, and the connection
// carries the next exchange.
func TestH2Timeout(t *testing.T) {
	srv := newH2Server(t, false, 0, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done(): // the stream's RST_STREAM
			case <-time.After(5 * time.Second):
			}
			return
		}
		io.WriteString(w, "quick")
	})
	l := startLoop(t, Options{Timeout: 300 * time.Millisecond})
	tg := srv.origin(t, 1)
	c := l.NewConn(tg)
	x := do(t, l, c, get(tg, "/slow", true))
	if x.Failure != FailureTimeout {
		t.Fatalf("failure %v %v, want timeout", x.Failure, x.Err)
	}
	x = do(t, l, c, get(tg, "/quick", true))
	if x.Err != nil || string(x.Body) != "quick" {
		t.Fatalf("after the timeout: %v %q", x.Err, x.Body)
	}
}

// TestH2ALPNRefused: a TLS server that does not offer h2 is a clear TLS error.
func TestH2ALPNRefused(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	l := startLoop(t, Options{})
	tg := target(t, srv.URL)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tg.TLS.RootCAs = pool
	tg.UseHTTP2(1)
	x := do(t, l, l.NewConn(tg), get(tg, "/", false))
	if x.Failure != FailureTLS || !strings.Contains(fmt.Sprint(x.Err), "does not speak HTTP/2 over TLS") {
		t.Fatalf("got %v %v, want a TLS failure saying the server does not speak HTTP/2", x.Failure, x.Err)
	}
}

// rawH2 serves each connection with serve after reading the client's
// preface and first SETTINGS; fr reads and writes frames.
func rawH2(t *testing.T, serve func(fr *http2.Framer, enc func(fields ...string) []byte)) string {
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
				c.SetDeadline(time.Now().Add(5 * time.Second))
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(c, preface); err != nil {
					return
				}
				fr := http2.NewFramer(c, c)
				fr.WriteSettings()
				var buf bytes.Buffer
				he := hpack.NewEncoder(&buf)
				enc := func(fields ...string) []byte {
					buf.Reset()
					for i := 0; i+1 < len(fields); i += 2 {
						he.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
					}
					return append([]byte(nil), buf.Bytes()...)
				}
				serve(fr, enc)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readHeaders reads frames until a HEADERS frame, and returns its stream.
func readHeaders(fr *http2.Framer) (uint32, error) {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, err
		}
		if h, ok := f.(*http2.HeadersFrame); ok {
			return h.StreamID, nil
		}
	}
}

// TestH2GoawayReconnects: a GOAWAY that leaves a stream unprocessed sends
// it again on a new connection; the exchange succeeds.
func TestH2GoawayReconnects(t *testing.T) {
	var conns atomic.Int32
	url := rawH2(t, func(fr *http2.Framer, enc func(...string) []byte) {
		n := conns.Add(1)
		id, err := readHeaders(fr)
		if err != nil {
			return
		}
		if n == 1 {
			fr.WriteGoAway(0, http2.ErrCodeNo, nil) // stream 1 not processed
			time.Sleep(50 * time.Millisecond)
			return
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc(":status", "200"), EndHeaders: true})
		fr.WriteData(id, true, []byte("second"))
		time.Sleep(100 * time.Millisecond)
	})
	l := startLoop(t, Options{Timeout: 3 * time.Second})
	tg := target(t, url)
	tg.UseHTTP2(1)
	// POST: a GOAWAY's unprocessed stream is safe to send again, whatever the method.
	r := Request{Method: "POST", Target: "/", Host: tg.Host, Body: []byte("x")}
	x := do(t, l, l.NewConn(tg), &Exchange{Request: r.Append(nil), Keep: true})
	if x.Err != nil || string(x.Body) != "second" {
		t.Fatalf("got %v %v %q, want the answer of the second connection", x.Failure, x.Err, x.Body)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestH2StreamReset: RST_STREAM fails the exchange as class stream; the
// connection carries the next one.
func TestH2StreamReset(t *testing.T) {
	url := rawH2(t, func(fr *http2.Framer, enc func(...string) []byte) {
		id, err := readHeaders(fr)
		if err != nil {
			return
		}
		fr.WriteRSTStream(id, http2.ErrCodeInternal)
		id, err = readHeaders(fr)
		if err != nil {
			return
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc(":status", "200", "content-length", "2"), EndHeaders: true})
		fr.WriteData(id, true, []byte("ok"))
		time.Sleep(100 * time.Millisecond)
	})
	l := startLoop(t, Options{Timeout: 3 * time.Second})
	tg := target(t, url)
	tg.UseHTTP2(1)
	c := l.NewConn(tg)
	x := do(t, l, c, get(tg, "/", true))
	if x.Failure != FailureStream || !strings.Contains(fmt.Sprint(x.Err), "INTERNAL_ERROR") {
		t.Fatalf("got %v %v, want a stream failure naming INTERNAL_ERROR", x.Failure, x.Err)
	}
	x = do(t, l, c, get(tg, "/", true))
	if x.Err != nil || string(x.Body) != "ok" || !strings.Contains(string(x.Header), "content-length: 2") {
		t.Fatalf("after the reset: %v %q %q", x.Err, x.Header, x.Body)
	}
}

func TestH1ToH2(t *testing.T) {
	tg := target(t, "http://127.0.0.1:8080")
	r := Request{Method: "POST", Target: "/a?b=c", Host: "vhost", Header: []Header{{"X-A", "1"}, {"Connection", "close"}, {"TE", "gzip"}}, Body: []byte("body"), Close: true}
	fields, body, err := h1ToH2(r.Append(nil), tg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.Name+"="+f.Value)
	}
	want := ":method=POST :scheme=http :authority=vhost :path=/a?b=c user-agent=loadlab/dev x-a=1 content-length=4"
	if strings.Join(got, " ") != want || string(body) != "body" {
		t.Errorf("got %s %q\nwant %s", strings.Join(got, " "), body, want)
	}
}

// TestH2ServerSettings: the server's SETTINGS are kept to: a request whose
// header list is over its MAX_HEADER_LIST_SIZE fails before it is sent, and
// a header block over its frame size goes as HEADERS and CONTINUATION.
func TestH2ServerSettings(t *testing.T) {
	var headersFrames, continuations atomic.Int32
	url := rawH2(t, func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 60_000})
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.HeadersFrame:
				headersFrames.Add(1)
				if f.HeadersEnded() {
					fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: enc(":status", "200"), EndHeaders: true, EndStream: true})
				}
			case *http2.ContinuationFrame:
				continuations.Add(1)
				if f.HeadersEnded() {
					fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: enc(":status", "200"), EndHeaders: true, EndStream: true})
				}
			}
		}
	})
	l := startLoop(t, Options{Timeout: 3 * time.Second})
	tg := target(t, url)
	tg.UseHTTP2(1)
	c := l.NewConn(tg)
	if x := do(t, l, c, get(tg, "/", false)); x.Err != nil || x.Status != 200 {
		t.Fatalf("first: %v %d", x.Err, x.Status)
	}
	// 40 kB of header, under the server's 60,000 but over a 16 KiB frame:
	// values of random-looking bytes that HPACK cannot shrink much.
	big := strings.Repeat("Zq9#x!", 40_000/6)
	r := Request{Method: "GET", Target: "/", Host: tg.Host, Header: []Header{{"X-Big", big}}}
	if x := do(t, l, c, &Exchange{Request: r.Append(nil)}); x.Err != nil || x.Status != 200 {
		t.Fatalf("big header: %v %d", x.Err, x.Status)
	}
	if n := continuations.Load(); n < 1 {
		t.Errorf("%d CONTINUATION frames for a 40 kB header block, want at least 1", n)
	}
	before := headersFrames.Load()
	r.Header[0].Value = big + big // 80 kB: over the server's limit
	x := do(t, l, c, &Exchange{Request: r.Append(nil)})
	if x.Failure != FailureProtocol || !strings.Contains(fmt.Sprint(x.Err), "over the server's limit of 60000") {
		t.Fatalf("got %v %v, want a protocol failure naming the server's limit", x.Failure, x.Err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := headersFrames.Load(); n != before {
		t.Errorf("the request over the limit was sent")
	}
	if x := do(t, l, c, get(tg, "/", false)); x.Err != nil || x.Status != 200 {
		t.Fatalf("after: %v %d", x.Err, x.Status)
	}
}

// TestH2ConnectTimedOnce: of the slots that wait for one connection to
// open, the exchange that opened it times the connect, as over HTTP/1.1.
func TestH2ConnectTimedOnce(t *testing.T) {
	srv := newH2Server(t, false, 0, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	l := startLoop(t, Options{})
	tg := srv.origin(t, 4)
	conns := make([]*Conn, 4)
	xs := make([]*Exchange, 4)
	for i := range conns {
		conns[i], xs[i] = l.NewConn(tg), get(tg, "/", false)
	}
	doAll(t, l, conns, xs)
	timed := 0
	for _, x := range xs {
		if x.Err != nil {
			t.Fatal(x.Err)
		}
		if x.ConnectTime() > 0 {
			timed++
		}
	}
	if timed != 1 {
		t.Errorf("%d exchanges timed a connect, want 1 for one connection", timed)
	}
}

// TestH2Head: a HEAD response has no body, whatever its Content-Length
// says, and the connection carries the next exchange.
func TestH2Head(t *testing.T) {
	srv := newH2Server(t, false, 0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	})
	l := startLoop(t, Options{})
	tg := srv.origin(t, 1)
	c := l.NewConn(tg)
	r := Request{Method: "HEAD", Target: "/", Host: tg.Host}
	x := do(t, l, c, &Exchange{Request: r.Append(nil), Head: true, Keep: true})
	if x.Err != nil || x.Status != 200 || x.BodyBytes != 0 {
		t.Fatalf("HEAD: %v %d %d bytes", x.Err, x.Status, x.BodyBytes)
	}
	x = do(t, l, c, get(tg, "/", true))
	if x.Err != nil || string(x.Body) != "hello" {
		t.Fatalf("GET after HEAD: %v %q", x.Err, x.Body)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestH2FlowControl: bodies larger than loadlab's stream window (1 MiB)
// and, together, its connection window (16 MiB) arrive whole: loadlab
// gives back what it read with WINDOW_UPDATE.
func TestH2FlowControl(t *testing.T) {
	body := strings.Repeat("w", 6<<20)
	srv := newH2Server(t, false, 0, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	l := startLoop(t, Options{MaxBodyBytes: 16 << 20})
	tg := srv.origin(t, 1)
	c := l.NewConn(tg)
	for i := range 4 { // 24 MiB on one connection
		x := do(t, l, c, get(tg, "/", false))
		if x.Err != nil || x.BodyBytes != int64(len(body)) {
			t.Fatalf("body %d: %v, %d bytes, want %d", i, x.Err, x.BodyBytes, len(body))
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestH2SendWindow: a request body goes no faster than the server's stream
// window (SETTINGS_INITIAL_WINDOW_SIZE) and its WINDOW_UPDATEs let it.
func TestH2SendWindow(t *testing.T) {
	var overrun atomic.Int64
	url := rawH2(t, func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
		outstanding := map[uint32]int{}
		got := map[uint32]int{}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.HeadersFrame:
				if f.StreamEnded() {
					fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: enc(":status", "200"), EndHeaders: true, EndStream: true})
				}
			case *http2.DataFrame:
				n := len(f.Data())
				outstanding[f.StreamID] += n
				got[f.StreamID] += n
				if o := outstanding[f.StreamID]; o > 1000 {
					overrun.Store(int64(o))
				}
				if outstanding[f.StreamID] == 1000 {
					fr.WriteWindowUpdate(f.StreamID, 1000)
					fr.WriteWindowUpdate(0, 1000)
					outstanding[f.StreamID] = 0
				}
				if f.StreamEnded() {
					fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: enc(":status", "200"), EndHeaders: true})
					fr.WriteData(f.StreamID, true, []byte(fmt.Sprint(got[f.StreamID])))
				}
			}
		}
	})
	l := startLoop(t, Options{Timeout: 3 * time.Second})
	tg := target(t, url)
	tg.UseHTTP2(1)
	c := l.NewConn(tg)
	if x := do(t, l, c, get(tg, "/", false)); x.Err != nil { // the server's SETTINGS are known after this
		t.Fatal(x.Err)
	}
	r := Request{Method: "POST", Target: "/", Host: tg.Host, Body: bytes.Repeat([]byte("b"), 10_000)}
	x := do(t, l, c, &Exchange{Request: r.Append(nil), Keep: true})
	if x.Err != nil || string(x.Body) != "10000" {
		t.Fatalf("POST: %v %q, want the server to have read 10000 bytes", x.Err, x.Body)
	}
	if o := overrun.Load(); o > 0 {
		t.Errorf("%d bytes sent past the server's 1000-byte window", o)
	}
}
