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
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestScenarioLoadsEndToEnd: sign-ups arriving at 20/s while 4 VUs
// browse, against a real server that answers in 20 ms: each scenario's
// figures are its own in the JSON summary, result.json and the reports,
// and a threshold names a scenario.
func TestScenarioLoadsEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a run of 2 s")
	}
	url := targettest.Start(t, target.Options{Delay: 20 * time.Millisecond})
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte(`
name: mixed
target: `+url+`
scenarios:
  signup:
    load: { open: { rate: 20/s, max_vus: 10, duration: 2s } }
    steps: [ { post: /users, name: sign up } ]
  browse:
    load: { closed: { vus: 4, duration: 2s } }
    steps: [ { get: /, name: home } ]
thresholds:
  - rate(scenario=signup) > 18/s
  - rate(scenario=signup) < 22/s
  - p95(latency, scenario=browse) < 1s
`), 0o644)
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout, stderr, code := cli(ctx, t, "run", path, "--json", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	var raw struct {
		Scenarios []struct {
			Scenario string `json:"scenario"`
			Load     string `json:"load"`
			result.Summary
		} `json:"scenarios"`
		Thresholds []result.ThresholdResult `json:"thresholds"`
	}
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(raw.Scenarios) != 2 {
		t.Fatalf("scenarios %+v", raw.Scenarios)
	}
	signup, browse := raw.Scenarios[0], raw.Scenarios[1]
	if signup.Scenario != "signup" || signup.Load != "open" || signup.Responses < 38 || signup.Responses > 40 || signup.Dropped != 0 || signup.VUs != 10 {
		t.Errorf("signup: %s load %q, %d responses, %d dropped, %d VUs; want open, 40 in 2 s, none dropped, 10 VUs", signup.Scenario, signup.Load, signup.Responses, signup.Dropped, signup.VUs)
	}
	if r := signup.ThroughputRPS; r < 19 || r > 21 {
		t.Errorf("signup: %.1f/s, want 20/s", r)
	}
	// 4 VUs busy all along: by Little's law, throughput × mean latency.
	busy := browse.ThroughputRPS * browse.Latency.Mean / 1000
	if browse.Scenario != "browse" || browse.Load != "closed" || browse.VUs != 4 || browse.VUsPeak != 4 || busy < 3.2 || busy > 4.1 {
		t.Errorf("browse: %s load %q, %d of %d VUs busy at most, %.1f/s × %.1f ms = %.2f busy; want closed, 4 of 4", browse.Scenario, browse.Load, browse.VUsPeak, browse.VUs, browse.ThroughputRPS, browse.Latency.Mean, busy)
	}
	if len(raw.Thresholds) != 3 {
		t.Fatalf("thresholds %+v", raw.Thresholds)
	}
	for _, th := range raw.Thresholds {
		if !th.Pass {
			t.Errorf("threshold %s failed: %s", th.Text, th.Detail)
		}
	}
	r, err := store.ReadResult(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Scenarios) != 2 || r.Scenarios[0].Load != "open" || r.Fingerprint.Workload != "per scenario" ||
		!strings.Contains(r.Fingerprint.Shape, "signup: open 20/s for 2s") || !strings.Contains(r.Fingerprint.Shape, "browse: closed 4 VUs") {
		t.Errorf("result.json scenarios %+v, fingerprint %+v", r.Scenarios, r.Fingerprint)
	}
	text, _, code := cli(ctx, t, "report", out)
	if code != 0 || !strings.Contains(text, "scenario load") || !strings.Contains(text, "4 of 4") {
		t.Errorf("exit %d, terminal report:\n%s", code, text)
	}
	for file, want := range map[string]string{"report.md": "| scenario | load | throughput | VUs busy |", "report.html": "<h3>Scenario loads</h3>"} {
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, want %q in it", file, err, want)
		}
	}
}
