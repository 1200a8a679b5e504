package httpx

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
)

// TLSSettings are the choices a plan's http.tls (or quick mode's --tls-*
// flags) make about the TLS of every https origin, loaded and checked before
// any load: certificate files are read once.
type TLSSettings struct {
	// NoResumption turns session resumption off: every new connection makes
	// a full handshake, as a first visit does. With it on (the default)
	// sessions are cached per origin and a reconnect resumes one (a TLS 1.3
	// ticket or a TLS 1.2 session ticket), as a returning browser does.
	NoResumption bool
	MinVersion   uint16 // zero: crypto/tls's default, TLS 1.2
	// ServerName is sent in SNI and verified against the certificate,
	// instead of the URL's host (an address, or a staging name).
	ServerName string
	// Certificates is the client certificate for mTLS, if any.
	Certificates []tls.Certificate
	// RootCAs verifies the server instead of the system's roots (a
	// self-signed or private CA).
	RootCAs *x509.CertPool
}

// TLSVersions names the versions a min_version may be, for errors.
var TLSVersions = []string{"1.0", "1.1", "1.2", "1.3"}

// ParseTLSVersion reads a TLS version's name: "1.2", "TLS1.3", "tls 1.3"...
func ParseTLSVersion(s string) (uint16, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(v, "tls"), "v"))
	switch v {
	case "1.0", "1":
		return tls.VersionTLS10, nil
	case "1.1":
		return tls.VersionTLS11, nil
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("unknown TLS version %q: use %s", s, strings.Join(TLSVersions, ", "))
}

// LoadClientCert reads a client certificate and its key (PEM files) for mTLS.
func LoadClientCert(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fmt.Errorf("a client certificate needs both client_cert and client_key")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("client certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// LoadClientCert sets the client certificate for mTLS from PEM files.
func (s *TLSSettings) LoadClientCert(certFile, keyFile string) error {
	cert, err := LoadClientCert(certFile, keyFile)
	if err != nil {
		return err
	}
	s.Certificates = []tls.Certificate{cert}
	return nil
}

// LoadCA reads the PEM certificates of file into a pool that verifies the
// server instead of the system's roots.
func LoadCA(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// ConfigureTLS applies s to the origin's TLS configuration; a plain http
// origin is left alone.
func (t *Origin) ConfigureTLS(s *TLSSettings) {
	if t.TLS == nil || s == nil {
		return
	}
	c := t.TLS
	if s.NoResumption {
		c.ClientSessionCache = nil
		c.SessionTicketsDisabled = true
	}
	if s.MinVersion != 0 {
		c.MinVersion = s.MinVersion
	}
	if s.ServerName != "" {
		c.ServerName = s.ServerName
	}
	if len(s.Certificates) > 0 {
		c.Certificates = slices.Clone(s.Certificates)
	}
	if s.RootCAs != nil {
		c.RootCAs = s.RootCAs
	}
}
