package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
	t.Parallel()
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
	t.Parallel()
	url, conns, h2 := h2Target(t, false)
	plan := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
http: { version: 2 }
steps:
  - get: /a
    expect: { status: 200, contains: "hello over HTTP/2.0", headers: { X-Proto: HTTP/2.0 } }
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
	t.Parallel()
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

// TestHTTP2AgainstNginx: quick mode and a plan over h2 and h2c against
// nginx with http2, when nginx is installed (scripts/test-deps installs it).
func TestHTTP2AgainstNginx(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts nginx")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(nginx); err != nil {
		t.Skip("nginx is not installed (scripts/test-deps installs it)")
	}
	dir, err := os.MkdirTemp("", "loadlab-nginx-h2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // nginx's workers run as nobody
	for _, sub := range []string{"www", "tmp", "logs"} {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "www", "page.html"), []byte(strings.Repeat("<p>hello h2</p>\n", 2000)), 0o644)
	writeSelfSigned(t, dir)
	tlsPort, h2cPort := freePortNumber(t), freePortNumber(t)
	conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp/body; proxy_temp_path %[1]s/tmp/proxy;
  fastcgi_temp_path %[1]s/tmp/fcgi; uwsgi_temp_path %[1]s/tmp/uwsgi; scgi_temp_path %[1]s/tmp/scgi;
  gzip on; gzip_types text/html; gzip_min_length 100;
  server {
    listen 127.0.0.1:%[2]d ssl http2;
    listen 127.0.0.1:%[3]d http2;
    ssl_certificate %[1]s/cert.pem; ssl_certificate_key %[1]s/key.pem;
    root %[1]s/www;
  }
}
`, dir, tlsPort, h2cPort)
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
	cmd := exec.Command(nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM: nginx's master stops its worker, then exits. A SIGKILL
		// of the master alone left the worker running, orphaned (seen
		// after clean CI runs).
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for _, port := range []int{tlsPort, h2cPort} {
		if !waitPort(port) {
			t.Fatalf("nginx did not listen on %d: %s", port, errb.String())
		}
	}
	for _, tc := range []struct{ proto, url string }{
		{"h2", fmt.Sprintf("https://127.0.0.1:%d", tlsPort)},
		{"h2c", fmt.Sprintf("http://127.0.0.1:%d", h2cPort)},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			stdout, stderr, code := cli(context.Background(), t, "run", "--url", tc.url+"/page.html", "--http2", "-c", "3", "--streams", "8", "-n", "3000", "--insecure", "--compressed", "--no-history")
			if code != 0 || !strings.Contains(stdout, "3,000 requests") || !strings.Contains(stdout, "no errors") || !strings.Contains(stdout, "protocol    "+tc.proto) || !strings.Contains(stdout, "decoded") {
				t.Errorf("quick mode: exit %d, stderr %q\n%s", code, stderr, stdout)
			}
			plan := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
http: { version: 2, insecure: true }
steps:
  - get: /page.html
    expect: { status: 200, contains: "<p>hello h2</p>", headers: { content-encoding: gzip } }
  - get: /missing
    expect: { status: 404 }
load:
  closed: { vus: 4, iterations: 25 }
`, tc.url)})
			stdout, stderr, code = cli(context.Background(), t, "run", plan, "--no-history")
			if code != 0 || !strings.Contains(stdout, "200 requests") || !strings.Contains(stdout, "protocol    "+tc.proto) {
				t.Errorf("plan: exit %d, stderr %q\n%s", code, stderr, stdout)
			}
		})
	}
	// 5,000 streams in flight (50 connections × 100, under nginx's 128 a
	// connection): no errors, and loadlab's memory stays bounded.
	t.Run("5000 streams", func(t *testing.T) {
		out := t.TempDir()
		stdout, stderr, code := cli(context.Background(), t, "run", "--url", fmt.Sprintf("https://127.0.0.1:%d/page.html", tlsPort), "--http2", "-c", "50", "--streams", "100", "-d", "2s", "--insecure", "--out", out, "--no-history")
		if code != 0 || !strings.Contains(stdout, "no errors") {
			t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
		}
		b, err := os.ReadFile(filepath.Join(out, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		var res result.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		// The test process holds more than loadlab alone would (the test
		// binary, the runs before): bench/h2.sh measured 47 MB for the
		// command by itself.
		if g := res.Generator; g == nil || g.RSSPeak == 0 || g.RSSPeak > 200<<20 {
			t.Errorf("loadlab's peak RSS %+v, want measured and under 200 MiB", g)
		} else {
			t.Logf("peak RSS %d MiB, %d requests", g.RSSPeak>>20, res.Summary.Requests)
		}
	})
}

func freePortNumber(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitPort(port int) bool {
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// writeSelfSigned writes cert.pem and key.pem for 127.0.0.1 into dir.
func writeSelfSigned(t *testing.T, dir string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
}

// TestH2Workers: quick mode's HTTP/2 event loops divide -c evenly, so that
// -c connections carry --streams each.
func TestH2Workers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ conns, procs, want int }{
		{10, 2, 2}, {3, 2, 1}, {50, 4, 2}, {1, 8, 1}, {12, 8, 6}, {7, 8, 7},
	} {
		if got := h2Workers(tt.conns, tt.procs); got != tt.want {
			t.Errorf("h2Workers(%d, %d) = %d, want %d", tt.conns, tt.procs, got, tt.want)
		}
	}
}

// TestHTTP2ConnectionsExact: -c is the number of HTTP/2 connections even
// when it does not split evenly among the CPUs' event loops.
func TestHTTP2ConnectionsExact(t *testing.T) {
	t.Parallel()
	url, conns, h2 := h2Target(t, false)
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "--http2", "-c", "3", "--streams", "4", "-n", "120", "--no-history")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	// 3, and the two preflights' (TCP, then the h2c preface).
	if n := conns.Load(); n != 5 || h2.Load() != 120 {
		t.Errorf("%d connections (%d HTTP/2 requests), want 3 and the 2 preflights'", n, h2.Load())
	}
}

// TestHTTP2OpenLoad: --rate over HTTP/2: every arrival is sent, on -c
// connections of --streams each.
func TestHTTP2OpenLoad(t *testing.T) {
	url, conns, h2 := h2Target(t, false)
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "--http2", "--rate", "300/s", "-d", "1s", "-c", "2", "--streams", "5", "--no-history")
	if code != 0 || !strings.Contains(stdout, "300 requests") || !strings.Contains(stdout, "no errors") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if n := conns.Load(); h2.Load() != 300 || n > 4 {
		t.Errorf("%d HTTP/2 requests on %d connections, want 300 on 2 (and the 2 preflights')\n%s", h2.Load(), n, stdout)
	}
}
