// Package targettest runs loadlab's test server in a separate process for
// tests, the way httptest runs one in the same process. A separate process
// matters for timing tests: a server sharing the test's Go scheduler would
// delay the load generator's threads and blur what is measured.
//
// The child is the test binary itself: call Main from TestMain.
package targettest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/target"
)

// The child reads its options, and optionally its address, from these.
const (
	EnvOptions = "LOADLAB_TARGETTEST_OPTIONS"
	EnvAddr    = "LOADLAB_TARGETTEST_ADDR"
	// envWatch, set by Start, makes the child exit when its stdin ends:
	// the test process died without its cleanup (a go test killed at its
	// timeout, or by a signal), and the target must not outlive it.
	envWatch = "LOADLAB_TARGETTEST_WATCH_STDIN"
)

// Main serves as a target and exits if this process was started by Start;
// otherwise it returns at once. Call it first thing in TestMain.
func Main() {
	raw := os.Getenv(EnvOptions)
	if raw == "" {
		return
	}
	var o target.Options
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		fmt.Fprintln(os.Stderr, "targettest:", err)
		os.Exit(2)
	}
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if os.Getenv(envWatch) != "" {
		go func() {
			io.Copy(io.Discard, os.Stdin) // EOF: the parent is gone
			os.Exit(0)
		}()
	}
	err := target.Serve(ctx, addr, o, func(a net.Addr) {
		fmt.Printf("listening %s\n", a)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "targettest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Start runs a target with the given options in a child process and returns
// its base URL ("http://127.0.0.1:PORT"). The child is killed at cleanup.
func Start(t testing.TB, o target.Options) string {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvOptions+"="+string(raw), envWatch+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe() // held open until cleanup; see envWatch
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		stdin.Close()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "listening ")
		if !ok || !found {
			t.Fatalf("targettest: child said %q", line)
		}
		return "http://" + addr
	case <-time.After(10 * time.Second):
		t.Fatal("targettest: the child did not start within 10s")
	}
	return ""
}

// Command is the command line that runs a target with options o at addr, as
// the server under test of a plan: the test binary and its environment.
func Command(t testing.TB, o target.Options, addr string) (argv []string, env map[string]string) {
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return []string{os.Args[0], "-test.run=^$"}, map[string]string{EnvOptions: string(raw), EnvAddr: addr}
}

// RunInTempDir runs a package's tests with TMPDIR set to a directory of
// their own, removed afterwards, and returns the exit code. A server under
// test that fails keeps its temporary log for the user to read; tests must
// not leave those behind. The directory is readable by all, as servers that
// drop privileges (nginx's workers) read files under it. The loadlab runs of
// the tests record their history there too, never in the user's, and none
// appends to a CI job's summary.
func RunInTempDir(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "loadlab-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	os.Setenv("TMPDIR", tmp)
	os.Setenv("LOADLAB_HISTORY", filepath.Join(tmp, "history.db"))
	os.Unsetenv("GITHUB_STEP_SUMMARY") // a CI job's summary is not the tests' to write

	return m.Run()
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

var ports struct {
	sync.Mutex
	next int
}

// FreePort returns a loopback port that was free a moment ago, for a server
// a test starts later. It is below the kernel's ephemeral range, so that no
// outgoing connection (of the load, say) takes it in the meantime, as one
// may take a port that listening on :0 handed out; and no port is handed out
// twice in a test binary. Each binary starts at a place of its own in the
// range, so packages tested in parallel rarely meet.
func FreePort(t testing.TB) int {
	t.Helper()
	// Below Linux's default ephemeral range (32768-60999), and below the
	// examples' fixed ports (29100-29199).
	const lo, hi = 20000, 29000
	ports.Lock()
	defer ports.Unlock()
	if ports.next == 0 {
		ports.next = lo + (os.Getpid()*7919)%(hi-lo)
	}
	for range hi - lo {
		port := ports.next
		ports.next++
		if ports.next >= hi {
			ports.next = lo
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatalf("no free port in %d..%d", lo, hi)
	return 0
}

// SleeperLateness sleeps to a schedule of perSecond wake-ups for d and
// returns the p99 of how late it woke, in ms: what the machine alone adds
// to anything that keeps a schedule. Timing tests use it as a yardstick on
// a busy shared machine, measured beside or just before the run they judge.
func SleeperLateness(perSecond float64, d time.Duration) float64 {
	gap := time.Duration(float64(time.Second) / perSecond)
	var late []float64
	start := time.Now()
	for due := start; due.Sub(start) < d; due = due.Add(gap) {
		time.Sleep(time.Until(due))
		late = append(late, float64(time.Since(due))/float64(time.Millisecond))
	}
	slices.Sort(late)
	return late[len(late)*99/100]
}
