package httpx

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Origin is a server address, resolved once before the load starts.
type Origin struct {
	Scheme string         // "http" or "https"
	Host   string         // host[:port] as written in the URL: the Host header and TLS server name
	Addr   netip.AddrPort // where connections go
	TLS    *tls.Config    // nil for plain HTTP
	// Addrs are every address the host resolved to, in the order Dial
	// tries them: IPv4 first, then IPv6, each in the resolver's order. Addr
	// is the first until Dial finds another that answers.
	Addrs []netip.AddrPort

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
		lookup := lookupNetIP
		if isLocalhost(host) {
			// localhost is loopback on both families, as curl and browsers
			// take it (RFC 6761), whatever /etc/hosts maps it to: a server
			// on ::1 alone is found.
			lookup = func(context.Context, string, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
			}
		}
		addrs, err := lookup(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		// IPv4 first, as curl and browsers mostly end up doing on
		// loopback; the IPv6 ones after, so that a server on ::1 alone
		// is still found (Dial).
		v4 := func(a netip.Addr) bool { return a.Is4() || a.Is4In6() }
		for _, first := range []bool{true, false} {
			for _, a := range addrs {
				if v4(a) == first {
					t.Addrs = append(t.Addrs, netip.AddrPortFrom(a.Unmap().WithZone(a.Zone()), uint16(p)))
				}
			}
		}
		t.SetAddr(t.Addrs[0])
		return t, nil
	}
	t.SetAddr(netip.AddrPortFrom(addr.Unmap().WithZone(addr.Zone()), uint16(p)))
	t.Addrs = []netip.AddrPort{t.Addr}
	return t, nil
}

// isLocalhost reports whether host is localhost or a name under it.
func isLocalhost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// lookupNetIP resolves names; tests replace it.
var lookupNetIP = net.DefaultResolver.LookupNetIP

// Dial connects to the first of Addrs that accepts a connection, in order,
// and makes it the origin's Addr, where every connection of the load then
// goes: a name that resolves to 127.0.0.1 and ::1 reaches a server that
// listens on either. It returns the connection, for the caller to use or
// close, or the first address's error when none accepts.
func (t *Origin) Dial(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	addrs := t.Addrs
	if len(addrs) == 0 {
		addrs = []netip.AddrPort{t.Addr}
	}
	var first error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, "tcp", a.String())
		if err == nil {
			if a != t.Addr {
				t.SetAddr(a)
			}
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// SetAddr points the origin at addr.
func (t *Origin) SetAddr(addr netip.AddrPort) {
	t.Addr = addr
	t.sys.set(addr)
}
