package runner

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// wsFrame reads one masked client frame.
func wsReadFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var l [2]byte
		_, _ = io.ReadFull(br, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, _ = io.ReadFull(br, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	var m [4]byte
	_, _ = io.ReadFull(br, m[:])
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return 0, nil, err
	}
	for i := range p {
		p[i] ^= m[i&3]
	}
	return h[0] & 0x0F, p, nil
}

func wsWriteFrame(w io.Writer, op byte, p []byte) error {
	b := []byte{0x80 | op}
	if len(p) < 126 {
		b = append(b, byte(len(p)))
	} else {
		b = append(b, 126, byte(len(p)>>8), byte(len(p)))
	}
	_, err := w.Write(append(b, p...))
	return err
}

// wsShop serves /cable: a WebSocket that needs the session cookie /login
// sets, greets with a token and answers each message with its echo; and
// /use?token=T, which is 200 only with a token the socket gave and the
// cookie its 101 answer set.
func wsShop(t *testing.T) string { return wsShopOn(t, false) }

func wsShopOn(t *testing.T, overTLS bool) string {
	var mu sync.Mutex
	seen := map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3", Path: "/"})
	})
	mux.HandleFunc("/use", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if c, err := r.Cookie("cabled"); err != nil || c.Value != "1" || !seen[r.URL.Query().Get("token")] {
			w.WriteHeader(403)
		}
	})
	n := 0
	mux.HandleFunc("/cable", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err != nil || c.Value != "s3" || r.Header.Get("X-App") != "loadlab" {
			w.WriteHeader(401)
			return
		}
		key := r.Header.Get("Sec-WebSocket-Key")
		sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSet-Cookie: cabled=1; Path=/\r\n\r\n", base64.StdEncoding.EncodeToString(sum[:]))
		mu.Lock()
		n++
		tok := fmt.Sprintf("t%d", n)
		seen[tok] = true
		mu.Unlock()
		_ = wsWriteFrame(brw, 1, []byte(`{"type":"welcome","token":"`+tok+`"}`))
		_ = brw.Flush()
		for {
			op, p, err := wsReadFrame(brw.Reader)
			if err != nil {
				return
			}
			if op == 8 {
				_ = wsWriteFrame(brw, 8, p)
				_ = brw.Flush()
				return
			}
			if op == 2 { // a heartbeat first, as ActionCable's, which skip: passes over
				_ = wsWriteFrame(brw, 1, []byte(`{"type":"ping"}`))
				p = []byte(fmt.Sprintf("binary %d bytes", len(p)))
			}
			_ = wsWriteFrame(brw, 1, []byte(`{"echo":"`+string(p)+`"}`))
			_ = brw.Flush()
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	if overTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestWSOverTLS: a wss:// step opens its socket over TLS (here a
// self-signed server, with http.insecure), with the cookie an HTTPS step set.
func TestWSOverTLS(t *testing.T) {
	base := wsShopOn(t, true)
	p, err := plan.Parse("ws.yaml", []byte(`
target: `+base+`
http: { insecure: true }
scenarios:
  s:
    steps:
      - get: /login
      - ws: wss://`+strings.TrimPrefix(base, "https://")+`/cable
        name: cable
        headers: { X-App: loadlab }
        do:
          - receive: { timeout: 2s, expect: { contains: welcome } }
          - send: over tls
          - receive: { expect: { contains: 'echo":"over tls' } }
load: { closed: { vus: 2, iterations: 3 } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Plan(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s := stepOf(t, res, "cable").Summary; s.Requests != 12 || s.Errors.Total != 0 || s.Checks.Failed != 0 {
		t.Fatalf("cable: %d messages, errors %+v, checks %+v, handshake %+v", s.Requests, s.Errors, s.Checks, stepOf(t, res, "cable handshake").Summary.Errors)
	}
}

func stepOf(t *testing.T, res *result.Result, name string) result.Step {
	t.Helper()
	var names []string
	for _, s := range res.Steps {
		if s.Name == name {
			return s
		}
		names = append(names, s.Name)
	}
	t.Fatalf("no step %q in %q", name, names)
	return result.Step{}
}

const wsPlan = `
name: ws
target: %s
http: { headers: { X-App: loadlab } }
scenarios:
  chat:
    steps:
      - get: /login
      - ws: /cable
        name: cable
        do:
          - receive: { timeout: 2s, expect: { json: { $.type: welcome } }, capture: { token: { json: $.token } } }
          - send: 'hi {{ vu }}'
          - receive: { expect: { contains: 'hi {{ vu }}' } }
          - binary: aGVsbG8=
          - receive: { expect: { contains: binary 5 bytes }, skip: "\"type\":\"ping\"" }
          - think: 1ms
          - close: {}
      - get: /use
        query: { token: '{{ token }}' }
        expect: { status: 200 }
load: %s
thresholds:
  - p95(latency, step=cable) < 1s
`

// TestWSJourney: a ws step opens its socket with the VU's cookies and the
// plan's headers, checks and captures messages, and a later HTTP step uses
// what it captured; closed and open load alike.
func TestWSJourney(t *testing.T) {
	for _, load := range []string{"{ closed: { vus: 3, iterations: 5 } }", "{ open: { rate: 50/s, duration: 500ms, max_vus: 10 } }"} {
		t.Run(load, func(t *testing.T) {
			p, err := plan.Parse("ws.yaml", []byte(fmt.Sprintf(wsPlan, wsShop(t), load)), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Plan(context.Background(), p, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			it := res.Summary.Iterations
			if it == 0 || res.Summary.Aborted != 0 {
				t.Fatalf("iterations %d aborted %d", it, res.Summary.Aborted)
			}
			msgs, hs, send, use := stepOf(t, res, "cable"), stepOf(t, res, "cable handshake"), stepOf(t, res, "cable send"), stepOf(t, res, "GET /use")
			if hs.Summary.Requests != it || hs.Summary.Errors.Total != 0 || res.Summary.Connect == nil {
				t.Errorf("handshake %+v", hs.Summary)
			}
			if msgs.Summary.Requests != 3*it || send.Summary.Requests != 2*it || msgs.Summary.Errors.Total != 0 {
				t.Errorf("messages %d received, %d sent, errors %+v", msgs.Summary.Requests, send.Summary.Requests, msgs.Summary.Errors)
			}
			if c := msgs.Summary.Checks; c.Failed != 0 || c.Passed != 4*it { // three checks and a capture
				t.Errorf("message checks %+v %+v", c, msgs.FailedCheck)
			}
			// The receives' checks share the step's list, each from its own
			// base: named one by one, in the plan's order.
			wantNamed := fmt.Sprint([]result.NamedCheck{{Name: "json $.type", Passed: it}, {Name: "capture token", Passed: it},
				{Name: "body contains hi {{ vu }}", Passed: it}, {Name: "body contains binary 5 bytes", Passed: it}})
			if got := fmt.Sprint(msgs.ChecksByName); got != wantNamed {
				t.Errorf("message checks by name %s, want %s", got, wantNamed)
			}
			if got, want := fmt.Sprint(hs.ChecksByName), fmt.Sprint([]result.NamedCheck{{Name: "the socket could be opened"}}); got != want {
				t.Errorf("handshake checks by name %s, want %s", got, want)
			}
			if use.Summary.Errors.Total != 0 || use.Summary.Checks.Failed != 0 {
				t.Errorf("the captured token did not reach the HTTP step: %+v %+v", use.Summary, use.FailedCheck)
			}
			if len(res.Thresholds) == 0 || !res.Thresholds[0].Pass {
				t.Errorf("thresholds %+v", res.Thresholds)
			}
		})
	}
}

// TestWSErrorsByClass: a refused handshake counts by its status, a server
// that never answers as a timeout, and the run goes on.
func TestWSErrorsByClass(t *testing.T) {
	base := wsShop(t)
	p, err := plan.Parse("ws.yaml", []byte(`
target: `+base+`
scenarios:
  s:
    steps:
      - ws: /cable
        name: refused
        do: [{ send: x }]
      - get: /login
      - ws: /cable
        name: silent
        headers: { X-App: loadlab }
        do:
          - receive: { timeout: 2s }
          - receive: { timeout: 100ms }
load: { closed: { vus: 2, iterations: 2 } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Plan(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s := stepOf(t, res, "refused handshake").Summary; s.Errors.Status4xx != 4 {
		t.Errorf("refused: %+v", s.Errors)
	}
	if s := stepOf(t, res, "silent").Summary; s.Errors.Timeout != 4 || s.Requests != 8 {
		t.Errorf("silent: %d requests, %+v", s.Requests, s.Errors)
	}
}

// TestWSPythonWebsockets runs a ws journey against a real server: Python's
// websockets (Debian's python3-websockets), echoing.
func TestWSPythonWebsockets(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Python server")
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import websockets").Run(); err != nil {
		t.Skip("no python3-websockets (scripts/test-deps installs it)")
	}
	script := filepath.Join(t.TempDir(), "echo.py")
	os.WriteFile(script, []byte(`
import asyncio, sys, websockets
async def echo(ws, path=None):
    async for m in ws:
        await ws.send("echo " + m)
async def main():
    async with websockets.serve(echo, "127.0.0.1", 0, max_size=1<<20) as srv:
        print(srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()
asyncio.run(main())
`), 0o644)
	cmd := exec.Command(py, script)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("ws.yaml", []byte(`
scenarios:
  s:
    steps:
      - ws: ws://127.0.0.1:`+strings.TrimSpace(port)+`/
        name: echo
        do:
          - send: 'hello {{ vu }}'
          - receive: { timeout: 2s, expect: { contains: 'echo hello {{ vu }}' } }
          - send: '{"n": {{ iteration }}}'
          - receive: { expect: { contains: 'echo {"n"' } }
          - close: {}
load: { closed: { vus: 4, iterations: 25 } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := Plan(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := stepOf(t, res, "echo").Summary
	if s.Requests != 200 || s.Errors.Total != 0 || s.Checks.Failed != 0 || s.Checks.Passed != 200 {
		t.Fatalf("echo: %d messages, errors %+v, checks %+v", s.Requests, s.Errors, s.Checks)
	}
	t.Logf("100 sockets, 200 round trips in %v: p50 %.3f ms p99 %.3f ms; handshake p50 %.3f ms", time.Since(start), s.Latency.P50, s.Latency.P99, stepOf(t, res, "echo handshake").Summary.Latency.P50)
}
