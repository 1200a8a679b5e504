package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestRunRepeat: run --repeat N writes N results into DIR/runs/NNN and sums
// them up; compare reads such a set (or a comma list) as N runs a side, and
// two sets of two servers on two ports are refused with the one flag that
// allows that difference alone, --allow-different=port.
func TestRunRepeat(t *testing.T) {
	t.Parallel()
	urlA := targettest.Start(t, target.Options{})
	urlB := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	stdout, stderr, code := cli(context.Background(), t, "run", urlA+"/", "-c", "1", "-n", "100", "--repeat", "4", "--out", a, "--no-history")
	if code != exitOK || !strings.Contains(stdout, "run 4 of 4") || !strings.Contains(stdout, "4 runs in "+a) {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	for i := 1; i <= 4; i++ {
		if _, err := os.Stat(filepath.Join(a, "runs", "00"+string(rune('0'+i)), "result.json")); err != nil {
			t.Error(err)
		}
	}
	if _, stderr, code := cli(context.Background(), t, "run", urlB+"/", "-c", "1", "-n", "100", "--repeat", "4", "--out", b, "--no-history", "--json"); code != exitOK {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	_, stderr, code = cli(context.Background(), t, "compare", a, b)
	if code != exitUsage || !strings.Contains(stderr, "port: A ") || !strings.Contains(stderr, "--allow-different=port") {
		t.Errorf("two ports: exit %d, %s; want %d naming --allow-different=port", code, stderr, exitUsage)
	}
	stdout, stderr, code = cli(context.Background(), t, "compare", a, b, "--allow-different=port")
	if code != exitOK || !strings.Contains(stdout, "(4 runs)") || strings.Contains(stdout, "untested") {
		t.Errorf("--allow-different=port: exit %d, %s\n%s", code, stderr, stdout)
	}
	if _, stderr, code := cli(context.Background(), t, "compare", a, b, "--allow-different=shape"); code != exitUsage {
		t.Errorf("--allow-different=shape does not allow a port: exit %d, %s", code, stderr)
	}
	if _, stderr, code := cli(context.Background(), t, "compare", a, b, "--allow-different=colour"); code != exitUsage || !strings.Contains(stderr, "want one of") {
		t.Errorf("--allow-different=colour: exit %d, %s", code, stderr)
	}
	// A comma list is a side; one that mixes two measurements is refused.
	list := filepath.Join(a, "runs", "001") + "," + filepath.Join(a, "runs", "002") + "," + filepath.Join(a, "runs", "003")
	if stdout, stderr, code := cli(context.Background(), t, "compare", list, a); code != exitOK || !strings.Contains(stdout, "(3 runs)") {
		t.Errorf("a comma list: exit %d, %s\n%s", code, stderr, stdout)
	}
	if _, stderr, code := cli(context.Background(), t, "compare", filepath.Join(a, "runs", "001")+","+filepath.Join(b, "runs", "001"), a); code != exitUsage || !strings.Contains(stderr, "measured different things") {
		t.Errorf("a mixed list: exit %d, %s", code, stderr)
	}
	plan := writePlan(t, map[string]string{"plan.yaml": "target: " + urlA + "\nsteps:\n  - get: /\nload: { closed: { vus: 1, iterations: 2 } }\nparams:\n  x: [1, 2]\n"})
	for _, bad := range [][]string{
		{"run", urlA + "/", "-n", "10", "--repeat", "3"},                                     // no --out
		{"run", plan, "--repeat", "3", "--out", filepath.Join(dir, "x")},                     // an experiment
		{"run", urlA + "/", "-n", "10", "--repeat", "3", "--out", dir + "/y", "--dashboard"}, // one run's outputs
	} {
		if _, stderr, code := cli(context.Background(), t, bad...); code != exitUsage {
			t.Errorf("%q: exit %d, %s; want %d", bad, code, stderr, exitUsage)
		}
	}
}
