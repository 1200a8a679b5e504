package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestCompareRefusesUnlike is the case: an open 1.5/s experiment
// and a closed run of 10 VUs, each with its own server (loadlab target with
// another delay), are refused (exit 2) with every difference listed, A
// against B; --allow-different compares them, the differences above the
// table; two runs of one plan compare without a note; a result of an older
// loadlab, without a fingerprint, compares with one.
func TestCompareRefusesUnlike(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("four runs of 1 to 2 s with a real server")
	}
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	serverA, urlA, markerA := targetServer(t, target.Options{Delay: time.Millisecond}, "")
	serverB, urlB, markerB := targetServer(t, target.Options{Delay: 3 * time.Millisecond}, "")
	openPlan := write("open.yaml", "name: open\ntarget: "+urlA+"\nsteps: [ { get: / } ]\nload: { open: { rate: 1.5/s, duration: 2s, max_vus: 10 } }\nrepeat: 2\nseed: 3\n"+serverA)
	closedPlan := write("closed.yaml", "name: closed\ntarget: "+urlB+"\nsteps: [ { get: / } ]\nload: { closed: { vus: 10, duration: 1s } }\n"+serverB)
	openOut, closedOut, closedAgain := filepath.Join(dir, "open"), filepath.Join(dir, "closed"), filepath.Join(dir, "closed-again")
	for _, r := range []struct{ plan, out string }{{openPlan, openOut}, {closedPlan, closedOut}, {closedPlan, closedAgain}} {
		if stdout, stderr, code := cli(ctx, t, "run", r.plan, "--out", r.out); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", r.plan, code, stderr, stdout)
		}
	}
	noOrphans(t, markerA)
	noOrphans(t, markerB)

	for _, args := range [][]string{{"compare", openOut, closedOut}, {"report", openOut, closedOut, "--format", "json"}} {
		stdout, stderr, code := cli(ctx, t, args...)
		if code != exitUsage || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout)
		}
		for _, want := range []string{"A and B measured different things", "workload: A open · B closed", "shape: A 1.5/s for 2s, at most 10 VUs · B 10 VUs for 1s",
			"port: A " + urlA[strings.LastIndex(urlA, ":")+1:], "server: A ", "--allow-different"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, stderr)
			}
		}
	}

	stdout, stderr, code := cli(ctx, t, "compare", openOut, closedOut, "--allow-different")
	head, table, _ := strings.Cut(stdout, "figure ")
	if code != 0 || !strings.Contains(head, "A and B measured different things") || !strings.Contains(head, "  workload: A open · B closed") || !strings.Contains(table, "throughput") {
		t.Errorf("--allow-different: exit %d %s\n%s", code, stderr, stdout)
	}
	stdout, _, code = cli(ctx, t, "report", openOut, closedOut, "--allow-different", "--format", "json")
	var view struct {
		Differences []struct{ Field, A, B string }
	}
	if err := json.Unmarshal([]byte(stdout), &view); code != 0 || err != nil || len(view.Differences) != 4 || view.Differences[0].Field != "workload" {
		t.Errorf("report --format json --allow-different: exit %d, %v, %+v", code, err, view.Differences)
	}

	stdout, stderr, code = cli(ctx, t, "report", openOut, closedOut, "--allow-different", "--format", "csv")
	if code != 0 || !strings.HasPrefix(stdout, "figure,") || !strings.Contains(stderr, "  workload: A open · B closed\n") {
		t.Errorf("report --format csv --allow-different: exit %d, the differences not on stderr:\n%s\n%s", code, stderr, stdout)
	}

	stdout, stderr, code = cli(ctx, t, "compare", closedOut, closedAgain)
	if code != 0 || strings.Contains(stdout, "different") || strings.Contains(stdout, "fingerprint") || strings.Contains(stdout, " · B ") {
		t.Errorf("the same plan twice: exit %d %s\n%s", code, stderr, stdout)
	}

	// An older result: no fingerprint.
	path := filepath.Join(closedAgain, "result.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r result.Result
	if err := json.Unmarshal(data, &r); err != nil || r.Fingerprint == nil || r.Fingerprint.Workload != "closed" {
		t.Fatalf("result.json fingerprint %+v, %v", r.Fingerprint, err)
	}
	r.Fingerprint = nil
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	result.Encode(f, &r)
	f.Close()
	stdout, stderr, code = cli(ctx, t, "compare", closedOut, closedAgain)
	if code != 0 || !strings.Contains(stdout, "B has no plan fingerprint") {
		t.Errorf("an older B: exit %d %s\n%s", code, stderr, stdout)
	}
}

