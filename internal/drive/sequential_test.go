package drive

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
)

// autoPlan is an A/B of repeat: auto whose runs a fake RunPoint makes.
const autoPlan = `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
params: { cpu: { base: 1ms, slower: 1.08ms } }
baseline: { cpu: base }
repeat: auto
max_repeat: 16
`

// sweepAuto runs autoPlan with a fake RunPoint: throughput 1000 at base,
// 1000·(1+effect) at slower, each round slowed alike by a machine phase and
// each run by its own 2% noise.
func sweepAuto(t *testing.T, seed uint64, effect float64, extra string) *experiment.Outcome {
	t.Helper()
	return sweepAutoIn(t, t.TempDir(), seed, effect, extra, nil)
}

// sweepAutoIn is sweepAuto in dir; ran, if set, counts the runs made.
func sweepAutoIn(t *testing.T, dir string, seed uint64, effect float64, extra string, ran *int) *experiment.Outcome {
	t.Helper()
	src := autoPlan + extra + fmt.Sprintf("seed: %d\n", seed)
	p, err := plan.Parse("plan.yaml", []byte(src), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	load := func(params map[string]any) (*plan.Plan, error) {
		return plan.Parse("plan.yaml", []byte(src), plan.Options{Params: params})
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	phases := map[string]float64{}
	run := func(ctx context.Context, pp *plan.Plan, o runner.Options) (*result.Result, error) {
		round := filepath.Base(o.Dir) // runs/NNN: two runs a round
		n, err := strconv.Atoi(round)
		if err != nil {
			return nil, err
		}
		key := fmt.Sprint((n + 1) / 2)
		if _, ok := phases[key]; !ok {
			phases[key] = 1 - 0.4*rng.Float64()*float64(rng.IntN(2))
		}
		if ran != nil {
			*ran++
		}
		rps := 1000 * phases[key] * math.Exp(0.02*rng.NormFloat64())
		if o.Point == "cpu=slower" {
			rps *= 1 + effect
		}
		r := fake(rps, 1000/rps)
		r.Schema = result.SchemaResult // read back on a resume
		return r, nil
	}
	out, err := Sweep(context.Background(), p, load, p.Fingerprint(), SweepOptions{Dir: dir, Workers: 1, RunPoint: run})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRepeatAuto: with a fake RunPoint, repeat: auto stops a -7.4% A/B as
// soon as its look's bound is met, and runs A/A to its budget, undecided,
// in all but at most 1 of 10; with min_effect 3% an A/A stops as "within".
// Each outcome keeps its looks, and the verdict says what auto did.
func TestRepeatAuto(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		out := sweepAuto(t, seed, -0.074, "")
		s := out.Sequential
		if s == nil || s.Decision != experiment.Decided || s.Rule != experiment.SpendingRule || s.Rounds >= 16 || out.Repeat != s.Rounds || len(out.Runs) != 2*s.Rounds || !out.Complete {
			t.Fatalf("seed %d: -7.4%%: sequential %+v, repeat %d, %d runs, complete %v", seed, s, out.Repeat, len(out.Runs), out.Complete)
		}
		if v := out.Verdict; v.Sequential != s || len(v.Incomplete) != 0 || v.Pairing.Analysis != experiment.Paired || !v.Table(experiment.FigureThroughput).Rows[1].Significant {
			t.Errorf("seed %d: verdict %+v", seed, v.Pairing)
		}
		last := s.Looks[len(s.Looks)-1]
		if c := last.Comparisons[0]; c.P > last.Bound || math.Abs(c.Delta+0.074) > 0.02 {
			t.Errorf("seed %d: last look %+v", seed, last)
		}
	}
	falsePositives := 0
	for seed := uint64(10); seed < 20; seed++ {
		out := sweepAuto(t, seed, 0, "")
		if s := out.Sequential; s.Decision == experiment.Decided {
			falsePositives++
		} else if s.Decision != experiment.Undecided || s.Rounds != 16 || len(out.Runs) != 32 {
			t.Errorf("seed %d: A/A %+v", seed, s)
		}
		// The table judges throughput as the looks did: at the last
		// look's bound, not at 0.05 after 11 looks.
		r := out.Verdict.Table(experiment.FigureThroughput).Rows[1]
		if r.Significant != (out.Sequential.Decision == experiment.Decided) || r.Change.Alpha >= experiment.Alpha && out.Sequential.Decision != experiment.Decided {
			t.Errorf("seed %d: A/A %s, yet the throughput row %+v", seed, out.Sequential.Decision, r.Change)
		}
	}
	if falsePositives > 1 {
		t.Errorf("A/A: %d of 10 called different", falsePositives)
	}
	out := sweepAuto(t, 30, 0, "min_effect: 3%\n")
	if s := out.Sequential; s.Decision != experiment.Within || s.Rounds >= 16 || s.MinEffect != 0.03 {
		t.Errorf("A/A with min_effect 3%%: %+v", s)
	}
}

// TestRepeatAutoResumes: the same command run again on an experiment.experiment that
// repeat: auto stopped replays its runs, looks as it did, stops at the same
// round and runs nothing.
func TestRepeatAutoResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, ran := 0, 0
	a := sweepAutoIn(t, dir, 2, -0.074, "", &first)
	b := sweepAutoIn(t, dir, 2, -0.074, "", &ran)
	if ran != 0 || first != 2*a.Sequential.Rounds {
		t.Errorf("first pass ran %d runs for %d rounds, the second %d", first, a.Sequential.Rounds, ran)
	}
	if a.Sequential.Decision != experiment.Decided || b.Sequential.Rounds != a.Sequential.Rounds || b.Sequential.Decision != a.Sequential.Decision || len(b.Runs) != len(a.Runs) {
		t.Errorf("resumed %+v, first %+v", b.Sequential, a.Sequential)
	}
	o, err := experiment.LoadOutcome(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Sequential == nil || o.Verdict.Sequential == nil || o.Repeat != a.Sequential.Rounds || len(o.Verdict.Incomplete) != 0 {
		t.Errorf("stored outcome: sequential %v, repeat %d, incomplete %+v", o.Sequential, o.Repeat, o.Verdict.Incomplete)
	}
}

// fake is a result with a known throughput and p95, as experiment's tests
// build them.
func fake(rps, p95 float64) *result.Result {
	return &result.Result{Summary: result.Summary{ThroughputRPS: rps, Latency: result.Percentiles{Count: 100, P50: p95 / 2, P95: p95, P99: p95 * 1.5}}}
}
