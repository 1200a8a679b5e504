package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// h2Target is Go's net/http server speaking HTTP/2 only (h2 over TLS, or
// h2c with prior knowledge); it counts connections and HTTP/2 requests.
func h2Target(t *testing.T, tlsOn bool) (url string, conns, h2 *atomic.Int64) {
	conns, h2 = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		}
		w.Header().Set("X-Proto", r.Proto)
		io.WriteString(w, "hello over "+r.Proto)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	var p http.Protocols
	if tlsOn {
		p.SetHTTP2(true)
		srv.Config.Protocols = &p
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		p.SetUnencryptedHTTP2(true)
		srv.Config.Protocols = &p
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv.URL, conns, h2
}

// TestHTTP2Quick: --http2 with --streams over h2 and h2c; the summary and
// result.json say the protocol, every request went as HTTP/2, and -c
// connections carried them.
func TestHTTP2Quick(t *testing.T) {
	for _, tlsOn := range []bool{true, false} {
		proto := map[bool]string{true: "h2", false: "h2c"}[tlsOn]
		t.Run(proto, func(t *testing.T) {
			url, conns, h2 := h2Target(t, tlsOn)
			out := t.TempDir()
			stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "--http2", "-c", "2", "--streams", "4", "-n", "400", "--insecure", "--out", out, "--no-history")
			if code != 0 {
				t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
			}
			if !strings.Contains(stdout, "protocol    "+proto+" (4 streams a connection)") || !strings.Contains(stdout, "400 requests") {
				t.Errorf("summary does not say %s with 4 streams, or not 400 requests:\n%s", proto, stdout)
			}
			if n := h2.Load(); n != 400 {
				t.Errorf("the server saw %d HTTP/2 requests, want 400", n)
			}
			// One per connection, and the two preflights (TCP, then h2).
			if n := conns.Load(); n < 2 || n > 4 {
				t.Errorf("the server saw %d connections, want 2 (and the preflight's)", n)
			}
			b, err := os.ReadFile(filepath.Join(out, "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			var res result.Result
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if res.Summary.Protocol != proto || len(res.Steps) != 1 || res.Steps[0].Summary.Protocol != proto || res.Settings.Streams != 4 {
				t.Errorf("result.json: protocol %q, steps %+v, streams %d", res.Summary.Protocol, res.Steps, res.Settings.Streams)
			}
			stdout, _, code = cli(context.Background(), t, "run", "--url", url+"/", "--http2", "-n", "20", "--insecure", "--json", "--no-history")
			var s result.Summary
			if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Protocol != proto || s.Requests != 20 || s.Errors.Total != 0 {
				t.Errorf("--json: exit %d, %v, %+v", code, err, s)
			}
		})
	}
}

// TestHTTP2Plan: http.version: 2 in a plan; a VU's requests share its
// connection, checks read the HTTP/2 response.
func TestHTTP2Plan(t *testing.T) {
	url, conns, h2 := h2Target(t, false)
	plan := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
http: { version: 2 }
steps:
  - get: /a
    expect: { status: 200, contains: "hello over HTTP/2.0", headers: { x-proto: HTTP/2.0 } }
  - get: /b
    expect: { status: 200 }
load:
  closed: { vus: 3, iterations: 10 }
`, url)})
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--no-history")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stdout, "protocol    h2c") || !strings.Contains(stdout, "60 requests") || !strings.Contains(stdout, "no errors") {
		t.Errorf("summary:\n%s", stdout)
	}
	if n := h2.Load(); n != 60 {
		t.Errorf("%d HTTP/2 requests, want 60", n)
	}
	if n := conns.Load(); n > 5 {
		t.Errorf("%d connections for 3 VUs (and the two preflights), want one each", n)
	}
}

// TestHTTP2BadInput: bad HTTP/2 input is one clear line, exit 2, no load.
func TestHTTP2BadInput(t *testing.T) {
	url, conns, _ := h2Target(t, false)
	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer h1.Close()
	planOf := func(http string) string {
		return writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("target: %s\nhttp: %s\nsteps:\n  - get: /\nload:\n  closed: { vus: 1, iterations: 1 }\n", url, http)})
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero streams", []string{"run", "--url", url + "/", "--http2", "--streams", "0"}, 2, "run: --streams must be positive, got 0"},
		{"streams without http2", []string{"run", "--url", url + "/", "--streams", "8"}, 2, "run: --streams is for HTTP/2: add --http2"},
		{"http2 without keep-alive", []string{"run", "--url", url + "/", "--http2", "--no-keepalive"}, 2, "--no-keepalive does not go with --http2"},
		{"http2 with a plan", []string{"run", planOf("{}"), "--http2"}, 2, "run: --http2 is for quick mode (--url); for a plan, set http.version: 2"},
		{"bad version", []string{"run", planOf("{ version: 3 }")}, 2, `plan.yaml:2:18: http.version must be 1.1 or 2, got "3"`},
		{"version 2 without keep-alive", []string{"run", planOf("{ version: 2, keepalive: false }")}, 2, "plan.yaml:2:32: http.keepalive: false does not go with http.version: 2"},
		{"h1-only server", []string{"run", "--url", h1.URL + "/", "--http2", "-n", "5"}, 1, "does not speak cleartext HTTP/2 with prior knowledge (h2c)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cli(context.Background(), t, append(tt.args, "--no-history")...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("bad input opened %d connections", n)
	}
}
