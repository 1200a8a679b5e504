package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/loadlab/loadlab/internal/httpx"
)

// tlsFlags are quick mode's TLS flags, a plan's http.tls.
type tlsFlags struct {
	ca, cert, key, serverName, minVersion string
	noResumption                          bool
}

func (t *tlsFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&t.ca, "tls-ca", "", "verify the server with the CA certificates of this PEM file instead of the system's (a self-signed or private CA)")
	fl.StringVar(&t.cert, "tls-cert", "", "client certificate (PEM) for mutual TLS; needs --tls-key")
	fl.StringVar(&t.key, "tls-key", "", "the client certificate's private key (PEM)")
	fl.StringVar(&t.serverName, "tls-server-name", "", "the name sent in SNI and verified in the certificate, instead of the URL's host")
	fl.StringVar(&t.minVersion, "tls-min-version", "", "the lowest TLS version to accept: 1.0, 1.1, 1.2 (the default) or 1.3")
	fl.BoolVar(&t.noResumption, "no-tls-resumption", false, "a full TLS handshake on every new connection: no session resumption (tickets)")
}

// settings reads the files the flags name; nil when no flag was given.
func (t *tlsFlags) settings() (*httpx.TLSSettings, error) {
	if *t == (tlsFlags{}) {
		return nil, nil
	}
	s := &httpx.TLSSettings{NoResumption: t.noResumption, ServerName: t.serverName}
	if t.minVersion != "" {
		v, err := httpx.ParseTLSVersion(t.minVersion)
		if err != nil {
			return nil, fmt.Errorf("--tls-min-version: %w", err)
		}
		s.MinVersion = v
	}
	if t.ca != "" {
		pool, err := httpx.LoadCA(t.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-%w", err)
		}
		s.RootCAs = pool
	}
	switch {
	case t.cert != "" && t.key != "":
		if err := s.LoadClientCert(t.cert, t.key); err != nil {
			return nil, fmt.Errorf("--tls-cert: %w", err)
		}
	case t.cert != "":
		return nil, fmt.Errorf("--tls-cert needs --tls-key: the certificate's private key (PEM)")
	case t.key != "":
		return nil, fmt.Errorf("--tls-key needs --tls-cert: the client certificate (PEM)")
	}
	return s, nil
}
