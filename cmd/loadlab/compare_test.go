package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
)

// TestCompareRefusesUnlike is the case: an open 1.5/s experiment
// and a closed run of 10 VUs, each with its own server (loadlab target with
// another delay), are refused (exit 2) with every difference listed, A
// against B; --allow-different compares them, the differences above the
// table; two runs of one plan compare without a note; a result of an older
// loadlab, without a fingerprint, compares with one.
func TestCompareRefusesUnlike(t *testing.T) {
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
			"target: A " + urlA, "server: A ", "--allow-different"} {
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
