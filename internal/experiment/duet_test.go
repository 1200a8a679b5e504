package experiment

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// duetRun is a run of a duet: A and B's throughput and p95, and B's errors.
func duetRun(thrA, thrB, p95A, p95B float64, errB int64, saturated bool) *result.Result {
	side := func(name string, thr, p95 float64, errs int64) result.ScenarioTotals {
		s := result.Summary{ThroughputRPS: thr, Requests: int64(thr * 2), Responses: int64(thr * 2)}
		s.Latency.P95 = p95
		s.Errors.Total = errs
		s.Errors.Timeout = errs
		return result.ScenarioTotals{Scenario: name, Load: "closed", Summary: s}
	}
	r := &result.Result{Scenarios: []result.ScenarioTotals{side("A", thrA, p95A, 0), side("B", thrB, p95B, errB)}}
	if saturated {
		r.Validity = []result.Warning{{Code: "generator_saturated", Message: "the load generator used all of its CPU"}}
	}
	return r
}

// TestDuetCancelsCommonNoise: both sides move together by a machine-wide
// factor from 0.6 to 1.0 run to run (a hog switching on and off), B 7.4%
// below A throughout with a little noise of its own: the ratio finds it,
// within a point, and the sides were alike.
func TestDuetCancelsCommonNoise(t *testing.T) {
	t.Parallel()
	common := []float64{1, 0.62, 0.95, 0.7, 0.99, 0.6, 0.85, 0.93, 0.66, 1}
	own := []float64{0.004, -0.003, 0.002, -0.001, 0.003, -0.004, 0.001, 0, -0.002, 0.0025}
	var runs []*result.Result
	for i, c := range common {
		a := 1000 * c
		runs = append(runs, duetRun(a, a*(0.926+own[i]), 5/c, 5/c*1.08, 0, false))
	}
	runs = append(runs, nil) // a failed run
	v := Duet(runs, "A", "B")
	if v.Runs != 10 || !v.Alike {
		t.Fatalf("runs %d alike %t %v", v.Runs, v.Alike, v.Unlike)
	}
	f := v.Throughput
	if !f.Significant || math.Abs(f.Ratio-0.926) > 0.01 || !f.Bounded || f.Lo > 0.926 || f.Hi < 0.926 {
		t.Errorf("throughput ratio %.4f [%.4f, %.4f] p=%.4f significant %t", f.Ratio, f.Lo, f.Hi, f.P, f.Significant)
	}
	if f.P != 0.001953125 { // 2/2^10: every run lower, exact signed-rank
		t.Errorf("p = %v, want 2/1024", f.P)
	}
	if !v.P95.Significant || math.Abs(v.P95.Ratio-1.08) > 0.001 {
		t.Errorf("p95 ratio %.4f significant %t", v.P95.Ratio, v.P95.Significant)
	}
	if f.Detectable <= 0 || f.Detectable > 0.02 {
		t.Errorf("noise floor %.4f, want a small one: the common factor cancels", f.Detectable)
	}
}

// TestDuetAA: A against A, both moved alike, no change found.
func TestDuetAA(t *testing.T) {
	t.Parallel()
	own := []float64{0.004, -0.003, 0.002, -0.001, 0.003, -0.004, 0.001, -0.002, 0.002, -0.001}
	var runs []*result.Result
	for i, o := range own {
		a := 1000 * (0.6 + 0.04*float64(i%5))
		runs = append(runs, duetRun(a, a*(1+o), 5, 5, 0, false))
	}
	v := Duet(runs, "A", "B")
	if v.Throughput.Significant || !v.Alike || math.Abs(v.Throughput.Ratio-1) > 0.005 {
		t.Errorf("A/A: %+v", v.Throughput)
	}
}

