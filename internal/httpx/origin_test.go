package httpx

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestOriginTriesEveryAddress: a name resolving to ::1 and 127.0.0.1 (the
// usual getaddrinfo answer for localhost) with a server on ::1 alone. The IPv4
// address is tried first and refused, the IPv6 one answers, and the load's
// connections go there, on every engine.
func TestOriginTriesEveryAddress(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "six") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	if c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", itoa(port))); err == nil {
		c.Close()
		t.Skip("something listens on 127.0.0.1 at the same port")
	}
	lookupNetIP = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		if host != "dual.test" {
			t.Errorf("looked up %q", host)
		}
		return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	t.Cleanup(func() { lookupNetIP = net.DefaultResolver.LookupNetIP })

	forEachEngine(t, func(t *testing.T, engine Engine) {
		u, _ := url.Parse("http://dual.test:" + itoa(port) + "/")
		tg, err := ResolveOrigin(context.Background(), u, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(tg.Addrs) != 2 || !tg.Addrs[0].Addr().Is4() || tg.Addr != tg.Addrs[0] {
			t.Fatalf("addresses %v, addr %v: want IPv4 first", tg.Addrs, tg.Addr)
		}
		conn, err := tg.Dial(context.Background(), &net.Dialer{Timeout: time.Second})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conn.Close()
		if tg.Addr.Addr() != netip.MustParseAddr("::1") {
			t.Fatalf("addr %v after Dial, want ::1", tg.Addr)
		}
		l := startLoop(t, Options{Timeout: 5 * time.Second, Engine: engine})
		x := do(t, l, l.NewConn(tg), get(tg, "/", true))
		if x.Err != nil || x.Status != 200 || string(x.Body) != "six" {
			t.Errorf("exchange: %v %d %q", x.Err, x.Status, x.Body)
		}
	})
	// Nothing answers: the first address's error.
	ln.Close()
	u, _ := url.Parse("http://dual.test:" + itoa(port) + "/")
	tg, _ := ResolveOrigin(context.Background(), u, false)
	if _, err := tg.Dial(context.Background(), &net.Dialer{Timeout: time.Second}); err == nil || tg.Addr.Addr().Is6() {
		t.Errorf("nothing listening: %v, addr %v", err, tg.Addr)
	}
}

// TestLocalhostIsBothLoopbacks: localhost is 127.0.0.1 and ::1 without a
// lookup, as curl takes it, though /etc/hosts may map it to 127.0.0.1
// alone: a server on ::1 alone is reached.
func TestLocalhostIsBothLoopbacks(t *testing.T) {
	for _, host := range []string{"localhost", "LOCALHOST", "shop.localhost", "localhost."} {
		u, _ := url.Parse("http://" + host + ":8080/")
		tg, err := ResolveOrigin(context.Background(), u, false)
		if err != nil {
			t.Fatal(err)
		}
		want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("[::1]:8080")}
		if len(tg.Addrs) != 2 || tg.Addrs[0] != want[0] || tg.Addrs[1] != want[1] {
			t.Errorf("%s: addresses %v, want %v", host, tg.Addrs, want)
		}
	}
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine: %v", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	u, _ := url.Parse("http://localhost:" + itoa(ln.Addr().(*net.TCPAddr).Port) + "/")
	tg, _ := ResolveOrigin(context.Background(), u, false)
	conn, err := tg.Dial(context.Background(), &net.Dialer{Timeout: time.Second})
	if err != nil {
		t.Fatalf("a server on ::1 alone, by localhost: %v", err)
	}
	conn.Close()
}

func itoa(n int) string { return strconv.Itoa(n) }
