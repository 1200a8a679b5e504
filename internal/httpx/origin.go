package httpx

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
)

// Origin is a server address, resolved once before the load starts.
type Origin struct {
	Scheme string         // "http" or "https"
	Host   string         // host[:port] as written in the URL: the Host header and TLS server name
	Addr   netip.AddrPort // where connections go
	TLS    *tls.Config    // nil for plain HTTP

	h2Streams int // HTTP/2: Conns of a loop per connection (UseHTTP2); 0 for HTTP/1.1

	sys originSys // Addr as the platform's sockets want it
}

// ResolveOrigin looks up the URL's host. Certificates are verified unless
// insecure is set.
func ResolveOrigin(ctx context.Context, u *url.URL, insecure bool) (*Origin, error) {
	t := &Origin{Scheme: u.Scheme, Host: u.Host}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		t.TLS = &tls.Config{
			ServerName:         u.Hostname(),
			InsecureSkipVerify: insecure,
			ClientSessionCache: tls.NewLRUClientSessionCache(0),
			NextProtos:         []string{"http/1.1"},
		}
	default:
		return nil, fmt.Errorf("unsupported scheme %q in %s: use http or https", u.Scheme, u.Redacted())
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return nil, fmt.Errorf("bad port %q in %s", port, u.Redacted())
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("no host in %s", u.Redacted())
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		addr = addrs[0]
		for _, a := range addrs { // prefer IPv4, as curl and browsers mostly end up doing on loopback
			if a.Is4() || a.Is4In6() {
				addr = a
				break
			}
		}
	}
	t.SetAddr(netip.AddrPortFrom(addr.Unmap().WithZone(addr.Zone()), uint16(p)))
	return t, nil
}

// SetAddr points the origin at addr.
func (t *Origin) SetAddr(addr netip.AddrPort) {
	t.Addr = addr
	t.sys.set(addr)
}
