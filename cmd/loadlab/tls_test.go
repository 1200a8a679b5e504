package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// stagingPKI writes into dir a private CA (ca.pem), a certificate for
// staging.test and 127.0.0.1 from it (server.pem, server.key) and a client
// certificate (client.pem, client.key), and returns the CA's pool.
func stagingPKI(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "staging CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	leaf := func(serial int64, usage x509.ExtKeyUsage, name string) (certPEM, keyPEM []byte) {
		k := newKey()
		c := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: []string{name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, c, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(k)
		return pemOf("CERTIFICATE", der), pemOf("EC PRIVATE KEY", kder)
	}
	sCert, sKey := leaf(2, x509.ExtKeyUsageServerAuth, "staging.test")
	cCert, cKey := leaf(3, x509.ExtKeyUsageClientAuth, "loadlab")
	for name, data := range map[string][]byte{"ca.pem": pemOf("CERTIFICATE", caDER), "server.pem": sCert, "server.key": sKey, "client.pem": cCert, "client.key": cKey} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// stagingTLS is an HTTPS server on loopback as a staging box has one: a
// certificate for staging.test from a private CA, and client certificates
// required (mTLS). It returns its URL, the directory with ca.pem,
// client.pem and client.key, and the count of requests served.
func stagingTLS(t *testing.T) (string, string, *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
	pool := stagingPKI(t, dir)
	server, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, "hello "+r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, dir, &served
}

// TestTLSMeasured: against an mTLS staging server with a private CA, quick
// mode and a plan work without --insecure, tls_ms is reported beside
// connect_ms (run-wide and per step), resumed handshakes are counted with
// resumption on and none with it off, and bad TLS input is refused with
// exit 2 before any load.
func TestTLSMeasured(t *testing.T) {
	t.Parallel()
	url, dir, served := stagingTLS(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	tlsArgs := []string{"--tls-ca", f("ca.pem"), "--tls-cert", f("client.pem"), "--tls-key", f("client.key"), "--tls-server-name", "staging.test"}

	_, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "2", "-c", "1")
	if code == 0 || !strings.Contains(stderr, "--tls-ca") {
		t.Errorf("no CA: exit %d, %q; want a hint at --tls-ca", code, stderr)
	}

	quick := func(extra ...string) result.Summary {
		t.Helper()
		args := append([]string{"run", "--url", url + "/", "-n", "6", "-c", "1", "--no-keepalive", "--json"}, append(tlsArgs, extra...)...)
		stdout, stderr, code := cli(context.Background(), t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr)
		}
		var s struct {
			result.Summary
			Steps []struct {
				result.Summary
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if s.Responses != 6 || s.Errors.Total != 0 || s.TLS == nil || s.TLS.Count != 6 || s.TLS.Min <= 0 || s.Connect == nil || s.Connect.Count != 6 {
			t.Errorf("%v: responses %d errors %+v tls %+v connect %+v: want 6 handshakes, each timed", extra, s.Responses, s.Errors, s.TLS, s.Connect)
		}
		if len(s.Steps) != 1 || s.Steps[0].TLS == nil || s.Steps[0].TLS.Count != 6 {
			t.Errorf("%v: the step has no tls_ms: %+v", extra, s.Steps)
		}
		return s.Summary
	}
	if s := quick(); s.TLSResumed < 4 {
		t.Errorf("resumption on: %d of 6 handshakes resumed, want at least 4", s.TLSResumed)
	}
	if s := quick("--no-tls-resumption"); s.TLSResumed != 0 {
		t.Errorf("--no-tls-resumption: %d handshakes resumed", s.TLSResumed)
	}
	if s := quick("--tls-min-version", "1.3"); s.TLSResumed < 4 {
		t.Errorf("TLS 1.3: %d of 6 handshakes resumed", s.TLSResumed)
	}

	plan := filepath.Join(dir, "plan.yaml")
	write := func(tlsBlock string) {
		os.WriteFile(plan, []byte("name: staging\ntarget: "+url+"\nhttp:\n  keepalive: false\n  tls:\n"+tlsBlock+
			"steps:\n  - get: /\n    expect: { contains: hello loadlab }\nload: { closed: { vus: 1, iterations: 3 } }\n"), 0o644)
	}
	write("    ca: ca.pem\n    client_cert: client.pem\n    client_key: client.key\n    server_name: staging.test\n    resumption: false\n")
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--json")
	var s result.Summary
	if code != 0 || json.Unmarshal([]byte(stdout), &s) != nil || s.Checks.Passed != 3 || s.TLS == nil || s.TLS.Count != 3 || s.TLSResumed != 0 {
		t.Errorf("plan: exit %d checks %+v tls %+v resumed %d\n%s", code, s.Checks, s.TLS, s.TLSResumed, stderr)
	}

	before := served.Load()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"bad version", []string{"--url", url, "--tls-min-version", "1.4"}, `--tls-min-version: unknown TLS version "1.4"`},
		{"cert without key", []string{"--url", url, "--tls-cert", f("client.pem")}, "--tls-cert needs --tls-key"},
		{"unreadable CA", []string{"--url", url, "--tls-ca", f("nope.pem")}, "--tls-ca: open " + f("nope.pem")},
		{"a flag with a plan", []string{plan, "--tls-ca", f("ca.pem")}, "--tls-ca is for quick mode (--url); for a plan, set http.tls.ca"},
	} {
		if _, stderr, code := cli(context.Background(), t, append([]string{"run"}, tt.args...)...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", tt.name, code, stderr, tt.want)
		}
	}
	write("    ca: nope.pem\n")
	if _, stderr, code := cli(context.Background(), t, "run", plan); code != 2 || !strings.Contains(stderr, "plan.yaml:6:9: http.tls.ca: open ") {
		t.Errorf("plan with an unreadable CA: exit %d, %q", code, stderr)
	}
	if n := served.Load(); n != before {
		t.Errorf("bad TLS input sent %d requests", n-before)
	}
}

