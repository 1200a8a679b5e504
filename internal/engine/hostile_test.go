package engine

import (
	"bytes"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
)

// hostile serves every connection with serve, on a real loopback socket.
func hostile(t *testing.T, serve func(c *net.TCPConn)) string {
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
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Read(buf); err != nil {
					return
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				serve(c.(*net.TCPConn))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func endless(c *net.TCPConn, head string, unit string) {
	io.WriteString(c, head)
	chunk := []byte(strings.Repeat(unit, 4096/len(unit)))
	for {
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
}

// TestHostileServers: a broken or hostile server costs a counted error under
// the timeout or a size cap, never a hang or unbounded memory.
func TestHostileServers(t *testing.T) {
	tests := []struct {
		name  string
		serve func(c *net.TCPConn)
		class httpx.Failure
	}{
		{"endless body", func(c *net.TCPConn) {
			endless(c, "HTTP/1.1 200 OK\r\n\r\n", "body")
		}, httpx.FailureProtocol},
		{"endless chunked body", func(c *net.TCPConn) {
			endless(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "4\r\nbody\r\n")
		}, httpx.FailureProtocol},
		{"huge content length", func(c *net.TCPConn) {
			endless(c, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", "body")
		}, httpx.FailureProtocol},
		{"endless headers", func(c *net.TCPConn) {
			endless(c, "HTTP/1.1 200 OK\r\n", "X-Hostile: aaaaaaaaaaaaaaaaaaaa\r\n")
		}, httpx.FailureProtocol},
		{"one byte a second", func(c *net.TCPConn) {
			for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") {
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(time.Second)
			}
		}, httpx.FailureTimeout},
		{"reset mid-response", func(c *net.TCPConn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
			time.Sleep(20 * time.Millisecond)
			c.SetLinger(0) // close with a RST
		}, httpx.FailureReset},
		{"garbage", func(c *net.TCPConn) {
			io.WriteString(c, "SSH-2.0-OpenSSH_9.2p1\r\n")
		}, httpx.FailureProtocol},
		{"silence", func(c *net.TCPConn) {
			time.Sleep(3 * time.Second)
		}, httpx.FailureTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := hostile(t, tt.serve)
			// A size cap must end the exchange, not the timeout: where the
			// cap is the point, the timeout is long enough that a busy
			// machine cannot reach it first.
			timeout, limit := 400*time.Millisecond, 3*time.Second
			if tt.class == httpx.FailureProtocol {
				timeout, limit = 5*time.Second, 8*time.Second
			}
			start := time.Now()
			out, err := Run(context.Background(), Config{
				Program:  quick(t, url),
				Workload: Workload{Kind: Closed, VUs: 3, SharedIterations: 9},
				HTTP:     httpx.Options{Timeout: timeout, MaxBodyBytes: 1 << 20, MaxHeaderBytes: 16 << 10},
			})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > limit {
				t.Errorf("took %v", took)
			}
			st := &out.Totals.Steps[0]
			if st.Count[metrics.ClassFailed]+st.Count[metrics.ClassTimeout] != 9 || st.Failures[tt.class] != 9 {
				t.Errorf("failures %v (by class %v), want 9 of class %v", st.Count, st.Failures, tt.class)
			}
			if s := metrics.RunSummary(out.Totals, out.Elapsed); s.ThroughputRPS != 0 || s.Requests != 9 {
				t.Errorf("%d requests, none answered, yet throughput %v/s", s.Requests, s.ThroughputRPS)
			}
			if st.Example[tt.class] == "" {
				t.Errorf("no message kept to say why the %v failures happened", tt.class)
			} else {
				t.Logf("%v: %s", tt.class, st.Example[tt.class])
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > 100<<20 {
				t.Errorf("heap %d MiB after the run", m.HeapAlloc>>20)
			}
		})
	}
}

// hostileH2 serves every connection with serve after the client's preface,
// as an HTTP/2 server would start: its SETTINGS, then whatever serve does.
// The client's frames are read and dropped meanwhile, so that only what
// serve sends is hostile (not a server that stops reading). streams gives
// serve the stream of each request as it comes.
func hostileH2(t *testing.T, serve func(fr *http2.Framer, streams <-chan uint32)) string {
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
				var wmu sync.Mutex
				fr := http2.NewFramer(lockedWriter{&wmu, c}, c)
				fr.WriteSettings()
				streams := make(chan uint32, 100)
				go func() {
					defer close(streams)
					for {
						f, err := fr.ReadFrame()
						if err != nil {
							return
						}
						if h, ok := f.(*http2.HeadersFrame); ok {
							select {
							case streams <- h.StreamID:
							default:
							}
						}
					}
				}()
				serve(fr, streams)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func hpackBlock(fields ...string) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return buf.Bytes()
}

// TestHostileH2Servers: a hostile HTTP/2 server (endless frames, a huge
// header block, a flood of pings, a frame larger than allowed, streams
// reset, GOAWAY on every connection) costs counted errors of their class
// under the caps, never a hang or unbounded memory.
func TestHostileH2Servers(t *testing.T) {
	tests := []struct {
		name  string
		serve func(fr *http2.Framer, streams <-chan uint32)
		class httpx.Failure
		keep  bool // the header block kept (checks, captures): the header cap applies to its decoded fields
	}{
		{"endless data", func(fr *http2.Framer, streams <-chan uint32) {
			chunk := bytes.Repeat([]byte("d"), 16384)
			for id := range streams {
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hpackBlock(":status", "200"), EndHeaders: true})
				for range 200 { // 3 MiB, over the 1 MiB cap; the client's windows allow it
					if fr.WriteData(id, false, chunk) != nil {
						return
					}
				}
			}
		}, httpx.FailureProtocol, false},
		{"huge header block", func(fr *http2.Framer, streams <-chan uint32) {
			frag := bytes.Repeat([]byte{0x40, 0x01, 'x', 0x7f, 0x7f}, 3000) // literal fields, never ending
			for id := range streams {
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hpackBlock(":status", "200")})
				for {
					if fr.WriteContinuation(id, false, frag) != nil {
						return
					}
				}
			}
		}, httpx.FailureProtocol, false},
		{"endless header fields", func(fr *http2.Framer, streams <-chan uint32) {
			// One header block, under the frame size, whose fields decode to
			// far more than the 16 KiB header cap (the dynamic table repeats them).
			var fields []string
			fields = append(fields, ":status", "200", "x-big", strings.Repeat("v", 4000))
			for range 2000 {
				fields = append(fields, "x-big", strings.Repeat("v", 4000))
			}
			for id := range streams {
				block := hpackBlock(fields...)
				first := true
				for len(block) > 0 {
					n := min(len(block), 16384)
					if first {
						fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:n], EndHeaders: n == len(block), EndStream: n == len(block)})
						first = false
					} else {
						fr.WriteContinuation(id, n == len(block), block[:n])
					}
					block = block[n:]
				}
			}
		}, httpx.FailureProtocol, true},
		{"ping flood", func(fr *http2.Framer, streams <-chan uint32) {
			for {
				if fr.WritePing(false, [8]byte{1}) != nil {
					return
				}
			}
		}, httpx.FailureProtocol, false},
		{"frame larger than allowed", func(fr *http2.Framer, streams <-chan uint32) {
			id := <-streams
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hpackBlock(":status", "200"), EndHeaders: true})
			fr.WriteRawFrame(http2.FrameData, 0, id, make([]byte, 1<<20)) // the client allows 16 KiB
			time.Sleep(time.Second)
		}, httpx.FailureProtocol, false},
		{"every stream reset", func(fr *http2.Framer, streams <-chan uint32) {
			for id := range streams {
				fr.WriteRSTStream(id, http2.ErrCodeInternal)
			}
		}, httpx.FailureStream, false},
		{"goaway on every connection", func(fr *http2.Framer, streams <-chan uint32) {
			<-streams
			fr.WriteGoAway(0, http2.ErrCodeNo, nil)
			time.Sleep(100 * time.Millisecond)
		}, httpx.FailureGoaway, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := hostileH2(t, tt.serve)
			prog := quick(t, url)
			prog.Scenarios[0].Steps[0].Request.Target.UseHTTP2(3)
			prog.Scenarios[0].Steps[0].Request.Keep = tt.keep
			start := time.Now()
			out, err := Run(context.Background(), Config{
				Program:  prog,
				Workload: Workload{Kind: Closed, VUs: 3, SharedIterations: 9},
				HTTP:     httpx.Options{Timeout: 5 * time.Second, MaxBodyBytes: 1 << 20, MaxHeaderBytes: 16 << 10},
			})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 8*time.Second {
				t.Errorf("took %v", took)
			}
			st := &out.Totals.Steps[0]
			if st.Count[metrics.ClassFailed] != 9 || st.Failures[tt.class] != 9 {
				t.Errorf("failures %v (by class %v), want 9 of class %v", st.Count, st.Failures, tt.class)
			}
			if st.Example[tt.class] == "" {
				t.Errorf("no message kept to say why the %v failures happened", tt.class)
			} else {
				t.Logf("%v: %s", tt.class, st.Example[tt.class])
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > 100<<20 {
				t.Errorf("heap %d MiB after the run", m.HeapAlloc>>20)
			}
		})
	}
}
