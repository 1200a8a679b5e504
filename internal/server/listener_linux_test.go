package server

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servingPort is the port in http.server's first line.
var servingPort = regexp.MustCompile(`^Serving HTTP on \S+ port (\d+) `)

// TestListenerPID: the process listening on a loopback port is found by
// its socket, whether it listens on the address or on the wildcard; a port
// nobody listens on, or loadlab's own listener, finds none.
func TestListenerPID(t *testing.T) {
	t.Parallel()
	for _, bind := range []string{"127.0.0.1", "0.0.0.0"} {
		// A real other process: Python's http.server, bound as given, on a
		// port it chooses and prints. A port chosen here and handed over
		// could be taken by another test's listener before Python binds it,
		// and the dial below would then reach that one (CI: "pid 0, false").
		cmd := exec.Command("python3", "-u", "-m", "http.server", "--bind", bind, "0")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("python3: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		port := make(chan int, 1)
		go func() {
			// "Serving HTTP on 127.0.0.1 port 41234 (http://...) ..."
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if m := servingPort.FindStringSubmatch(sc.Text()); m != nil {
					n, _ := strconv.Atoi(m[1])
					port <- n
					break
				}
			}
			io.Copy(io.Discard, stdout)
		}()
		var addr netip.AddrPort
		select {
		case n := <-port:
			addr = netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(n))
		case <-time.After(10 * time.Second):
			t.Fatal("python3's server did not say its port within 10 s")
		}
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