// TestTLSAgainstNginx: nginx with ssl, a private CA and client certificates
// required (ssl_verify_client), started by the plan: the journey passes with
// certificates verified, and with keep-alive off the reconnects resume their
// sessions (nginx's tickets), counted in tls_resumed; resumption off, none.
func TestTLSAgainstNginx(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts nginx")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(nginx); err != nil {
		t.Fatal("nginx is not installed: run scripts/test-deps")
	}
	dir, err := os.MkdirTemp("", "loadlab-nginx-tls-") // open to nginx's workers (nobody)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	stagingPKI(t, dir)
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	os.WriteFile(filepath.Join(dir, "www", "index.html"), []byte("hello from nginx over mTLS"), 0o644)
	addr := targettest.FreeAddr(t)
	for _, resume := range []bool{true, false} {
		path := writePlan(t, map[string]string{
			"plan.yaml": fmt.Sprintf(`
target: https://%[1]s
http:
  keepalive: false
  tls: { ca: %[3]s/ca.pem, client_cert: %[3]s/client.pem, client_key: %[3]s/client.key, server_name: staging.test, resumption: %[4]v }
steps:
  - get: /index.html
    expect: { status: 200, contains: over mTLS }
load: { closed: { vus: 2, iterations: 5 } }
server:
  run: [ %[2]q, -p, %[3]q, -c, %[3]s/nginx.conf ]
  dir: %[3]q
  ready: tcp://%[1]s
`, addr, nginx, dir, resume),
		})
		os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(fmt.Sprintf(`daemon off;
master_process on;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fcgi; uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
  server {
    listen %[2]s ssl;
    ssl_certificate %[1]s/server.pem; ssl_certificate_key %[1]s/server.key;
    ssl_client_certificate %[1]s/ca.pem; ssl_verify_client on;
    root %[1]s/www;
  }
}
`, dir, addr)), 0o644)
		stdout, stderr, code := cli(context.Background(), t, "run", path, "--json")
		var s result.Summary
		if code != 0 || json.Unmarshal([]byte(stdout), &s) != nil {
			t.Fatalf("resumption %v: exit %d\n%s\n%s", resume, code, stdout, stderr)
		}
		if s.Checks.Failed != 0 || s.Checks.Passed != 20 || s.TLS == nil || s.TLS.Count != 10 {
			t.Errorf("resumption %v: checks %+v, tls %+v: want 20 passed, 10 handshakes", resume, s.Checks, s.TLS)
		}
		if resume && s.TLSResumed < 6 || !resume && s.TLSResumed != 0 {
			t.Errorf("resumption %v: %d of 10 handshakes resumed", resume, s.TLSResumed)
		}
	}
}
