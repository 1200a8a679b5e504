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
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// stagingTLS is an HTTPS server on loopback as a staging box has one: a
// certificate for staging.test from a private CA, and client certificates
// required (mTLS). It returns its URL, the directory with ca.pem,
// client.pem and client.key, and the count of requests served.
func stagingTLS(t *testing.T) (string, string, *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
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
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: []string{name}}
		der, err := x509.CreateCertificate(rand.Reader, c, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(k)
		return pemOf("CERTIFICATE", der), pemOf("EC PRIVATE KEY", kder)
	}
	sCert, sKey := leaf(2, x509.ExtKeyUsageServerAuth, "staging.test")
	server, err := tls.X509KeyPair(sCert, sKey)
	if err != nil {
		t.Fatal(err)
	}
	cCert, cKey := leaf(3, x509.ExtKeyUsageClientAuth, "loadlab")
	for name, data := range map[string][]byte{"ca.pem": pemOf("CERTIFICATE", caDER), "client.pem": cCert, "client.key": cKey} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
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
