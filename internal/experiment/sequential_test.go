package experiment

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
)

// TestSpent: the O'Brien–Fleming-type function spends alpha at t = 1 and
// almost none early.
func TestSpent(t *testing.T) {
	t.Parallel()
	if s := Spent(1, 0.05); math.Abs(s-0.05) > 1e-12 {
		t.Errorf("spent at 1: %v", s)
	}
	// 2 − 2Φ(1.96/√0.5) = 2 − 2Φ(2.772) = 0.00557.
	if s := Spent(0.5, 0.05); math.Abs(s-0.00557) > 0.00002 {
		t.Errorf("spent at 0.5: %v, want 0.00557", s)
	}
	prev := 0.0
	for k := 1; k <= 20; k++ {
		s := Spent(float64(k)/20, 0.05)
		if s <= prev {
			t.Errorf("spent at %d/20: %v, not above %v", k, s, prev)
		}
		prev = s
	}
}

// simulate runs one experiment of up to most rounds of two points whose
// figure differs by effect, each round slowed alike by a machine phase
// (up to 40%) and each run by its own 2% noise; stop decides at each
// round whether to stop, and found is whether it ended significant.
func simulate(rng *rand.Rand, most int, effect float64, stop func(k int, base, test []float64) (bool, bool)) (found bool, rounds int) {
	var base, test []float64
	for k := 1; k <= most; k++ {
		phase := 1 - 0.4*rng.Float64()*float64(rng.IntN(2))
		base = append(base, 1000*phase*math.Exp(0.02*rng.NormFloat64()))
		test = append(test, 1000*(1+effect)*phase*math.Exp(0.02*rng.NormFloat64()))
		if done, sig := stop(k, base, test); done {
			return sig, k
		}
	}
	return false, most
}

// TestSequentialAA: of 2000 simulated A/A experiments of up to 20 rounds,
// repeat: auto's rule calls at most 5% (plus the simulation's error)
// different, while stopping at the first look with p <= 0.05 calls far
// more: the looks must be paid for. A -7.4% change is found in nearly all,
// most well before 20 rounds.
func TestSequentialAA(t *testing.T) {
	t.Parallel()
	const most, n = 20, 2000
	rng := rand.New(rand.NewPCG(26, 1))
	auto := func(effect, minEffect float64) func(k int, base, test []float64) (bool, bool) {
		q := NewSequentialTest(FigureThroughput, most, minEffect)
		return func(k int, base, test []float64) (bool, bool) {
			if q.Look([]pairedRounds{{point: "b", base: base, test: test}}) {
				return true, q.Result().Decision == Decided
			}
			return false, false
		}
	}
	naive := func(k int, base, test []float64) (bool, bool) {
		if k < 6 {
			return false, false
		}
		c := comparePaired(base, test)
		return c.Significant(), c.Significant()
	}
	falseAuto, falseNaive := 0, 0
	for i := 0; i < n; i++ {
		if found, _ := simulate(rng, most, 0, auto(0, 0)); found {
			falseAuto++
		}
		if found, _ := simulate(rng, most, 0, naive); found {
			falseNaive++
		}
	}
	rate, naiveRate := float64(falseAuto)/n, float64(falseNaive)/n
	// 5% of 2000 is 100 ± 10 (one standard error).
	if rate > 0.06 {
		t.Errorf("repeat: auto calls %.1f%% of A/A experiments different, want at most 5%%", 100*rate)
	}
	if naiveRate < 2*rate || naiveRate < 0.08 {
		t.Errorf("stopping at the first p <= 0.05 calls %.1f%% of A/A different, auto %.1f%%: the test does not show the looks' cost", 100*naiveRate, 100*rate)
	}
	t.Logf("A/A false positives: auto %.2f%%, naive %.2f%% (of %d)", 100*rate, 100*naiveRate, n)
	found, total := 0, 0
	for i := 0; i < 200; i++ {
		ok, rounds := simulate(rng, most, -0.074, auto(-0.074, 0))
		if ok {
			found++
		}
		total += rounds
	}
	if found < 190 || float64(total)/200 > 15 {
		t.Errorf("-7.4%%: found in %d of 200, after %.1f rounds on average", found, float64(total)/200)
	}
	t.Logf("-7.4%%: found in %d of 200, after %.1f rounds on average", found, float64(total)/200)
	within, rounds := 0, 0
	for i := 0; i < 200; i++ {
		q := NewSequentialTest(FigureThroughput, most, 0.02)
		_, k := simulate(rng, most, 0, func(k int, base, test []float64) (bool, bool) {
			return q.Look([]pairedRounds{{point: "b", base: base, test: test}}), false
		})
		if q.Result().Decision == Within {
			within++
		}
		rounds += k
	}
	if within < 150 {
		t.Errorf("A/A with min_effect 2%%: within in %d of 200", within)
	}
	t.Logf("A/A, min_effect 2%%: no change over 2%% in %d of 200, after %.1f rounds on average", within, float64(rounds)/200)
}

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
func sweepAuto(t *testing.T, seed uint64, effect float64, extra string) *Outcome {
	t.Helper()
	return sweepAutoIn(t, t.TempDir(), seed, effect, extra, nil)
}