// TestDuetUnlike: the verdict says when the two sides were not treated
// alike: B's timeouts, a saturated generator; too few runs are untested.
func TestDuetUnlike(t *testing.T) {
	t.Parallel()
	var runs []*result.Result
	for i := range 6 {
		runs = append(runs, duetRun(1000, 900, 5, 6, 50, i == 2))
	}
	v := Duet(runs, "A", "B")
	if v.Alike || len(v.Unlike) != 3 {
		t.Fatalf("alike %t, unlike %q: want errors, timeouts and saturation", v.Alike, v.Unlike)
	}
	joined := strings.Join(v.Unlike, "; ")
	for _, want := range []string{"saturated in 1 of 6 runs", "B had errors in 2.8% of its requests, A in 0.0%", "B had timeouts"} {
		if !strings.Contains(joined, want) {
			t.Errorf("unlike %q lacks %q", joined, want)
		}
	}
	if v := Duet(runs[:4], "A", "B"); v.Throughput.Testable || v.Throughput.Significant {
		t.Errorf("4 runs: %+v", v.Throughput)
	}
	if v := Duet([]*result.Result{{}}, "A", "B"); v.Alike || v.Runs != 0 || v.Throughput != nil {
		t.Errorf("no scenarios: %+v", v)
	}
}

// TestDuetPerSecond: the ratio B/A of each whole second, pooled over the
// runs, with its quartiles; a second in which a side got nothing is left
// out, and results without per-second counts give none.
func TestDuetPerSecond(t *testing.T) {
	t.Parallel()
	r1 := duetRun(100, 90, 5, 6, 0, false)
	r1.Scenarios[0].PerSecond = []int64{100, 100, 100, 100}
	r1.Scenarios[1].PerSecond = []int64{90, 80, 0, 95}
	r2 := duetRun(100, 90, 5, 6, 0, false)
	r2.Scenarios[0].PerSecond = []int64{100, 200}
	r2.Scenarios[1].PerSecond = []int64{85, 180, 99} // longer than A's: only the shared seconds
	v := Duet([]*result.Result{r1, r2}, "A", "B")
	ps := v.PerSecond
	// Ratios 0.8, 0.85, 0.9, 0.9, 0.95.
	if ps == nil || ps.Seconds != 5 || ps.Ratio != 0.9 || math.Abs(ps.Q1-0.85) > 1e-12 || math.Abs(ps.Q3-0.9) > 1e-12 {
		t.Errorf("per second %+v, want 5 seconds, median 0.9, quartiles 0.85 and 0.9", ps)
	}
	if v := Duet([]*result.Result{duetRun(100, 90, 5, 6, 0, false)}, "A", "B"); v.PerSecond != nil {
		t.Errorf("without per-second counts: %+v", v.PerSecond)
	}
}

// TestDuetOfSides: a plan duet's two results a run are read as one run of
// A and B: a run with a side missing is left out, the validity warnings of
// both count, and each side's seconds are its whole seconds after warmup
// (the first second, warmup, and the short tail are left out).
func TestDuetOfSides(t *testing.T) {
	t.Parallel()
	side := func(thr float64, seconds ...int64) *result.Result {
		r := &result.Result{Summary: result.Summary{ThroughputRPS: thr, Requests: int64(thr), Responses: int64(thr)}}
		r.Summary.Latency.P95 = 5
		for i, n := range seconds {
			r.Series = append(r.Series, result.Point{T: float64(i + 1), Len: 1, Responses: n})
		}
		r.Series = append(r.Series, result.Point{T: float64(len(seconds)) + 0.002, Len: 0.002, Responses: 1})
		return r
	}
	var a, b []*result.Result
	for i := range 6 {
		a = append(a, side(1000, 999, 1000+int64(i), 1000))
		b = append(b, side(900, 1, 900, 880))
	}
	a = append(a, side(1000, 1000, 1000, 1000))
	b = append(b, nil) // B's server exited
	b[2].Validity = []result.Warning{{Code: "generator_saturated", Message: "the load generator used all of its CPU"}}
	v := DuetOfSides(a, b, time.Second)
	if v.Runs != 6 || v.Throughput == nil || math.Abs(v.Throughput.Ratio-0.9) > 1e-9 {
		t.Fatalf("runs %d, throughput %+v", v.Runs, v.Throughput)
	}
	if v.Alike {
		t.Errorf("B saturated in run 3, and the duet is alike")
	}
	// Seconds 2 and 3 of each run: 900/1000.. and 880/1000.
	if ps := v.PerSecond; ps == nil || ps.Seconds != 12 || ps.Q1 < 0.87 || ps.Q3 > 0.91 {
		t.Errorf("per second %+v, want 12 seconds between 0.87 and 0.91", v.PerSecond)
	}
}
