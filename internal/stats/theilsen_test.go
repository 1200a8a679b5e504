package stats

import (
	"math"
	"testing"
)

func TestFitTheilSen(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }
	for _, c := range []struct {
		name                 string
		x, y                 []float64
		slope, lo, hi, icept float64
		bounded              bool
		r2                   float64
	}{
		// By hand: the 10 pairwise slopes in order are -1 0 0 1/3 2/3 3/4 1 1
		// 3/2 2, median (2/3+3/4)/2 = 17/24; y has two pairs of ties, so
		// σ² = (5·4·15 − 2·(2·1·9))/18 = 14.67, C = 1.96·3.83 = 7.51, and the
		// interval runs from slope round(1.25) = 1 to round(8.75)+1 = 10:
		// -1 to 2. Intercept: the median of y − 17/24·x, 35/24. R² = 1 −
		// 3.38542/6 (the residuals -1/6 9/8 17/12 -7/24 0 about the mean 4).
		{"textbook", []float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5}, 17.0 / 24, -1, 2, 35.0 / 24, true, 1 - (1.0/36+81.0/64+289.0/144+49.0/576)/6},
		// Four points: slopes 8 9.5 10 31/3 11 12, median 61/6; N = 6 pairs,
		// C = 1.96·2.94 = 5.77, round(0.11) = 0: no 95% interval, so it says
		// so and spans every pairwise slope. Intercept: the median of
		// -1.5 -1/6 1/3 2/3, 1/12.
		{"too few", []float64{1, 2, 3, 4}, []float64{10, 21, 29, 41}, 61.0 / 6, 8, 12, 1.0 / 12, false, 0},
		// An exact line with ties in x: every slope is 18.
		{"exact", []float64{1, 1, 2, 2, 4, 4, 8, 8}, []float64{30, 30, 48, 48, 84, 84, 156, 156}, 18, 18, 18, 12, true, 1},
	} {
		l, err := FitTheilSen(c.x, c.y)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !near(l.Slope, c.slope) || !near(l.SlopeLo, c.lo) || !near(l.SlopeHi, c.hi) || !near(l.Intercept, c.icept) || l.Bounded != c.bounded || l.N != len(c.x) {
			t.Errorf("%s: %+v", c.name, l)
		}
		if c.r2 != 0 && (!near(l.R2, c.r2) || !l.R2Defined) {
			t.Errorf("%s: R² %v, want %v", c.name, l.R2, c.r2)
		}
		if l.InterceptLo > l.Intercept || l.InterceptHi < l.Intercept {
			t.Errorf("%s: intercept %v outside [%v, %v]", c.name, l.Intercept, l.InterceptLo, l.InterceptHi)
		}
	}
	if l, _ := FitTheilSen([]float64{1, 2, 3}, []float64{5, 5, 5}); l.R2Defined || l.Slope != 0 {
		t.Errorf("flat: %+v", l)
	}
	for _, bad := range [][2][]float64{{{1, 2}, {1, 2}}, {{2, 2, 2}, {1, 2, 3}}, {{1, 2, 3}, {1, 2}}, {{1, 2, math.NaN()}, {1, 2, 3}}} {
		if _, err := FitTheilSen(bad[0], bad[1]); err == nil {
			t.Errorf("FitTheilSen(%v, %v) fitted", bad[0], bad[1])
		}
	}
}

// TestTheilSenOutliers is a memory sweep as TestMemoryFitPerWorker sees
// one: 32 MiB + 16 MiB a worker, workers 1..4 three runs each with ±0.4 MiB
// of noise, and two runs at workers=1 read 12 and 10 MiB high (as the
// sampler's carried PSS once did). Least squares reads 13.8 MiB a worker
// and its 95% interval, 11.7 to 15.9, leaves out the true 16; Theil–Sen
// reads 15.86, its interval 12.0 to 16.1 holding 16.
func TestTheilSenOutliers(t *testing.T) {
	x := []float64{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}
	y := []float64{59.7, 58.4, 48.1, 64.2, 63.9, 63.6, 80.3, 79.8, 80.0, 96.1, 95.7, 96.4}
	ls, err := FitLinear(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ls.Slope-16) <= ls.SlopeCI {
		t.Errorf("least squares %.2f ± %.2f holds 16: not the case this test is about", ls.Slope, ls.SlopeCI)
	}
	l, err := FitTheilSen(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Slope-16) > 0.2 || l.SlopeLo > 16 || l.SlopeHi < 16 || !l.Bounded || math.Abs(l.SlopeLo-12) > 1e-9 || math.Abs(l.SlopeHi-16.1) > 1e-9 {
		t.Errorf("Theil–Sen %+v: want 15.86 in [12, 16.1]", l)
	}
	// The intercept: the median of y − 15.8583·x, 32.454; the outliers'
	// 42.5 and 43.8 are the highest residuals and do not move it.
	if math.Abs(l.Intercept-32.454166666666666) > 1e-9 || l.InterceptLo > 32 || l.InterceptHi < 32 || !l.InterceptBounded || math.Abs(l.R2-0.9224212073050884) > 1e-9 {
		t.Errorf("intercept %+v: want 32.45 with an interval holding 32", l)
	}
	if got := l.SlopeHalfWidth(); math.Abs(got-(15.858333333333333-12)) > 1e-9 {
		t.Errorf("half-width %v", got)
	}
}
