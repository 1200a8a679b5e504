//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/limits"
)

// cgroupsWritable skips where this process may not make a memory cgroup.
func cgroupsWritable(t *testing.T) {
	t.Helper()
	g, err := limits.Create(limits.Limits{Memory: 64 << 20})
	var u *limits.UnavailableError
	if errors.As(err, &u) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	g.Remove()
}

func assertGroupGone(t *testing.T, dirs []string) {
	t.Helper()
	if len(dirs) == 0 {
		t.Fatal("no cgroups to check")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s is still there (%v)", d, err)
		}
	}
}

func readLogUntil(t *testing.T, path, want string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) || time.Now().After(deadline) {
			return string(b)
		}
	}
}

// The server's first line already runs in its cgroups, on its CPUs; its
// children inherit both; Stop removes the cgroups; the figures outlive them.
func TestLimitedServerStartsInside(t *testing.T) {
	cgroupsWritable(t)
	sleep := uniqueSleep()
	p, err := Start(t.Context(), Spec{
		Shell:  "cat /proc/self/cgroup; grep Cpus_allowed_list /proc/self/status; sh -c 'grep Cpus_allowed_list /proc/self/status; echo child-done'; exec sleep " + sleep,
		Limits: limits.Limits{CPUs: limits.CPUs{Count: 1}, Memory: 64 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := p.group.Dirs()
	text := readLogUntil(t, p.LogPath(), "child-done")
	for _, d := range dirs {
		if name := d[strings.LastIndex(d, "/"):]; !strings.Contains(text, name+"\n") {
			t.Errorf("the server is not in %s from its start:\n%s", d, text)
		}
	}
	_, in, _, ok := p.Limits()
	if !ok || len(in.CPUList) != 1 || in.Memory != 64<<20 {
		t.Fatalf("in force: %+v %v", in, ok)
	}
	if n := strings.Count(text, "Cpus_allowed_list:\t"+limits.FormatList(in.CPUList)+"\n"); n != 2 {
		t.Errorf("the server and its child should both run on CPU %v:\n%s", in.CPUList, text)
	}
	if c := p.series.summary(time.Time{}, time.Time{}).Capacity; c != 1 {
		t.Errorf("capacity %v, want the 1 CPU of the limit", c)
	}
	stopWithin(t, p, 2*time.Second)
	assertGroupGone(t, dirs)
	if _, _, st, _ := p.Limits(); st.MemoryPeak == 0 {
		t.Errorf("no memory peak kept after the stop: %+v", st)
	}
	assertNoProcessWith(t, sleep)
}

// A server that allocates past its memory limit is killed by the kernel: a
// crash whose error says so with the limit and the peaks, not a hang.
func TestLimitedServerOOMKilled(t *testing.T) {
	cgroupsWritable(t)
	sleep := uniqueSleep()
	p, err := Start(t.Context(), Spec{
		// A worker holding 200 MB beside a master that lives on: the kill of
		// the worker alone fails the server.
		Shell:  `(sleep 0.6; x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived) & exec sleep ` + sleep,
		Limits: limits.Limits{Memory: 32 << 20, SwapSet: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := p.group.Dirs()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		p.Stop()
		t.Fatal("the server outlived its memory limit")
	}
	var exit *ExitError
	if !errors.As(p.Err(), &exit) || exit.OOM == nil {
		t.Fatalf("Err = %v, want an OOM kill", p.Err())
	}
	msg := exit.Error()
	// 200 MB in a fraction of a second: a sample may or may not catch PSS
	// near the limit (TestOOMReason has both wordings); the cgroup's peak
	// is there either way.
	if !strings.Contains(msg, "server killed at its 32 MiB memory limit after ") || !strings.Contains(msg, "cgroup peak 32 MiB") ||
		!strings.Contains(msg, ", at PSS ") && !strings.Contains(msg, ", PSS peak ") {
		t.Errorf("message: %s", msg)
	}
	if exit.OOM.Limit != 32<<20 || exit.OOM.Kills < 1 {
		t.Errorf("OOM %+v", exit.OOM)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	assertGroupGone(t, dirs)
	assertNoProcessWith(t, sleep)
}

// The cgroups are gone after a crash, after the context ends (Ctrl-C), and
// when the server fails to get ready.
func TestLimitedServerCgroupsRemoved(t *testing.T) {
	cgroupsWritable(t)
	lim := limits.Limits{Memory: 64 << 20}
	t.Run("crash", func(t *testing.T) {
		p, err := Start(t.Context(), Spec{Shell: "sleep 0.2; exit 3", Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		dirs := p.group.Dirs()
		<-p.Done()
		var exit *ExitError
		if !errors.As(p.Err(), &exit) || !exit.Crashed() || exit.OOM != nil {
			t.Errorf("Err = %v", p.Err())
		}
		assertGroupGone(t, dirs)
		p.Stop()
	})
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		p, err := Start(ctx, Spec{Shell: "exec sleep " + uniqueSleep(), Limits: lim, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		dirs := p.group.Dirs()
		cancel()
		<-p.Done()
		assertGroupGone(t, dirs)
		p.Stop()
	})
	t.Run("not ready", func(t *testing.T) {
		before := cgroupChildren(t)
		_, err := Start(t.Context(), Spec{Shell: "exit 4", Ready: fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t)), Limits: lim})
		if err == nil {
			t.Fatal("started")
		}
		if after := cgroupChildren(t); after != before {
			t.Errorf("cgroups before %q, after %q", before, after)
		}
	})
}

// cgroupChildren lists the loadlab cgroups under this process's memory cgroup.
func cgroupChildren(t *testing.T) string {
	g, err := limits.Create(limits.Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	parent := g.Dirs()[0][:strings.LastIndex(g.Dirs()[0], "/")]
	g.Remove()
	entries, _ := os.ReadDir(parent)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("loadlab-%d-", os.Getpid())) {
			names = append(names, e.Name())
		}
	}
	return strings.Join(names, " ")
}

// When loadlab dies (its watchdog's pipe closes without "done"), the watchdog
// ends every process in the server's cgroups, even one that left the group
// and dropped the mark, and then removes the cgroups.
func TestWatchdogRemovesCgroups(t *testing.T) {
	cgroupsWritable(t)
	if err := becomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	g, err := limits.Create(limits.Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dirs := g.Dirs()
	dog, err := startWatchdog(Spec{StopSignal: syscall.SIGTERM, Grace: 300 * time.Millisecond}, g)
	if err != nil {
		t.Fatal(err)
	}
	hidden := uniqueSleep()
	cmd := exec.Command("/bin/sh", "-c", "setsid env -u "+TreeMarkEnv+" sleep "+hidden+" & exec sleep "+uniqueSleep())
	cmd.Env = append(os.Environ(), dog.mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.Command(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dog.setGroup(cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); len(alivePIDsWith(t, hidden)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hidden sleep never started")
		}
	}
	<-dog.close(false)
	_ = cmd.Wait()
	for deadline := time.Now().Add(2 * time.Second); len(alivePIDsWith(t, hidden)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("left alive: %v", alivePIDsWith(t, hidden))
		}
	}
	// The orphan was this process's: reap it so the cgroup can go.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			break
		}
	}
	assertGroupGone(t, dirs)
}