// TestMatrixFactorThinVsPuma is the matrix: a server param listed
// first (two loadlab target configurations: one worker, "thin", against
// four, "puma"), then the conditions c (VUs) and per_vu (iterations per
// VU), with the baseline naming server. The verdict says it compares
// server, and why; compares Puma with Thin at each c and per_vu; and never
// recommends a c or a per_vu, as it did when it compared along the last
// param.
func TestMatrixFactorThinVsPuma(t *testing.T) {
	if testing.Short() {
		t.Skip("16 runs, each with a server started")
	}
	addr := targettest.FreeAddr(t)
	argv, _ := targettest.Command(t, target.Options{}, addr)
	marker := fmt.Sprintf("-test.run=^NoMatrix%d$", time.Now().UnixNano())
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	delay := int64(3 * time.Millisecond)
	os.WriteFile(path, []byte(fmt.Sprintf(`
name: thin-vs-puma
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: "{{ c }}", iterations: "{{ per_vu }}" } }
server:
  run: "exec %[2]s '%[3]s'"
  env:
    LOADLAB_TARGETTEST_ADDR: %[1]s
    LOADLAB_TARGETTEST_OPTIONS: "{{ server }}"
  ready: http://%[1]s/health
params:
  server:
    thin: '{"Delay": %[4]d, "Workers": 1}'
    puma: '{"Delay": %[4]d, "Workers": 4}'
  c: [2, 4]
  per_vu: [5, 10]
vary: matrix
baseline: { server: thin }
repeat: 2
seed: 5
`, addr, argv[0], marker, delay)), 0o644)
	out := filepath.Join(dir, "results")
	// The full summary: its tables are headed with what each point is
	// compared with, and its recommendation is a block of its own.
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out, "--summary", "full")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	noOrphans(t, marker)
	const factor = "factor: server, each value against server=thin, at each combination of c and per_vu (the only param the baseline names; compare: PARAM names another)"
	if !strings.Contains(stdout, "\n"+factor+"\n") || !strings.Contains(stdout, "vs the same point with server=thin") {
		t.Errorf("the verdict does not say which factor it compares:\n%s", stdout)
	}
	if !strings.Contains(stderr+stdout, "factor: server, compared at each combination of the other params (the only param the baseline names)") {
		t.Errorf("the start of the run does not say which factor it compares:\n%s", stderr)
	}
	_, rec, _ := strings.Cut(stdout, "\nrecommendation\n")
	rec, _, _ = strings.Cut(rec, "\n\n")
	rec = trustedPick(t, strings.TrimPrefix(rec, "  "))
	lines := strings.Split(strings.TrimSpace(rec), "\n")
	conditions := map[string]bool{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		at, said, ok := strings.Cut(l, ", server=puma vs thin: ")
		if !ok || !strings.HasPrefix(at, "at c=") {
			t.Errorf("a recommendation line not about server at a condition: %q", l)
			continue
		}
		conditions[at] = true
		// 2 VUs: four workers serve them twice as fast as one; 4 VUs, four times.
		if !strings.HasPrefix(said, "throughput +") && !strings.Contains(said, "untested") {
			t.Errorf("%s: %q, want Puma's throughput higher", at, said)
		}
	}
	if len(conditions) != 4 || !conditions["at c=4 per_vu=10"] {
		t.Errorf("recommendation for %v, want the 4 combinations of c and per_vu:\n%s", conditions, rec)
	}
	data, err := os.ReadFile(filepath.Join(out, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o experiment.Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	if v := o.Verdict; o.Compare != "server" || o.CompareWhy != "baseline" || v.ComparedParam != "server" || v.ComparedWhy != "baseline" || len(v.Sweeps) != 0 || len(v.Named) != 4 {
		t.Errorf("experiment.json: compare %q (%s), verdict along %q (%s), %d sweeps, %d named comparisons", o.Compare, o.CompareWhy, v.ComparedParam, v.ComparedWhy, len(v.Sweeps), len(v.Named))
	}
	// report reads it back alike.
	again, _, code := cli(context.Background(), t, "report", out)
	if code != 0 || !strings.Contains(again, "\n"+factor+"\n") || !strings.Contains(again, rec) {
		t.Errorf("report of the experiment: exit %d\n%s", code, again)
	}
}
