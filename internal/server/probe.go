package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// newProbeClient returns a client for readiness probes: no proxy (a probe of a local
// server must not leave the machine), no connection reuse (each probe is a fresh
// connection, as a new client's would be), no redirects followed (3xx counts as ready).
func newProbeClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// check runs one probe, bounded by timeout.
func (p readyProbe) check(ctx context.Context, client *http.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.tcpOnly {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", p.address)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	// Drain a little so the server does not see a reset mid-response.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: status %s", p.url, resp.Status)
	}
	return nil
}

// answers reports whether something already accepts connections at the probe's
// address. Checked before start: an old server still bound to the port would pass the
// probe while ours fails to bind, and the run would measure the wrong server.
func (p readyProbe) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.address)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
