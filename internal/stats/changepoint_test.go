package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func ints(lo, hi, step int) []float64 {
	var out []float64
	for i := lo; i < hi; i += step {
		out = append(out, float64(i))
	}
	return out
}

// TestEnergyPublished checks the energy statistic against the figures
// published in MongoDB's signal-processing-algorithms
// (tests/test_energy_statistics.py), which its E-divisive splits on.
func TestEnergyPublished(t *testing.T) {
	for _, c := range []struct {
		name    string
		x, y    []float64
		e, t, h float64
	}{
		{"similar", ints(1, 100, 1), ints(1, 105, 1), 0.160, 8.136, 0.002},
		{"different", ints(1, 100, 1), ints(10000, 13000, 14), 21859.691, 1481794.709, 0.954},
		{"univariate", ints(1, 300, 1), ints(1000, 5000, 10), 4257.009, 728381.015, 0.748},
		{"list", ints(300, 500, 1), ints(400, 900, 11), 268.352, 10035.943, 0.532},
		{"same", ints(10, 70, 1), ints(10, 70, 1), 0, 0, 0},
	} {
		got := EnergyOf(c.x, c.y)
		// numpy's assert_almost_equal(decimal=3): |a-b| < 1.5e-3.
		near := func(a, b float64) bool { return math.Abs(a-b) < 1.5e-3 }
		if !near(got.E, c.e) || !near(got.T, c.t) || !near(got.H, c.h) {
			t.Errorf("%s: e, t, h = %.3f, %.3f, %.3f; published %.3f, %.3f, %.3f", c.name, got.E, got.T, got.H, c.e, c.t, c.h)
		}
	}
}

// TestChangePointsStep is MongoDB's sanity test: a step from 0 to 1 after cp
// values is found at cp, and only there.
func TestChangePointsStep(t *testing.T) {
	for cp := 4; cp < 60; cp++ {
		xs := make([]float64, 2*cp)
		for i := cp; i < 2*cp; i++ {
			xs[i] = 1
		}
		got := ChangePoints(xs, ChangePointOptions{})
		if len(got) != 1 || got[0].Index != cp || got[0].Before != 0 || got[0].After != 1 {
			t.Fatalf("step at %d: %+v", cp, got)
		}
	}
}

// TestChangePointsKnownShifts: noisy series with shifts placed by
// construction (latency-like values with 5% noise) give those shifts.
func TestChangePointsKnownShifts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	noisy := func(level float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = level * (1 + 0.05*rng.NormFloat64())
		}
		return out
	}
	xs := slices.Concat(noisy(100, 30), noisy(130, 25), noisy(90, 30))
	got := ChangePoints(xs, ChangePointOptions{Seed: 1})
	var at []int
	for _, c := range got {
		at = append(at, c.Index)
		if c.P > 0.05 {
			t.Errorf("change at %d has p=%.3f", c.Index, c.P)
		}
	}
	if len(at) != 2 || abs(at[0]-30) > 1 || abs(at[1]-55) > 1 {
		t.Fatalf("changes at %v (%+v); want about [30 55]", at, got)
	}
	if got[0].After < 120 || got[1].After > 100 {
		t.Errorf("medians either side: %+v", got)
	}
	// A change of spread alone, same median, is a change of distribution too.
	ys := slices.Concat(noisy(100, 40), make([]float64, 0))
	for range 40 {
		ys = append(ys, 100*(1+0.4*rng.NormFloat64()))
	}
	if got := ChangePoints(ys, ChangePointOptions{Seed: 1}); len(got) == 0 || abs(got[0].Index-40) > 6 {
		t.Errorf("spread change at 40: %+v", got)
	}
}

// TestChangePointsFalseAlarms measures how often a flat, noisy series gets a
// change: at alpha 0.05 that should be about 5% of series of 40 values, as
// the docs state.
func TestChangePointsFalseAlarms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const series = 200
	alarms := 0
	for s := range series {
		xs := make([]float64, 40)
		for i := range xs {
			xs[i] = 100 * (1 + 0.1*rng.NormFloat64())
		}
		if len(ChangePoints(xs, ChangePointOptions{Seed: uint64(s)})) > 0 {
			alarms++
		}
	}
	rate := float64(alarms) / series
	t.Logf("false alarms: %d of %d flat series (%.1f%%)", alarms, series, 100*rate)
	if rate > 0.10 {
		t.Errorf("false-alarm rate %.1f%% on flat series; want about 5%%", 100*rate)
	}
}

func TestChangePointsShort(t *testing.T) {
	for _, xs := range [][]float64{nil, {1}, {1, 2, 3, 4, 5}} {
		if got := ChangePoints(xs, ChangePointOptions{}); len(got) != 0 {
			t.Errorf("%v: %+v", xs, got)
		}
	}
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

func BenchmarkChangePoints40(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	xs := make([]float64, 40)
	for i := range xs {
		xs[i] = 100 * (1 + 0.1*rng.NormFloat64())
	}
	for b.Loop() {
		ChangePoints(xs, ChangePointOptions{})
	}
}
