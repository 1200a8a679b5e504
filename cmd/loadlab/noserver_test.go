package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/store"
)

// TestNoServer: --no-server (or --set server=null) points a plan with a
// server section at a server that is already running, at the plan's own
// target. The section's command would fail the run if it were started.
func TestNoServer(t *testing.T) {
	t.Parallel()
	url, hits := counting(t)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
steps: [ { get: / } ]
load: { closed: { vus: 2, iterations: 5 } }
server:
  run: [ "sh", "-c", "echo would start; exit 7" ]
  ready: tcp://127.0.0.1:1
  ready_timeout: 2s
`, url)})
	if _, stderr, code := cli(context.Background(), t, "run", path); code != 1 {
		t.Fatalf("with its server section the plan should fail to start its server: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"--no-server"}, {"--set", "server=null"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			before := hits.Load()
			out := t.TempDir()
			stdout, stderr, code := cli(context.Background(), t, append([]string{"run", path, "--out", out}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
			}
			if got := hits.Load() - before; got != 10 {
				t.Errorf("the running server got %d requests, want 10", got)
			}
			r, err := store.ReadResult(out)
			if err != nil {
				t.Fatal(err)
			}
			if r.Server != nil {
				t.Errorf("a server was watched: %+v", r.Server)
			}
			// The result says the plan ran without its server.
			if !slices.Contains(r.PlanInputs, "--set server=null") {
				t.Errorf("plan inputs %q do not record --set server=null", r.PlanInputs)
			}
		})
	}
	if _, stderr, code := cli(context.Background(), t, "run", "--url", url, "-n", "1", "--no-server"); code != 2 || !strings.Contains(stderr, "--no-server") {
		t.Errorf("quick mode with --no-server: exit %d: %s", code, stderr)
	}
}

// TestSetParamsNotice: --set params.x=[...] without the file's baseline
// runs the experiment with the first value as baseline, and says so on
// stderr before the first run.
func TestSetParamsNotice(t *testing.T) {
	t.Parallel()
	url, hits := counting(t)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
steps: [ { get: "/?n={{ n }}" } ]
load: { closed: { vus: 1, iterations: 2 } }
params: { n: [1, 5, 8] }
baseline: { n: 5 }
repeat: 1
`, url)})
	out := t.TempDir()
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out, "--set", "params.n=[2, 3]")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	notice := "loadlab: notice: --set params.n=[2, 3]: the baseline n=5 (" + path + ":6:16) is not among these values (2, 3): the first, 2, is the baseline"
	if first, _, _ := strings.Cut(stderr, "\n"); first != notice {
		t.Errorf("stderr starts\n%s\nwant\n%s", first, notice)
	}
	if n := hits.Load(); n != 4 {
		t.Errorf("%d requests, want 2 runs of 2", n)
	}
}
