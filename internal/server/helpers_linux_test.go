//go:build linux

package server

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/loadlab/loadlab/internal/target/targettest"
)

// The test binary doubles as the server under test: run with roleEnv set it becomes a
// child with a known behaviour instead of running tests.
const (
	roleEnv   = "LOADLAB_SERVER_TEST_ROLE"
	portEnv   = "LOADLAB_SERVER_TEST_PORT"
	statusEnv = "LOADLAB_SERVER_TEST_STATUS"
)

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		os.Exit(targettest.RunInTempDir(m))
	case "http":
		os.Exit(roleHTTP())
	case "spin":
		os.Exit(roleSpin())
	default:
		fmt.Fprintf(os.Stderr, "unknown test role %q\n", role)
		os.Exit(2)
	}
}

// roleHTTP answers / with the status in statusEnv (200 by default), and /alloc?mib=N by
// mapping N MiB of anonymous memory and writing to every page of it, so the kernel
// must back all of it: RSS grows by exactly N MiB.
func roleHTTP() int {
	status := http.StatusOK
	if s := os.Getenv(statusEnv); s != "" {
		status, _ = strconv.Atoi(s)
	}
	var mu sync.Mutex
	var held [][]byte // kept mapped until the process ends
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(status)
	})
	mux.HandleFunc("/alloc", func(w http.ResponseWriter, r *http.Request) {
		mib, err := strconv.Atoi(r.URL.Query().Get("mib"))
		if err != nil || mib <= 0 {
			http.Error(w, "mib?", http.StatusBadRequest)
			return
		}
		mem, err := unix.Mmap(-1, 0, mib<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 1
		}
		mu.Lock()
		held = append(held, mem)
		mu.Unlock()
		fmt.Fprintf(w, "allocated %d MiB\n", mib)
	})
	fmt.Println("listening on", os.Getenv(portEnv))
	err := http.ListenAndServe("127.0.0.1:"+os.Getenv(portEnv), mux)
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// roleSpin idles briefly, keeps one core busy until it has used one second of CPU,
// reports how long that took (on a shared machine, more than a second), then idles.
func roleSpin() int {
	time.Sleep(300 * time.Millisecond)
	cpu := func() time.Duration {
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	cpu0, wall0 := cpu(), time.Now()
	for n := 0; ; n++ {
		if n%(1<<16) == 0 && cpu()-cpu0 >= time.Second {
			break
		}
	}
	used, wall := cpu()-cpu0, time.Since(wall0)
	fmt.Printf("spun cpu=%d wall=%d\n", used, wall)
	time.Sleep(time.Hour)
	return 0
}

// testBinary is the path of this test binary, to be started in a role.
func testBinary(t testing.TB) string {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	return targettest.FreePort(t)
}

// procID names a process for good: a pid is reused, a pid with its start time is not.
type procID struct {
	pid   int
	start uint64
	name  string
}

// recorder collects every process seen in a tree, to check afterwards that none is left.
type recorder struct {
	seen map[procID]bool
}

func newRecorder() *recorder { return &recorder{seen: make(map[procID]bool)} }

// record notes the members; it reports whether it could read them all (a
// member may have exited since the tree was scanned).
func (r *recorder) record(members []Member) bool {
	reader := newProcReader()
	all := true
	for _, m := range members {
		if st, err := reader.stat(m.PID); err == nil {
			r.seen[procID{pid: m.PID, start: st.start, name: st.name}] = true
		} else {
			all = false
		}
	}
	return all
}

// await records p's members until ok accepts them, failing the test after timeout.
func (r *recorder) await(t *testing.T, p *Process, what string, timeout time.Duration, ok func([]Member) bool) []Member {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		members := p.Members()
		if r.record(members) && ok(members) {
			return members
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; members: %s", timeout, what, describe(members))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertGone fails the test if any recorded process still exists, as a live process
// or a zombie, and if this process has zombie children of any kind.
func (r *recorder) assertGone(t *testing.T) {
	t.Helper()
	if len(r.seen) == 0 {
		t.Fatal("no process was recorded: the check would prove nothing")
	}
	reader := newProcReader()
	for id := range r.seen {
		if st, err := reader.stat(id.pid); err == nil && st.start == id.start {
			t.Errorf("process %d (%s) is still there, state %c, parent %d", id.pid, id.name, st.state, st.ppid)
		}
	}
	assertNoZombieChildren(t)
}

func assertNoZombieChildren(t *testing.T) {
	t.Helper()
	pids, err := allPIDs()
	if err != nil {
		t.Fatal(err)
	}
	reader := newProcReader()
	for _, pid := range pids {
		if st, err := reader.stat(pid); err == nil && st.ppid == os.Getpid() && st.zombie() {
			t.Errorf("zombie child %d (%s) left unreaped", pid, st.name)
		}
	}
}

// assertNoProcessWith fails if any process's command line contains marker: a check
// for starts that failed, where no Process was returned to ask for members.
func assertNoProcessWith(t *testing.T, marker string) {
	t.Helper()
	pids, err := allPIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			t.Errorf("process %d %q is still there", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	assertNoZombieChildren(t)
}

func describe(members []Member) string {
	var parts []string
	for _, m := range members {
		z := ""
		if m.Zombie {
			z = " zombie"
		}
		parts = append(parts, fmt.Sprintf("%d(%s ppid %d pgid %d sid %d%s)", m.PID, m.Name, m.Parent, m.Group, m.Session, z))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func countNamed(members []Member, name string) int {
	n := 0
	for _, m := range members {
		if m.Name == name && !m.Zombie {
			n++
		}
	}
	return n
}

// uniqueSleep returns a sleep duration whose spelling marks the processes of one test.
func uniqueSleep() string {
	return fmt.Sprintf("300.%d%d", os.Getpid(), time.Now().UnixNano()%1e6)
}

// stopWithin stops p and fails if that takes longer than limit.
func stopWithin(t *testing.T, p *Process, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	took := time.Since(start)
	if took > limit {
		t.Errorf("Stop took %v, want at most %v", took, limit)
	}
	return took
}
