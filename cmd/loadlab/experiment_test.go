package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// sweepPlan sweeps the workers of loadlab target (a real server, restarted
// for every run). Each request waits 10 ms in a worker, and 4 VUs send them,
// so throughput grows with workers up to 4, then stays: the knee is at 4
// whatever the machine, because the bound is waiting, not CPU.
func sweepPlan(t *testing.T, repeat int, extra string) (path, marker string) {
	addr := targettest.FreeAddr(t)
	argv, _ := targettest.Command(t, target.Options{}, addr)
	marker = fmt.Sprintf("-test.run=^NoSweep%d$", time.Now().UnixNano())
	dir := t.TempDir()
	path = filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
name: workers
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: 4, duration: 1s } }
server:
  run: "echo {{ workers }} >> %[2]s/starts.log; exec %[3]s '%[4]s'"
  env:
    LOADLAB_TARGETTEST_ADDR: %[1]s
    LOADLAB_TARGETTEST_OPTIONS: '{"Delay": %[5]d, "Workers": {{ workers }}}' 
  ready: http://%[1]s/health
params: { workers: 1..6 }
baseline: { workers: 4 }
repeat: %[6]d
seed: 11
%[7]s`, addr, dir, argv[0], marker, int64(10*time.Millisecond), repeat, extra)), 0o644)
	return path, marker
}

func TestSweepVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("24 runs of 1 s")
	}
	path, marker := sweepPlan(t, 4, "")
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	noOrphans(t, marker)
	data, err := os.ReadFile(filepath.Join(out, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o experiment.Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	if !o.Complete || len(o.Runs) != 24 {
		t.Fatalf("complete %v, %d runs", o.Complete, len(o.Runs))
	}
	v := o.Verdict
	if len(v.Sweeps) != 1 || v.Sweeps[0].X[v.Sweeps[0].Pick] != 4 {
		t.Errorf("recommendation %q, want workers=4", v.Recommendation)
	}
	if !strings.HasPrefix(trustedPick(t, v.Recommendation), "workers=4:") || !strings.Contains(stdout, "recommendation") {
		t.Errorf("recommendation %q", v.Recommendation)
	}
	tp := v.Figures[0]
	checked := 0
	for _, r := range tp.Rows {
		switch r.Point {
		case "workers=1", "workers=2", "workers=5", "workers=6":
			checked++
		}
		switch r.Point {
		case "workers=1", "workers=2":
			if !r.Significant || r.Delta > -0.3 {
				t.Errorf("%s should be significantly slower than workers=4: %+v", r.Point, r)
			}
		case "workers=5", "workers=6":
			if r.Delta < -0.1 || r.Delta > 0.1 {
				t.Errorf("%s should do as well as workers=4: %+v", r.Point, r)
			}
		}
	}
	if tp.Name != "throughput" || checked != 4 {
		t.Errorf("figure %q: %d of the rows for workers 1, 2, 5 and 6", tp.Name, checked)
	}
	// Every run has its own result and server log.
	for _, r := range o.Runs {
		if _, err := os.Stat(filepath.Join(out, r.Dir, "server.log")); err != nil {
			t.Errorf("run %d: %v", r.Index, err)
		}
	}
}

// TestResume kills an experiment mid-way (SIGKILL: nothing gets to clean
// up) and runs it again: the second run does only what is left, and the
// experiment ends with exactly one record of every run.
func TestResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("an experiment killed and resumed")
	}
	path, marker := sweepPlan(t, 2, "")
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", path, "--out", out)
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once some runs are recorded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n := doneRuns(t, out); n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no run finished in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	noOrphans(t, marker) // the server died with loadlab (Pdeathsig)
	before := doneRuns(t, out)

	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s\n%s", code, stderr, stdout)
	}
	if got := strings.Count(stderr, "done before, skipped"); got != before {
		t.Errorf("the resumed run skipped %d runs, %d were done", got, before)
	}
	h, err := store.OpenHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	runs, _ := h.Runs()
	seen := map[int]bool{}
	for _, r := range runs {
		if r.Status != store.StatusDone || seen[r.Index] {
			t.Errorf("run %+v", r.Index)
		}
		seen[r.Index] = true
	}
	if len(runs) != 12 {
		t.Errorf("%d runs recorded, want 12", len(runs))
	}
	starts, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "starts.log"))
	// Every run started its server once, and the run killed mid-way once more.
	if n := strings.Count(string(starts), "\n"); n < 12 || n > 13 {
		t.Errorf("the server started %d times for 12 runs: a finished run was done again", n)
	}
	// Changing the plan is refused without --fresh.
	os.WriteFile(path, append(mustRead(t, path), []byte("\n# changed\n")...), 0o644)
	_, stderr, code = cli(context.Background(), t, "run", path, "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "different plan") || !strings.Contains(stderr, "--fresh") {
		t.Errorf("changed plan: exit %d, %s", code, stderr)
	}
}

func doneRuns(t *testing.T, dir string) int {
	if _, err := os.Stat(filepath.Join(dir, store.HistoryFile)); err != nil {
		return 0
	}
	h, err := store.OpenHistory(dir)
	if err != nil {
		return 0
	}
	defer h.Close()
	runs, _ := h.Runs()
	return len(runs)
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompareCommand(t *testing.T) {
	t.Parallel()
	// 1 ms against 30 ms, judged on p50: on a busy machine (load average
	// 10) the 2 ms server's p95 read 16 ms, over the 6 ms one's 10.7.
	url := targettest.Start(t, target.Options{Delay: time.Millisecond})
	slow := targettest.Start(t, target.Options{Delay: 30 * time.Millisecond})
	a, b := t.TempDir(), t.TempDir()
	for _, run := range []struct{ url, dir string }{{url, a}, {slow, b}} {
		if _, stderr, code := cli(context.Background(), t, "run", "--url", run.url+"/", "-c", "2", "-d", "1s", "--out", run.dir); code != 0 {
			t.Fatal(stderr)
		}
	}
	// Two servers, two origins: unlike, compared when told so.
	if _, stderr, code := cli(context.Background(), t, "compare", a, b, "--fail-on", "p50 +50%"); code != exitUsage || !strings.Contains(stderr, "port: A ") || !strings.Contains(stderr, "--allow-different=port") {
		t.Errorf("another target: exit %d %s", code, stderr)
	}
	stdout, stderr, code := cli(context.Background(), t, "compare", a, b, "--fail-on", "p50 +50%", "--allow-different")
	if code != exitThreshold || !strings.Contains(stderr, "regression") || !strings.Contains(stdout, "p50 latency") {
		t.Errorf("slower B: exit %d\n%s\n%s", code, stderr, stdout)
	}
	if _, _, code := cli(context.Background(), t, "compare", b, a, "--fail-on", "p50 +50%", "--allow-different"); code != 0 {
		t.Errorf("faster B: exit %d", code)
	}
	if _, stderr, code := cli(context.Background(), t, "compare", a, b, "--fail-on", "latency up"); code != exitUsage {
		t.Errorf("bad rule: exit %d %s", code, stderr)
	}
}

// TestStepVerdictNamesTheStep: a param that slows only login (the target
// waits for the delay its query asks for) shows in login's own verdict
// table, leaves browse's alone, and the recommendation names login. The
// load is open, so that browse is asked for at the same rate at both
// points (a closed load would send it less often next to a slower login).
func TestStepVerdictNamesTheStep(t *testing.T) {
	if testing.Short() {
		t.Skip("10 runs of 1 s")
	}
	url := targettest.Start(t, target.Options{})
	path := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(path, []byte(`
