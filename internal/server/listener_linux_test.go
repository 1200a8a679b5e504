package server

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestListenerPID: the process listening on a loopback port is found by
// its socket, whether it listens on the address or on the wildcard; a port
// nobody listens on, or loadlab's own listener, finds none.
func TestListenerPID(t *testing.T) {
	t.Parallel()
	for _, bind := range []string{"127.0.0.1", "0.0.0.0"} {
		port := freePort(t)
		// A real other process: Python's http.server, bound as given.
		cmd := exec.Command("python3", "-m", "http.server", "--bind", bind, strconv.Itoa(port))
		if err := cmd.Start(); err != nil {
			t.Fatalf("python3: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(port))
		deadline := time.Now().Add(10 * time.Second)
		for {
			if c, err := net.Dial("tcp", addr.String()); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("python3's server did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if pid, ok := ListenerPID(addr); !ok || pid != cmd.Process.Pid {
			t.Errorf("bound to %s: pid %d, %v; want %d", bind, pid, ok, cmd.Process.Pid)
		}
		if name := CommandLine(cmd.Process.Pid); !strings.HasPrefix(name, "python3") {
			t.Errorf("bound to %s: named %q, want python3", bind, name)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if pid, ok := ListenerPID(netip.MustParseAddrPort(ln.Addr().String())); ok {
		t.Errorf("loadlab's own listener: pid %d (self %d)", pid, os.Getpid())
	}
	if pid, ok := ListenerPID(netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(freePort(t)))); ok {
		t.Errorf("nothing listening: pid %d", pid)
	}
}

// TestParseProcAddr reads /proc/net/tcp's addresses.
func TestParseProcAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:0BB8": "[::1]:3000",
	} {
		got, ok := parseProcAddr(in)
		if !ok || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := parseProcAddr(strings.Repeat("z", 8) + ":1"); ok {
		t.Error("bad hex parsed")
	}
}