// sweepAutoIn is sweepAuto in dir; ran, if set, counts the runs made.
func sweepAutoIn(t *testing.T, dir string, seed uint64, effect float64, extra string, ran *int) *Outcome {
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
		if s == nil || s.Decision != Decided || s.Rule != SpendingRule || s.Rounds >= 16 || out.Repeat != s.Rounds || len(out.Runs) != 2*s.Rounds || !out.Complete {
			t.Fatalf("seed %d: -7.4%%: sequential %+v, repeat %d, %d runs, complete %v", seed, s, out.Repeat, len(out.Runs), out.Complete)
		}
		if v := out.Verdict; v.Sequential != s || len(v.Incomplete) != 0 || v.Pairing.Analysis != Paired || !v.Table(FigureThroughput).Rows[1].Significant {
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
		if s := out.Sequential; s.Decision == Decided {
			falsePositives++
		} else if s.Decision != Undecided || s.Rounds != 16 || len(out.Runs) != 32 {
			t.Errorf("seed %d: A/A %+v", seed, s)
		}
		// The table judges throughput as the looks did: at the last
		// look's bound, not at 0.05 after 11 looks.
		r := out.Verdict.Table(FigureThroughput).Rows[1]
		if r.Significant != (out.Sequential.Decision == Decided) || r.Change.Alpha >= Alpha && out.Sequential.Decision != Decided {
			t.Errorf("seed %d: A/A %s, yet the throughput row %+v", seed, out.Sequential.Decision, r.Change)
		}
	}
	if falsePositives > 1 {
		t.Errorf("A/A: %d of 10 called different", falsePositives)
	}
	out := sweepAuto(t, 30, 0, "min_effect: 3%\n")
	if s := out.Sequential; s.Decision != Within || s.Rounds >= 16 || s.MinEffect != 0.03 {
		t.Errorf("A/A with min_effect 3%%: %+v", s)
	}
}

// TestRepeatAutoResumes: the same command run again on an experiment that
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
	if a.Sequential.Decision != Decided || b.Sequential.Rounds != a.Sequential.Rounds || b.Sequential.Decision != a.Sequential.Decision || len(b.Runs) != len(a.Runs) {
		t.Errorf("resumed %+v, first %+v", b.Sequential, a.Sequential)
	}
	o, err := LoadOutcome(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Sequential == nil || o.Verdict.Sequential == nil || o.Repeat != a.Sequential.Rounds || len(o.Verdict.Incomplete) != 0 {
		t.Errorf("stored outcome: sequential %v, repeat %d, incomplete %+v", o.Sequential, o.Repeat, o.Verdict.Incomplete)
	}
}
