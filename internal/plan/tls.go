package plan

import (
	"path/filepath"

	"github.com/loadlab/loadlab/internal/httpx"
)

// tlsOptions reads http.tls: { resumption, min_version, server_name,
// client_cert, client_key, ca }, reading the certificate files (relative to
// the plan) now, so that one that cannot be read is an error at its line.
func (d *decoder) tlsOptions(p *Plan, n *node) *httpx.TLSSettings {
	m, ok := d.fields(n, "http.tls", "resumption", "min_version", "server_name", "client_cert", "client_key", "ca")
	if !ok {
		return nil
	}
	t := &httpx.TLSSettings{}
	if v := m.get("resumption"); v != nil {
		if on, ok := d.boolean(v, "http.tls.resumption"); ok {
			t.NoResumption = !on
		}
	}
	if v := m.get("min_version"); v != nil {
		if s, ok := d.scalar(v, "http.tls.min_version"); ok {
			ver, err := httpx.ParseTLSVersion(s)
			if err != nil {
				d.errorf(v.pos, "http.tls.min_version: %v", err)
			}
			t.MinVersion = ver
		}
	}
	if v := m.get("server_name"); v != nil {
		t.ServerName, _ = d.str(v, "http.tls.server_name")
	}
	file := func(key string) (string, *node) {
		v := m.get(key)
		if v == nil {
			return "", nil
		}
		f, ok := d.str(v, "http.tls."+key)
		if !ok || f == "" {
			return "", nil
		}
		if !filepath.IsAbs(f) {
			f = filepath.Join(p.Dir, f)
		}
		return f, v
	}
	if f, v := file("ca"); v != nil {
		pool, err := httpx.LoadCA(f)
		if err != nil {
			d.errorf(v.pos, "http.tls.%v", err)
		}
		t.RootCAs = pool
	}
	certFile, certNode := file("client_cert")
	keyFile, keyNode := file("client_key")
	switch {
	case certNode != nil && keyNode != nil:
		if err := t.LoadClientCert(certFile, keyFile); err != nil {
			d.errorf(certNode.pos, "http.tls: %v", err)
		}
	case certNode != nil:
		d.errorf(certNode.pos, "http.tls.client_cert needs client_key: the certificate's private key (PEM)")
	case keyNode != nil:
		d.errorf(keyNode.pos, "http.tls.client_key needs client_cert: the client certificate (PEM)")
	}
	return t
}
