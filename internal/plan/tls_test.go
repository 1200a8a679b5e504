package plan

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned makes a self-signed certificate and its key, as PEM.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "staging.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, DNSNames: []string{"staging.test"},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, c, c, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// TestTLSOptions: http.tls reads its files relative to the plan, and each
// mistake (an unreadable file, a file that is not what it should be, a bad
// version, a certificate without its key) is an error at its line and column.
func TestTLSOptions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cert, key := selfSigned(t)
	write("ca.pem", cert)
	write("client.pem", cert)
	write("client.key", key)
	write("notpem.txt", "hello")

	plan := func(tlsBlock string) string {
		return write("plan.yaml", "target: https://127.0.0.1:8443\nhttp:\n  tls:\n"+tlsBlock+"steps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n")
	}
	t.Run("good", func(t *testing.T) {
		f := plan("    resumption: false\n    min_version: \"1.3\"\n    server_name: staging.test\n    ca: ca.pem\n    client_cert: client.pem\n    client_key: client.key\n")
		p, err := Load(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := p.HTTP.TLS
		if s == nil || !s.NoResumption || s.MinVersion != tls.VersionTLS13 || s.ServerName != "staging.test" || s.RootCAs == nil || len(s.Certificates) != 1 {
			t.Errorf("tls settings %+v", s)
		}
	})
	for _, tt := range []struct {
		name, block, at, want string
	}{
		{"unreadable ca", "    ca: missing.pem\n", "4:9", "http.tls.ca: open " + filepath.Join(dir, "missing.pem") + ": no such file"},
		{"ca not PEM", "    ca: notpem.txt\n", "4:9", "no PEM certificate"},
		{"bad version", "    min_version: \"1.4\"\n", "4:18", `http.tls.min_version: unknown TLS version "1.4": use 1.0, 1.1, 1.2, 1.3`},
		{"cert without key", "    client_cert: client.pem\n", "4:18", "http.tls.client_cert needs client_key"},
		{"key without cert", "    client_key: client.key\n", "4:17", "http.tls.client_key needs client_cert"},
		{"key that is not one", "    client_cert: client.pem\n    client_key: notpem.txt\n", "4:18", "http.tls: client certificate"},
		{"unknown key", "    resume: true\n", "4:5", `unknown key "resume" in http.tls`},
		{"resumption not a boolean", "    resumption: maybe\n", "4:17", "http.tls.resumption"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := plan(tt.block)
			_, err := Load(f, Options{})
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %v, want a positioned plan error", err)
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), f+":"+tt.at+": ") && strings.Contains(e.Msg, tt.want) {
					return
				}
			}
			t.Errorf("got\n%v\nwant at %s %q", err, tt.at, tt.want)
		})
	}
}
