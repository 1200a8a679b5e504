//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/limits"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
)

// limitCgroups lists the cgroups this process made for servers, under its
// memory cgroup; it skips the test where no memory cgroup is writable.
func limitCgroups(t *testing.T) []string {
	t.Helper()
	g, err := limits.Create(limits.Limits{Memory: 64 << 20})
	var u *limits.UnavailableError
	if errors.As(err, &u) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(g.Dirs()[0])
	g.Remove()
	matches, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("loadlab-%d-*", os.Getpid())))
	return matches
}

func limitedTargetPlan(t *testing.T, o target.Options, lim, load string) (path, marker string) {
	path, _, marker = limitedTargetPlanURL(t, o, lim, load)
	return path, marker
}

func limitedTargetPlanURL(t *testing.T, o target.Options, lim, load string) (path, url, marker string) {
	srv, url, marker := targetServer(t, o, "")
	return writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
steps: [ { get: / } ]
load: %s
%s
  limits: %s
`, url, load, srv, lim)}), url, marker
}

// runLimited runs a CPU-bound server (2 ms of CPU a request, 8 at a time,
// 8 VUs) for 4 s under lim, and returns its result and summary.
func runLimited(t *testing.T, lim string) (*result.Result, string) {
	t.Helper()
	path, marker := limitedTargetPlan(t, target.Options{CPU: 2 * time.Millisecond, Workers: 8},
		lim, "{ closed: { vus: 8, duration: 4s } }")
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s\n%s", lim, code, stderr, stdout)
	}
	noOrphans(t, marker)
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Server == nil || r.Server.Limits == nil {
		t.Fatalf("%s: no limits in the result", lim)
	}
	return r, stdout
}

// On 2 CPUs the CPU-bound server answers about twice what it answers on 1:
// at least 1.4x, as a 2-core machine also runs loadlab beside the server.
// The bound is checked when the load average is below the CPUs; on a busier
// machine the server's CPUs are shared with the rest, and the test only logs
// the ratio. Either way, on 1 CPU the server never uses more than one core.
func TestLimitsCPUsScaleThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: two 4 s runs")
	}
	limitCgroups(t)
	cpus := len(mustAffinity(t))
	if cpus < 2 {
		t.Skipf("%d CPU: nothing to compare", cpus)
	}
	rps := map[int]float64{}
	for _, n := range []int{1, 2} {
		r, stdout := runLimited(t, fmt.Sprintf("{ cpus: %d }", n))
		l := r.Server.Limits
		if l.Set != fmt.Sprintf("cpus %d", n) || len(mustList(t, l.CPUList)) != n || r.Server.Cores != float64(n) {
			t.Fatalf("cpus %d: limits %+v, cores %v", n, l, r.Server.Cores)
		}
		if !strings.Contains(stdout, "limits    cpus ") {
			t.Errorf("the summary does not show the limits:\n%s", stdout)
		}
		if n == 1 && r.Server.CPUAvg > 105 {
			t.Errorf("on 1 CPU the server used %.0f%% of a core on average", r.Server.CPUAvg)
		}
		rps[n] = r.Summary.ThroughputRPS
	}
	ratio := rps[2] / rps[1]
	load := loadAverage(t)
	t.Logf("cpus 1: %.0f req/s, cpus 2: %.0f req/s: %.2fx (load average %.1f on %d CPUs)", rps[1], rps[2], ratio, load, cpus)
	if load >= float64(cpus) {
		// Measured so at load 13 on this 2-core machine: 0.79x. The CPUs are
		// the server's to use, not to have; TestLimitsCPUQuotaThrottles holds
		// its bounds under load.
		t.Logf("the machine is busy (load average %.1f on %d CPUs): the 1.4x bound is not checked", load, cpus)
	} else if ratio < 1.4 || ratio > 2.3 {
		t.Errorf("cpus 2 gives %.2fx the throughput of cpus 1 (%.0f and %.0f req/s), want 1.4x to 2.3x", ratio, rps[2], rps[1])
	}
	if left := limitCgroups(t); len(left) > 0 {
		t.Errorf("cgroups left after the runs: %v", left)
	}
}

// A quota of 50% gives twice the throughput of 25%, and both are held even
// on a busy machine (a quarter and a half of one core are there to get);
// the time the quota held the server back is reported as cpu_throttled.
func TestLimitsCPUQuotaThrottles(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: two 4 s runs")
	}
	limitCgroups(t)
	rps := map[string]float64{}
	for _, q := range []string{"25%", "50%"} {
		r, stdout := runLimited(t, "{ cpus: "+q+" }")
		l := r.Server.Limits
		th := l.CPUThrottled
		if th == nil || th.Seconds <= 0.5 || th.ThrottledPeriods == 0 || th.Periods < th.ThrottledPeriods {
			t.Errorf("%s: throttling %+v", q, th)
		}
		if !strings.Contains(stdout, "cpu_throttled ") {
			t.Errorf("the summary does not show the throttling:\n%s", stdout)
		}
		rps[q] = r.Summary.ThroughputRPS
	}
	ratio := rps["50%"] / rps["25%"]
	t.Logf("cpus 25%%: %.0f req/s, 50%%: %.0f req/s: %.2fx", rps["25%"], rps["50%"], ratio)
	if ratio < 1.6 || ratio > 2.4 {
		t.Errorf("50%% gives %.2fx the throughput of 25%%, want 1.6x to 2.4x", ratio)
	}
}

func loadAverage(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	var load float64
	fmt.Sscan(string(b), &load)
	return load
}

func mustAffinity(t *testing.T) []int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return mustList(t, strings.TrimSpace(v))
		}
	}
	t.Fatal("no Cpus_allowed_list")
	return nil
}

func mustList(t *testing.T, s string) []int {
	list, err := limits.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// A server that keeps 1 MiB a request, 20 a second (1 VU, 50 ms a
// response), is killed at its 64 MiB limit: the run fails (exit 1) saying
// so with the limit, the cgroup's peak and PSS near the limit (the samples
// every 250 ms see it grow), keeps what it measured, and leaves neither
// processes nor cgroups.
func TestLimitsMemoryOOMFailsTheRun(t *testing.T) {
	if len(limitCgroups(t)) > 0 {
		t.Fatal("cgroups left by an earlier test")
	}
	path, marker := limitedTargetPlan(t, target.Options{Hold: 1 << 20, Delay: 50 * time.Millisecond},
		"{ memory: 64MiB, swap: 0 }", "{ closed: { vus: 1, duration: 20s } }")
	out := t.TempDir()
	began := time.Now()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 1 || time.Since(began) > 15*time.Second {
		t.Fatalf("exit %d after %v, want 1 well before the load's 20 s: %s\n%s", code, time.Since(began), stderr, stdout)
	}
	t.Logf("stderr: %s", strings.SplitN(stderr, "\n", 2)[0])
	if !strings.Contains(stderr, "server killed at its 64 MiB memory limit after ") || !strings.Contains(stderr, ", at PSS ") || !strings.Contains(stderr, "(cgroup peak 64 MiB; 1 process killed") {
		t.Errorf("stderr does not say why:\n%s", stderr)
	}
	noOrphans(t, marker)
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	sv := r.Server
	if sv == nil || sv.Limits == nil || sv.Limits.OOMKills < 1 || sv.Limits.Memory != 64<<20 ||
		sv.Limits.MemoryPeak < 62<<20 || sv.Limits.MemoryPeak > 65<<20 || sv.Limits.Swap == nil || *sv.Limits.Swap != 0 {
		t.Fatalf("server limits %+v", sv.Limits)
	}
	if !strings.HasPrefix(sv.Exit, "killed at its 64 MiB memory limit") || sv.Limits.OOM != sv.Exit || r.Summary.Requests == 0 {
		t.Errorf("exit %q, oom %q, requests %d", sv.Exit, sv.Limits.OOM, r.Summary.Requests)
	}
	if !strings.Contains(stdout, "killed at its 64 MiB memory limit") {
		t.Errorf("the summary does not say it:\n%s", stdout)
	}
	if left := limitCgroups(t); len(left) > 0 {
		t.Errorf("cgroups left after the OOM kill: %v", left)
	}
}

// Ctrl-C in the middle of a limited run: the cgroups existed during it and
// are gone after it.
func TestLimitsCgroupsGoneAfterInterrupt(t *testing.T) {
	if len(limitCgroups(t)) > 0 {
		t.Fatal("cgroups left by an earlier test")
	}
	path, url, marker := limitedTargetPlanURL(t, target.Options{}, "{ cpus: 1, memory: 256MiB }", "{ closed: { vus: 2, duration: 20s } }")
	ctx, cancel := context.WithCancel(context.Background())
	seen := make(chan []string, 1)
	go func() {
		defer cancel()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if dirs := limitCgroups(t); len(dirs) > 0 && answers(url) {
				time.Sleep(500 * time.Millisecond) // into the load
				seen <- dirs
				return
			}
		}
		seen <- nil
	}()
	out := t.TempDir()
	_, stderr, code := cli(ctx, t, "run", path, "--out", out)
	dirs := <-seen
	if len(dirs) == 0 {
		t.Fatalf("no cgroup was seen during the run (exit %d: %s)", code, stderr)
	}
	noOrphans(t, marker)
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s is still there after Ctrl-C", d)
		}
	}
	r, err := store.ReadResult(out)
	if err != nil || !r.Summary.Interrupted || r.Server == nil || r.Server.Limits == nil || r.Server.Limits.Mechanism == "" {
		t.Fatalf("result: %v %+v", err, r)
	}
}

// An experiment with a point whose limit this machine cannot enforce (more
// CPUs than loadlab may use) stops before its first run, naming the point
// and what is missing.
func TestLimitsRefusedBeforeAnyLoad(t *testing.T) {
	limitCgroups(t)
	srv, url, marker := targetServer(t, target.Options{}, "")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
name: refused
target: %s
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 5 } }
%s
  limits: { cpus: "{{ c }}" }
params: { c: [1, 4096] }
repeat: 1
`, url, srv)})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code == 0 || !strings.Contains(stderr, "point c=4096 (2 of 2): server.limits.cpus cannot be enforced: 4096 CPUs asked, loadlab may use ") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "001")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run was made: %v", err)
	}
	noOrphans(t, marker)
	if left := limitCgroups(t); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// loadlab SIGKILLed mid-run: its watchdog ends the limited server and