name: steps
target: `+url+`
steps:
  - get: "/login?delay={{ login_delay }}"
    name: login
  - get: /browse?delay=20ms
    name: browse
load: { open: { rate: 40/s, max_vus: 20, duration: 1s } }
params: { login_delay: [20ms, 80ms] }
repeat: 5
seed: 3
`), 0o644)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code := cli(ctx, t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	data, err := os.ReadFile(filepath.Join(out, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o experiment.Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	v := o.Verdict
	if len(v.Steps) != 2 || v.Steps[0].Name != "login" || v.Steps[1].Name != "browse" {
		t.Fatalf("step verdicts %+v", v.Steps)
	}
	slow := "login_delay=80ms"
	row := func(step int) experiment.FigureRow {
		for _, r := range v.Steps[step].Table(experiment.FigureP95).Rows {
			if r.Point == slow {
				return r
			}
		}
		t.Fatalf("no row %s", slow)
		return experiment.FigureRow{}
	}
	// 20 ms to 80 ms is +300%; the engine's and the loopback's own time
	// add a little to both, more on a busy machine.
	if r := row(0); !r.Significant || r.Delta < 1.5 || r.Delta > 3.2 {
		t.Errorf("login p95 at %s: %+v, want about +300%%, significant", slow, r)
	}
	if r := row(1); r.Significant && (r.Delta < -experiment.StepChangeShare || r.Delta > experiment.StepChangeShare) {
		t.Errorf("browse p95 at %s: %+v, want unchanged", slow, r)
	}
	if len(v.StepChanges) != 1 || v.StepChanges[0].Step != "login" || v.StepChanges[0].Point != slow {
		t.Fatalf("step changes %+v, want login at %s", v.StepChanges, slow)
	}
	if !strings.Contains(v.Recommendation, slow+" vs login_delay=20ms: login p95 +") || !strings.Contains(v.Recommendation, "; no other step's p95 changed by 5% or more") ||
		!strings.Contains(stdout, slow+" vs login_delay=20ms: login p95 +") || strings.Contains(stdout, "step changed on its own: ") {
		// The summary says the step change once, under the recommendation.
		t.Errorf("recommendation %q; stdout:\n%s", v.Recommendation, stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err == nil && !strings.Contains(string(md), "### By step") {
		t.Errorf("report.md has no step tables")
	}
}

// trustedPick is a recommendation without its first line when that line
// says the runs were measured on a busy machine (NOT TRUSTED YET, or
// trusted for some figures although), which a loaded test machine may well
// cause; the test logs it.
func trustedPick(t *testing.T, rec string) string {
	t.Helper()
	if first, rest, ok := strings.Cut(rec, "\n"); ok && (strings.HasPrefix(first, "NOT TRUSTED YET") || strings.HasPrefix(first, "trusted for ")) {
		t.Logf("the machine was busy: %s", first)
		return rest
	}
	return rec
}

// TestRepeatAutoRealLoad: repeat: auto against real servers (two loadlab
// targets, B doing three times A's CPU work a request) looks after each
// round from the 6th and stops when the throughput change is decided,
// within max_repeat, with B slower; experiment.json keeps the looks. The
// change is large, so that a busy machine cannot hide it.
func TestRepeatAutoRealLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("up to 16 runs of 1 s")
	}
	a := targettest.Start(t, target.Options{CPU: 300 * time.Microsecond})
	b := targettest.Start(t, target.Options{CPU: 900 * time.Microsecond})
	path := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
name: auto
target: "{{ side }}"
steps: [ { get: / } ]
load: { closed: { vus: 1, duration: 1s } }
params:
  side: { A: "%s", B: "%s" }
baseline: { side: A }
repeat: auto
max_repeat: 8
seed: 3
`, a, b)), 0o644)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code := cli(ctx, t, "run", path, "--out", out, "--no-history")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	data, err := os.ReadFile(filepath.Join(out, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o experiment.Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	s := o.Sequential
	if s == nil || s.Decision != experiment.Decided || s.Rounds < 6 || s.Rounds > 8 || len(s.Looks) == 0 || o.Repeat != s.Rounds {
		t.Fatalf("sequential %+v (repeat %d), want decided in 6 to 8 rounds", s, o.Repeat)
	}
	last := s.Looks[len(s.Looks)-1]
	if len(last.Comparisons) != 1 || last.Comparisons[0].Delta > -0.3 {
		t.Errorf("last look %+v: want B's throughput well below A's", last)
	}
	t.Logf("rounds %d, looks %d, last %+v", s.Rounds, len(s.Looks), last.Comparisons)
	if !strings.Contains(stdout, "repeat: auto stopped after") && !strings.Contains(stdout, "repeat: auto: decided after") {
		t.Errorf("the output does not say when repeat: auto stopped:\n%s", stdout)
	}
}
