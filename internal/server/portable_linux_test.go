//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The portable watcher (what runs outside Linux) tested on Linux, with the
// same test roles as the /proc one.

// envPortableChild marks a test binary started by notSubreaper.
const envPortableChild = "LOADLAB_TEST_PORTABLE_CHILD"

// notSubreaper runs the calling test where the process is no child
// subreaper, as outside Linux: once an earlier test of the package started
// a server (which makes the process one, for good), the test runs again
// alone in a fresh test binary, and notSubreaper reports true: the caller
// returns, its outcome being the child's. Orphans of a portable server would
// otherwise become this process's zombies, which nothing of the portable
// watcher reaps, and every later test would see them.
func notSubreaper(t *testing.T) (ranInChild bool) {
	t.Helper()
	var is int32 // PR_GET_CHILD_SUBREAPER writes an int at its argument
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&is)), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if is == 0 {
		return false
	}
	if os.Getenv(envPortableChild) != "" {
		t.Fatal("a fresh test binary is a subreaper already")
	}
	// The orphans of the child's servers would come to this process, the
	// nearest subreaper: it stops being one while the child runs (no other
	// test of the package runs meanwhile), so that they go to init.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), envPortableChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a fresh test binary: %v\n%s", t.Name(), err, out)
	}
	return true
}

// awaitMembers waits until ok holds for the portable process's members.
func awaitMembers(t *testing.T, p *portableProcess, what string, ok func([]Member) bool) []Member {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := p.Members()
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: members %s", what, describe(m))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPortableStopLeavesNothing(t *testing.T) {
	if notSubreaper(t) {
		return
	}
	tests := []struct {
		name     string
		shell    string
		grace    time.Duration
		minStop  time.Duration
		maxStop  time.Duration
		wantKids int
	}{
		{name: "shell with children", shell: "sleep %[1]s & sleep %[1]s & wait", wantKids: 2, maxStop: 2 * time.Second},
		{name: "ignores SIGTERM", shell: "trap '' TERM; sleep %[1]s & sleep %[1]s & wait", grace: 300 * time.Millisecond,
			wantKids: 2, minStop: 300 * time.Millisecond, maxStop: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := uniqueSleep()
			p, err := startPortable(context.Background(), Spec{
				Shell: fmt.Sprintf(tt.shell, marker), Grace: tt.grace,
				SampleInterval: 50 * time.Millisecond,
				LogPath:        filepath.Join(t.TempDir(), "server.log"),
			})
			if err != nil {
				t.Fatal(err)
			}
			awaitMembers(t, p, "the tree is up", func(m []Member) bool {
				return len(m) == 1+tt.wantKids && countNamed(m, "sleep") == tt.wantKids && m[0].PID == p.PID()
			})
			began := time.Now()
			if err := p.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
			if took := time.Since(began); took < tt.minStop || took > tt.maxStop {
				t.Errorf("Stop took %v, want %v to %v", took, tt.minStop, tt.maxStop)
			}
			if p.Err() != nil {
				t.Errorf("Err after Stop: %v", p.Err())
			}
			time.Sleep(50 * time.Millisecond) // the sleeps' parent, gone, leaves them to the reaper
			assertNoProcessWith(t, marker)
		})
	}
}

func TestPortableCrashIsReported(t *testing.T) {
	if notSubreaper(t) {
		return
	}
	p, err := startPortable(context.Background(), Spec{
		Shell: "echo dying; sleep 0.2; exit 3", SampleInterval: 50 * time.Millisecond,
		LogPath: filepath.Join(t.TempDir(), "server.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the crash was not noticed")
	}
	var exit *ExitError
	if !errors.As(p.Err(), &exit) || !exit.Crashed() || exit.Status.Code != 3 {
		t.Fatalf("Err = %v, want a crash with exit status 3", p.Err())
	}
	if !strings.Contains(strings.Join(exit.LogTail, "\n"), "dying") {
		t.Errorf("log tail %q, want the server's last words", exit.LogTail)
	}
}

// TestPortableMeasures: CPU and RSS are measured, the rest is said to be
// unmeasured, and a readiness probe is waited for.
func TestPortableMeasures(t *testing.T) {
	if notSubreaper(t) {
		return
	}
	if testing.Short() {
		t.Skip("slow (over a second): skipped with -short")
	}
	port := freePort(t)
	p, err := startPortable(context.Background(), Spec{
		Argv:           []string{testBinary(t)},
		Env:            map[string]string{roleEnv: "spin"},
		SampleInterval: 100 * time.Millisecond,
		LogPath:        filepath.Join(t.TempDir(), "server.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var childCPU, childWall time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		log, _ := os.ReadFile(p.LogPath())
		if _, after, ok := strings.Cut(string(log), "spun "); ok {
			if _, err := fmt.Sscanf(after, "cpu=%d wall=%d", &childCPU, &childWall); err != nil {
				t.Fatalf("child report %q: %v", after, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not finish spinning:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(250 * time.Millisecond)
	sum := p.Summary(time.Time{}, time.Time{})
	if cpu := sum.User + sum.System; cpu < childCPU-20*time.Millisecond || cpu > childCPU+300*time.Millisecond {
		t.Errorf("sampled CPU time %v, want the child's %v plus its start-up", cpu, childCPU)
	}
	if sum.RSSPeak < 1<<20 || sum.PSSPeak != sum.RSSPeak || !sum.PSSFromRSS {
		t.Errorf("RSS peak %d, PSS peak %d (from RSS: %v): want RSS measured and standing in for PSS", sum.RSSPeak, sum.PSSPeak, sum.PSSFromRSS)
	}
	if want := FigurePSS | FigureSwap | FigureMajorFaults | FigureWait; sum.Unmeasured != want {
		t.Errorf("unmeasured %v, want %v", sum.Unmeasured.Names(), want.Names())
	}
	if sum.ThreadsPeak < 2 || sum.FDsPeak < 3 || sum.ProcessesPeak != 1 {
		t.Errorf("threads %d, fds %d, processes %d", sum.ThreadsPeak, sum.FDsPeak, sum.ProcessesPeak)
	}

	ready, err := startPortable(context.Background(), Spec{
		Argv:    []string{testBinary(t)},
		Env:     map[string]string{roleEnv: "http", portEnv: fmt.Sprint(port)},
		Ready:   fmt.Sprintf("http://127.0.0.1:%d/", port),
		LogPath: filepath.Join(t.TempDir(), "ready.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ready.ReadyAt().Before(ready.StartedAt()) {
		t.Errorf("ready at %v, before the start at %v", ready.ReadyAt(), ready.StartedAt())
	}
	if err := ready.Stop(); err != nil {
		t.Error(err)
	}
}

func TestPortableSamplerSelf(t *testing.T) {
	s, err := newPortableSampler(os.Getpid(), OneProcess)
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	for cpu()-before < 300*time.Millisecond {
	}
	spun := cpu() - before
	second, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	// Ticks of 10 ms, and the test's other goroutines.
	if used := second.User + second.System - first.User - first.System; used < spun-30*time.Millisecond || used > spun+200*time.Millisecond {
		t.Errorf("%v of CPU counted as %v", spun, used)
	}
	if second.RSS <= 0 || second.Processes != 1 {
		t.Errorf("RSS %d, processes %d", second.RSS, second.Processes)
	}
}

func TestFiguresNames(t *testing.T) {
	if got := (FigurePSS | FigureMajorFaults).Names(); strings.Join(got, ",") != "pss,major_faults" {
		t.Errorf("names %q", got)
	}
	if got := Figures(0).Names(); got != nil {
		t.Errorf("no figures: %q", got)
	}
}