// removes its cgroups.
func TestLimitsCgroupsGoneAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("a loadlab process killed")
	}
	limitCgroups(t)
	path, marker := limitedTargetPlan(t, target.Options{}, "{ memory: 256MiB }", "{ closed: { vus: 2, duration: 20s } }")
	cmd := exec.Command(os.Args[0], "run", path, "--out", t.TempDir())
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	g, err := limits.Create(limits.Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(g.Dirs()[0])
	g.Remove()
	var dirs []string
	for deadline := time.Now().Add(15 * time.Second); len(dirs) == 0 || len(alive(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the limited server never started (cgroups %v)", dirs)
		}
		dirs, _ = filepath.Glob(filepath.Join(parent, fmt.Sprintf("loadlab-%d-*", cmd.Process.Pid)))
	}
	time.Sleep(300 * time.Millisecond) // into the load
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	for {
		left, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("loadlab-%d-*", cmd.Process.Pid)))
		if len(left) == 0 && len(alive(marker)) == 0 {
			break
		}
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("5 s after loadlab's SIGKILL: cgroups %v, processes %v", left, alive(marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("cgroups and server gone %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// The limited server crashes mid-run (SIGABRT: a Go server's crash, with
// its goroutines dumped): the run fails saying the server exited, and its
// cgroups are gone, as after a normal end, Ctrl-C and an OOM kill.
func TestLimitsCgroupsGoneAfterServerCrash(t *testing.T) {
	if len(limitCgroups(t)) > 0 {
		t.Fatal("cgroups left by an earlier test")
	}
	path, url, marker := limitedTargetPlanURL(t, target.Options{}, "{ memory: 256MiB }", "{ closed: { vus: 2, duration: 20s } }")
	type ran struct {
		stdout, stderr string
		code           int
	}
	done := make(chan ran, 1)
	go func() {
		stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", t.TempDir())
		done <- ran{stdout, stderr, code}
	}()
	// Ready (a slow machine takes seconds to start it), limited, and loaded.
	var pids []string
	ready := func() bool {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}
	for deadline := time.Now().Add(15 * time.Second); len(pids) == 0 || len(limitCgroups(t)) == 0 || !ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the limited server never started")
		}
		pids = alive(marker)
	}
	time.Sleep(300 * time.Millisecond) // into the load
	// Each of pids is "PID cmdline"; a pid of 0 would signal our group.
	for _, p := range pids {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGABRT)
		}
	}
	var r ran
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the run did not end after its server crashed")
	}
	t.Logf("exit %d; stderr: %s", r.code, strings.SplitN(r.stderr, "\n", 2)[0])
	if r.code == 0 || !strings.Contains(r.stderr, "the server under test exited mid-run") || !strings.Contains(r.stderr, "server crashed") {
		t.Errorf("exit %d after the server crashed: %s\n%s", r.code, r.stderr, r.stdout)
	}
	noOrphans(t, marker)
	if left := limitCgroups(t); len(left) > 0 {
		t.Errorf("cgroups left after the server crashed: %v", left)
	}
}
