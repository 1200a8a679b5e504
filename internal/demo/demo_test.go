package demo

import (
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/stats"
)

// TestWrittenPlanRunsAsItIs: the demo.yaml beside the demo's results loads
// with no environment, with this machine's binary and address in it.
func TestWrittenPlanRunsAsItIs(t *testing.T) {
	bin, addr := `/opt/load "lab"/bin/loadlab`, "127.0.0.1:29999"
	text := Written(bin, addr)
	if strings.Contains(string(text), "env.") {
		t.Fatalf("the written plan still reads the environment:\n%s", text)
	}
	p, err := plan.Parse("demo.yaml", text, plan.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.ServerSpec(p.Experiment.BaselineParams())
	if err != nil {
		t.Fatal(err)
	}
	if spec.Argv[0] != bin || p.Target.Host != addr || !strings.Contains(strings.Join(spec.Argv, " "), "--cpu-work "+CPUWork.String()) {
		t.Errorf("server %q, target %v", spec.Argv, p.Target)
	}
}

// TestDemoCanReachAVerdict: the demo sweeps a numeric param over at least
// five levels (enough for a USL fit) with enough repeats that a difference
// from the baseline can be significant at α = 0.05, and few enough runs to
// finish in about a minute.
func TestDemoCanReachAVerdict(t *testing.T) {
	p, err := plan.Parse("demo.yaml", Plan, plan.Options{Env: Env("/bin/loadlab", "127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	e := p.Experiment
	if len(e.Params) != 1 || !e.Params[0].Numeric || len(e.Params[0].Values) < experiment.MinUSLPoints {
		t.Fatalf("params %+v: want one numeric param of at least %d levels", e.Params, experiment.MinUSLPoints)
	}
	if !stats.Testable(e.Repeat, e.Repeat, experiment.Alpha) {
		t.Errorf("repeat %d: %d runs against %d can never be significant (smallest p %.3f)", e.Repeat, e.Repeat, e.Repeat, stats.MinP(e.Repeat, e.Repeat))
	}
	if runs := len(e.Params[0].Values) * e.Repeat; runs > 30 {
		t.Errorf("%d runs: the demo would take well over a minute", runs)
	}
}
