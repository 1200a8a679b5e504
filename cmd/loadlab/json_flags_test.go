package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestJSONFlags: compare --json prints what report A B --format json does,
// and report --json what report --format json does, on a recorded result;
// --json with another --format is refused.
func TestJSONFlags(t *testing.T) {
	t.Parallel()
	run := filepath.Join("..", "..", "internal", "report", "testdata", "run.json")
	same := func(a, b []string) {
		t.Helper()
		outA, errA, codeA := cli(t.Context(), t, a...)
		outB, errB, codeB := cli(t.Context(), t, b...)
		if codeA != 0 || codeB != 0 {
			t.Fatalf("exit %d (%s) and %d (%s)", codeA, errA, codeB, errB)
		}
		if outA != outB {
			t.Errorf("%s printed:\n%s\n%s printed:\n%s", strings.Join(a, " "), outA, strings.Join(b, " "), outB)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(outA), &v); err != nil {
			t.Errorf("%s: not JSON: %v\n%s", strings.Join(a, " "), err, outA)
		}
	}
	same([]string{"compare", run, run, "--json"}, []string{"report", run, run, "--format", "json"})
	same([]string{"report", run, "--json"}, []string{"report", run, "--format", "json"})
	if _, stderr, code := cli(t.Context(), t, "report", run, "--json", "--format", "md"); code != 2 || !strings.Contains(stderr, "give --json or --format, not both") {
		t.Errorf("report --json --format md: exit %d, %s", code, stderr)
	}
}

// TestOutLooksLikeASink: --out KIND=... (k6's sinks) is refused naming the
// flags the command has for live figures and for JSON. No load is sent.
func TestOutLooksLikeASink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--url", "http://127.0.0.1:1/", "-n", "1", "--out", "json=results.json"}, "live figures go to --push prometheus-rw=URL or --push otlp=URL, and --json prints the summary as JSON"},
		{[]string{"capacity", "--url", "http://127.0.0.1:1/", "--out", "prometheus-rw=http://127.0.0.1:1/"}, "live figures go to --metrics-addr (/metrics, for Prometheus to scrape), and --json prints the summary as JSON"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			t.Parallel()
			_, stderr, code := cli(t.Context(), t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %s; want exit 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// TestExperimentJSON: run --json on an experiment prints its outcome, as
// report DIR --json does, and nothing else on stdout. Four runs of three
// requests each.
func TestExperimentJSON(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{})
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(`
name: json-sweep
target: `+url+`
steps:
  - get: "/?delay={{ delay }}"
load: { closed: { vus: 1, iterations: 3 } }
params: { delay: [1ms, 2ms] }
repeat: 2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "sweep")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stdout, stderr, code := cli(ctx, t, "run", path, "--out", out, "--json", "--no-history")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	var o experiment.Outcome
	if err := json.Unmarshal([]byte(stdout), &o); err != nil {
		t.Fatalf("stdout is not the outcome's JSON: %v\n%s", err, stdout)
	}
	if o.Schema != experiment.SchemaExperiment || len(o.Runs) != 4 || o.Verdict == nil {
		t.Errorf("schema %q, %d runs, verdict %v", o.Schema, len(o.Runs), o.Verdict != nil)
	}
	again, stderr, code := cli(t.Context(), t, "report", out, "--json")
	if code != 0 || again != stdout {
		t.Errorf("report --json: exit %d, %s; it printed:\n%s\nrun --json printed:\n%s", code, stderr, again, stdout)
	}
}
