package engine

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
)

// hostileWS accepts WebSocket upgrades on loopback (answering the key, or
// with head when it is set) and then serves every socket with serve.
func hostileWS(t *testing.T, head string, serve func(c net.Conn)) *httpx.Origin {
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
				br := bufio.NewReader(c)
				key := ""
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Sec-WebSocket-Key") {
						key = strings.TrimSpace(v)
					}
					if line == "\r\n" {
						break
					}
				}
				if head != "" {
					io.WriteString(c, head)
				} else {
					sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
					io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n")
				}
				go io.Copy(io.Discard, br) // pongs
				serve(c)
			}()
		}
	}()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	return &httpx.Origin{Scheme: "http", Host: ap.String(), Addr: ap}
}

func forever(c net.Conn, frame []byte) {
	chunk := []byte(strings.Repeat(string(frame), max(1, 4096/len(frame))))
	for {
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
}

// wsProgram opens a socket and reads one message from it, as a ws step's
// receive does.
func wsProgram(o *httpx.Origin, timeout time.Duration) *Program {
	lim := httpx.WSLimits{MaxHeaderBytes: 16 << 10, MaxMessage: 1 << 20}
	step := &Step{Name: "ws", Socket: &SocketStep{Run: func(*VU) func(*VU) bool {
		start := time.Now()
		c, _, err := httpx.DialWS(context.Background(), o, "/", nil, timeout, lim)
		if err == nil {
			_, _, err = c.ReadMessage(time.Now().Add(timeout))
			c.Close(100 * time.Millisecond)
		}
		took := time.Since(start)
		return func(v *VU) bool {
			class := httpx.FailureNone
			var we *httpx.WSError
			if errors.As(err, &we) {
				class = we.Class
			}
			v.Record(0, 0, class, err, took, 0, 0)
			return true
		}
	}}}
	return &Program{
		Scenarios: []*Scenario{{Name: "default", Weight: 1, Steps: []*Step{step}}},
		Steps:     []StepInfo{{Scenario: "default", Name: "ws"}},
	}
}

// TestHostileWSServers: a hostile WebSocket server costs a counted error
// under a cap or the timeout, never a hang or unbounded memory.
func TestHostileWSServers(t *testing.T) {
	tests := []struct {
		name  string
		head  string
		serve func(c net.Conn)
		class httpx.Failure
	}{
		{"endless frames", "", func(c net.Conn) {
			c.Write([]byte{0x01, 1, 'a'}) // a text message that never ends
			forever(c, []byte{0x00, 4, 'm', 'o', 'r', 'e'})
		}, httpx.FailureProtocol},
		{"frame larger than allowed", "", func(c net.Conn) {
			c.Write([]byte{0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0}) // 4 GiB
			forever(c, []byte("x"))
		}, httpx.FailureProtocol},
		{"flood of pings", "", func(c net.Conn) {
			forever(c, []byte{0x89, 1, 'p'})
		}, httpx.FailureProtocol},
		{"huge handshake header", "HTTP/1.1 101 Switching Protocols\r\nX-Huge: " + strings.Repeat("h", 1<<20) + "\r\n\r\n", func(c net.Conn) {}, httpx.FailureProtocol},
		{"silence", "", func(c net.Conn) { time.Sleep(3 * time.Second) }, httpx.FailureTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := hostileWS(t, tt.head, tt.serve)
			timeout, limit := 5*time.Second, 8*time.Second
			if tt.class == httpx.FailureTimeout {
				timeout, limit = 300*time.Millisecond, 3*time.Second
			}
			start := time.Now()
			out, err := Run(context.Background(), Config{
				Program:  wsProgram(o, timeout),
				Workload: Workload{Kind: Closed, VUs: 3, SharedIterations: 9},
			})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > limit {
				t.Errorf("took %v", took)
			}
			st := &out.Totals.Steps[0]
			if st.Failures[tt.class] != 9 {
				t.Errorf("failures by class %v, want 9 of class %v", st.Failures, tt.class)
			}
			if st.Example[tt.class] == "" {
				t.Errorf("no message kept to say why")
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
