package httpx

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPKI is a private CA with a server certificate for staging.test and
// 127.0.0.1, and a client certificate, written as PEM files.
type testPKI struct {
	dir                       string
	caFile, certFile, keyFile string // the CA; the client's certificate and key
	serverCert                tls.Certificate
	pool                      *x509.CertPool
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	now := time.Now()
	caKey := key()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "loadlab test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	leaf := func(serial int64, usage x509.ExtKeyUsage, names ...string) (der []byte, k *ecdsa.PrivateKey) {
		k = key()
		c := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: names[0]},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: names, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, c, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	sDER, sKey := leaf(2, x509.ExtKeyUsageServerAuth, "staging.test")
	sKeyDER, _ := x509.MarshalECPrivateKey(sKey)
	p.serverCert, err = tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sDER}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sKeyDER}))
	if err != nil {
		t.Fatal(err)
	}
	cDER, cKey := leaf(3, x509.ExtKeyUsageClientAuth, "loadlab client")
	cKeyDER, _ := x509.MarshalECPrivateKey(cKey)
	p.certFile = write("client.pem", "CERTIFICATE", cDER)
	p.keyFile = write("client.key", "EC PRIVATE KEY", cKeyDER)
	return p
}

// mTLSServer is an HTTPS server on loopback that requires a client
// certificate from the PKI's CA, with the given highest TLS version.
func (p *testPKI) mTLSServer(t testing.TB, maxVersion uint16) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{p.serverCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.pool,
		MaxVersion:   maxVersion,
	}
	srv.Config.ErrorLog = nil
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestParseTLSVersion(t *testing.T) {
	for in, want := range map[string]uint16{"1.2": tls.VersionTLS12, "TLS1.3": tls.VersionTLS13, "tls 1.0": tls.VersionTLS10, "v1.1": tls.VersionTLS11} {
		if got, err := ParseTLSVersion(in); err != nil || got != want {
			t.Errorf("%q: %x %v, want %x", in, got, err, want)
		}
	}
	if _, err := ParseTLSVersion("1.4"); err == nil || !strings.Contains(err.Error(), `unknown TLS version "1.4": use 1.0, 1.1, 1.2, 1.3`) {
		t.Errorf("1.4: %v", err)
	}
}

func TestLoadTLSFilesErrors(t *testing.T) {
	p := newTestPKI(t)
	if _, err := LoadCA(filepath.Join(p.dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing CA: %v", err)
	}
	if _, err := LoadCA(p.keyFile); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a key as CA: %v", err)
	}
	if _, err := LoadClientCert(p.certFile, p.caFile); err == nil || !strings.Contains(err.Error(), "client certificate") {
		t.Errorf("a certificate as key: %v", err)
	}
	if _, err := LoadClientCert(p.certFile, ""); err == nil || !strings.Contains(err.Error(), "needs both") {
		t.Errorf("no key: %v", err)
	}
}

// TestLoopMutualTLS: a server that requires a client certificate from a
// private CA. Without the settings the handshake fails (unknown authority);
// with ca, server_name and the client certificate, requests succeed without
// skipping verification, the handshake is timed apart from the TCP connect,
// and with resumption on reconnects resume their session; off, none does.
func TestLoopMutualTLS(t *testing.T) { forEachEngine(t, testLoopMutualTLS) }

func testLoopMutualTLS(t *testing.T, engine Engine) {
	p := newTestPKI(t)
	ca, err := LoadCA(p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := LoadClientCert(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	l := startLoop(t, Options{Timeout: 5 * time.Second, Engine: engine})
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		srv := p.mTLSServer(t, version)
		name := map[uint16]string{tls.VersionTLS12: "TLS 1.2", tls.VersionTLS13: "TLS 1.3"}[version]
		t.Run(name, func(t *testing.T) {
			t.Run("no ca fails", func(t *testing.T) {
				tg := target(t, srv.URL)
				x := do(t, l, l.NewConn(tg), get(tg, "/", false))
				if x.Failure != FailureTLS || !strings.Contains(x.Err.Error(), "certificate") {
					t.Fatalf("class %v err %v, want a certificate error", x.Failure, x.Err)
				}
			})
			t.Run("no client certificate fails", func(t *testing.T) {
				tg := target(t, srv.URL)
				tg.ConfigureTLS(&TLSSettings{RootCAs: ca, ServerName: "staging.test"})
				x := do(t, l, l.NewConn(tg), get(tg, "/", true))
				if x.Err == nil {
					t.Fatalf("status %d without a client certificate", x.Status)
				}
			})
			for _, resume := range []bool{true, false} {
				t.Run(map[bool]string{true: "resumption", false: "no resumption"}[resume], func(t *testing.T) {
					tg := target(t, srv.URL)
					tg.ConfigureTLS(&TLSSettings{RootCAs: ca, ServerName: "staging.test", Certificates: []tls.Certificate{cert}, NoResumption: !resume, MinVersion: tls.VersionTLS12})
					c := l.NewConn(tg)
					resumed := 0
					const n = 5
					for i := range n {
						x := get(tg, "/", true)
						x.CloseAfter = true // a new connection each time: a handshake each time
						x.Request = append(x.Request[:len(x.Request)-2], "Connection: close\r\n\r\n"...)
						do(t, l, c, x)
						if x.Err != nil || x.Status != 200 || string(x.Body) != "hello loadlab client" {
							t.Fatalf("exchange %d: %v %d %q", i, x.Err, x.Status, x.Body)
						}
						if x.ConnectTime() <= 0 || x.TLSTime() <= 0 || x.TLSEnd < x.ConnectEnd {
							t.Errorf("exchange %d: connect %v, tls %v: want both timed", i, x.ConnectTime(), x.TLSTime())
						}
						if x.TLSResumed {
							resumed++
						}
					}
					if resume && resumed < n-2 || !resume && resumed != 0 {
						t.Errorf("%d of %d handshakes resumed with resumption %v", resumed, n, resume)
					}
				})
			}
			t.Run("keep-alive: no handshake on reuse", func(t *testing.T) {
				tg := target(t, srv.URL)
				tg.ConfigureTLS(&TLSSettings{RootCAs: ca, ServerName: "staging.test", Certificates: []tls.Certificate{cert}})
				c := l.NewConn(tg)
				do(t, l, c, get(tg, "/", true))
				x := do(t, l, c, get(tg, "/", true))
				if x.Err != nil || !x.Reused || x.TLSTime() != 0 || x.ConnectTime() != 0 {
					t.Errorf("reused exchange: %v reused %v connect %v tls %v", x.Err, x.Reused, x.ConnectTime(), x.TLSTime())
				}
			})
		})
	}
	t.Run("min_version above the server's", func(t *testing.T) {
		srv := p.mTLSServer(t, tls.VersionTLS12)
		tg := target(t, srv.URL)
		tg.ConfigureTLS(&TLSSettings{RootCAs: ca, ServerName: "staging.test", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		x := do(t, l, l.NewConn(tg), get(tg, "/", false))
		if x.Failure != FailureTLS || !strings.Contains(x.Err.Error(), "version") {
			t.Errorf("class %v err %v, want a protocol version error", x.Failure, x.Err)
		}
	})
}
