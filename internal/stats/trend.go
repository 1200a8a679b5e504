package stats

import (
	"math"
	"slices"
)

// Trend is a monotone trend test over a series in time order: the
// Mann-Kendall test (Mann 1945, Kendall 1975) and Sen's slope (Sen 1968).
// Neither assumes a distribution, so one slow second does not make a trend
// as it would pull a least-squares slope.
type Trend struct {
	N int
	// S is Mann-Kendall's statistic: over every pair i < j, +1 when x[j] >
	// x[i], -1 when it is smaller.
	S int
	// PUp is the one-sided p-value of an upward trend: the normal
	// approximation of S with ties corrected and a continuity correction of
	// 1 (within about 0.01 of the exact distribution from n = 5). It is 1
	// when S <= 0.
	PUp float64
	// Slope is Sen's slope: the median over every pair of (x[j]-x[i])/(j-i),
	// per step of the series.
	Slope float64
}

// MannKendall tests x for a monotone trend. With fewer than 3 values it
// finds none (PUp 1).
func MannKendall(x []float64) Trend {
	n := len(x)
	t := Trend{N: n, PUp: 1}
	if n < 3 {
		return t
	}
	var slopes []float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case x[j] > x[i]:
				t.S++
			case x[j] < x[i]:
				t.S--
			}
			slopes = append(slopes, (x[j]-x[i])/float64(j-i))
		}
	}
	slices.Sort(slopes)
	if m := len(slopes); m%2 == 1 {
		t.Slope = slopes[m/2]
	} else {
		t.Slope = (slopes[m/2-1] + slopes[m/2]) / 2
	}
	// Var(S) = [n(n-1)(2n+5) - sum over tie groups of t(t-1)(2t+5)] / 18.
	sorted := slices.Clone(x)
	slices.Sort(sorted)
	v := float64(n * (n - 1) * (2*n + 5))
	for i := 0; i < n; {
		j := i
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		if g := j - i; g > 1 {
			v -= float64(g * (g - 1) * (2*g + 5))
		}
		i = j
	}
	v /= 18
	if t.S > 0 && v > 0 {
		z := (float64(t.S) - 1) / math.Sqrt(v)
		t.PUp = 0.5 * math.Erfc(z/math.Sqrt2)
	}
	return t
}
