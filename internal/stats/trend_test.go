package stats

import (
	"math"
	"testing"
)

func TestMannKendall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x     []float64
		s     int
		pUp   float64 // within 0.001
		slope float64
	}{
		// n=5, S=10: z = 9/sqrt(50/3) = 2.2045, one-sided p = 0.01374.
		// Sen: the median of 2, 2.5, 3, 3, 3.5, 4, 5, 6, 7.5, 11.
		{"rising", []float64{10, 12, 15, 19, 30}, 10, 0.01374, 3.75},
		{"falling", []float64{30, 19, 15, 12, 10}, -10, 1, -3.75},
		// 5 pairs up, 5 down; Sen: (-0.05 + 0.0667) / 2.
		{"noise", []float64{10, 11, 10.5, 10.2, 10.4}, 0, 1, 0.05 / 6},
		// Ties: 5,5,6,6,7 has S=8; Var = (300 - 2·(2·1·9))/18 = 14.67,
		// z = 7/3.830 = 1.8278, p = 0.03379.
		{"ties", []float64{5, 5, 6, 6, 7}, 8, 0.03379, 0.5},
		{"too short", []float64{1, 2}, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MannKendall(tc.x)
			if got.S != tc.s || math.Abs(got.PUp-tc.pUp) > 0.001 || math.Abs(got.Slope-tc.slope) > 1e-9 {
				t.Errorf("MannKendall(%v) = %+v, want S=%d p=%.5f slope=%g", tc.x, got, tc.s, tc.pUp, tc.slope)
			}
		})
	}
}
