package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/loadlab/loadlab/internal/httpx"
)

// preflightH2 checks, before any load, that an HTTP/2 target speaks it: h2
// chosen by ALPN over TLS, or an answer to the h2c preface in SETTINGS. A
// server that speaks only HTTP/1.1 is then one clear line, not a run of
// failures. Nothing to check for an HTTP/1.1 target.
func preflightH2(ctx context.Context, t *httpx.Origin, timeout time.Duration) error {
	if t.HTTP2Streams() == 0 {
		return nil
	}
	d := net.Dialer{Timeout: min(timeout, 10*time.Second)}
	conn, err := d.DialContext(ctx, "tcp", t.Addr.String())
	if err != nil {
		return fmt.Errorf("cannot connect to %s: %w", t.Host, unwrapOp(err))
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(d.Timeout))
	hint := "leave out --http2 (quick mode) or http.version: 2 (a plan) to use HTTP/1.1"
	if t.TLS != nil {
		tc := tls.Client(conn, t.TLS.Clone())
		err := tc.HandshakeContext(ctx)
		if err != nil && strings.Contains(err.Error(), "no application protocol") {
			return fmt.Errorf("%s does not speak HTTP/2 over TLS (it offers no h2 by ALPN): %s", t.Host, hint)
		}
		if err != nil {
			return nil // preflight has said what is wrong with the handshake
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			if p == "" {
				p = "none"
			}
			return fmt.Errorf("%s does not speak HTTP/2 over TLS (ALPN chose %s): %s", t.Host, p, hint)
		}
		return nil
	}
	fr := http2.NewFramer(conn, conn)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return fmt.Errorf("h2c preface to %s: %w", t.Host, unwrapOp(err))
	}
	fr.WriteSettings()
	f, err := fr.ReadFrame()
	if err == nil {
		if _, ok := f.(*http2.SettingsFrame); ok {
			return nil
		}
		err = fmt.Errorf("its first frame is %v, not SETTINGS", f.Header().Type)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%s did not answer the h2c preface within %v: %s", t.Host, d.Timeout, hint)
	}
	return fmt.Errorf("%s does not speak cleartext HTTP/2 with prior knowledge (h2c): %v; %s", t.Host, unwrapOp(err), hint)
}
