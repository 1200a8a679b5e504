package engine

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

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
