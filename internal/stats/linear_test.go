package stats

import (
	"math"
	"testing"
)

func TestFitLinear(t *testing.T) {
	near := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
	// A textbook table: x 1..5, y 2 4 5 4 5. b = 0.6, a = 2.2, R² = 0.6,
	// s² = 2.4/3, se(b) = sqrt(0.08) = 0.2828, t(0.975, 3) = 3.182.
	l, err := FitLinear([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	if !near(l.Slope, 0.6, 1e-12) || !near(l.Intercept, 2.2, 1e-12) || !near(l.R2, 0.6, 1e-12) || !l.R2Defined ||
		!near(l.SlopeCI, 3.182*math.Sqrt(0.08), 1e-9) || !near(l.InterceptCI, 3.182*math.Sqrt(0.8*(1.0/5+9.0/10)), 1e-9) {
		t.Errorf("fit %+v", l)
	}
	// An exact line: no spread.
	l, err = FitLinear([]float64{1, 1, 2, 2, 4, 4}, []float64{30, 30, 48, 48, 84, 84})
	if err != nil || !near(l.Slope, 18, 1e-9) || !near(l.Intercept, 12, 1e-9) || l.SlopeCI > 1e-9 || !near(l.R2, 1, 1e-12) {
		t.Errorf("exact: %+v %v", l, err)
	}
	if l, err := FitLinear([]float64{1, 2, 3}, []float64{5, 5, 5}); err != nil || l.R2Defined || l.Slope != 0 {
		t.Errorf("flat: %+v %v", l, err)
	}
	for _, bad := range [][2][]float64{{{1, 2}, {1, 2}}, {{2, 2, 2}, {1, 2, 3}}, {{1, 2, 3}, {1, 2}}} {
		if _, err := FitLinear(bad[0], bad[1]); err == nil {
			t.Errorf("FitLinear(%v, %v) fitted", bad[0], bad[1])
		}
	}
	if tQuantile975(3) != 3.182 || tQuantile975(35) != 2.042 || tQuantile975(5000) != 1.960 {
		t.Error("t table")
	}
}
