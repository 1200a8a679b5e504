package stats

import (
	"errors"
	"math"
	"slices"
)

// TheilSen is a robust line y = Intercept + Slope·x: the slope is the median
// of the slopes of every pair of points with distinct x (Theil 1950, Sen
// 1968), the intercept the median of y − Slope·x. A few outliers move least
// squares as far as they like; they move this line only when they are
// nearly half the points.
//
// The slope's 95% interval is Sen's distribution-free one (Sen 1968;
// Hollander & Wolfe, Nonparametric Statistical Methods, 3rd ed., §9.4):
// with the N pairwise slopes in order and C = 1.96·σ, σ² the variance of
// Kendall's S under independence corrected for ties,
//
//	σ² = [n(n−1)(2n+5) − Σ t(t−1)(2t+5) − Σ u(u−1)(2u+5)] / 18
//
// (t the sizes of groups of equal x, u of equal y), it runs from the
// round((N − C)/2)-th slope to the round((N + C)/2)+1-th, as
// scipy.stats.theilslopes does. The intercept's interval is the union of
// the distribution-free 95% intervals of the median of y − b·x (order
// statistics, as Summarize) for b the slope and both ends of its interval;
// not exact, but it does not pretend the slope is known.
type TheilSen struct {
	Intercept, Slope float64
	// Bounded is false when there are too few pairs for a 95% interval on
	// the slope (fewer than about 6 points): Lo and Hi are then the lowest
	// and highest pairwise slope, and the intercepts they give.
	Bounded          bool
	SlopeLo, SlopeHi float64
	// InterceptBounded is Bounded's counterpart for the intercept: the
	// median of fewer than 6 points has no 95% interval (IntervalRuns), and
	// Lo and Hi are then the lowest and highest y − b·x.
	InterceptBounded         bool
	InterceptLo, InterceptHi float64
	// R2 is 1 − Σ(y − line)² / Σ(y − mean)² of this line; R2Defined is false
	// when every y is equal.
	R2        float64
	R2Defined bool
	N         int
}

// At is the line's value at x.
func (l TheilSen) At(x float64) float64 { return l.Intercept + l.Slope*x }

// SlopeHalfWidth is the larger distance from Slope to an end of its
// interval: the "±" of a slope said as one number.
func (l TheilSen) SlopeHalfWidth() float64 {
	return max(l.SlopeHi-l.Slope, l.Slope-l.SlopeLo)
}

// InterceptHalfWidth is SlopeHalfWidth's counterpart for the intercept.
func (l TheilSen) InterceptHalfWidth() float64 {
	return max(l.InterceptHi-l.Intercept, l.Intercept-l.InterceptLo)
}

// FitTheilSen fits y against x by Theil–Sen. It needs at least 3 points
// and two distinct x; every value must be finite.
func FitTheilSen(x, y []float64) (TheilSen, error) {
	n := len(x)
	if n != len(y) {
		return TheilSen{}, errors.New("stats: x and y differ in length")
	}
	if n < 3 {
		return TheilSen{}, errors.New("stats: a line with intervals takes at least 3 points")
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return TheilSen{}, errors.New("stats: a value is not finite")
		}
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range x {
		for j := i + 1; j < n; j++ {
			if x[i] != x[j] {
				slopes = append(slopes, (y[j]-y[i])/(x[j]-x[i]))
			}
		}
	}
	if len(slopes) == 0 {
		return TheilSen{}, errors.New("stats: every x is equal")
	}
	slices.Sort(slopes)
	l := TheilSen{Slope: median(slopes), N: n}
	l.Intercept = median(residuals(x, y, l.Slope))

	nt := float64(len(slopes))
	ties := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		var sum float64
		for i := 0; i < len(s); {
			j := i
			for j < len(s) && s[j] == s[i] {
				j++
			}
			t := float64(j - i)
			sum += t * (t - 1) * (2*t + 5)
			i = j
		}
		return sum
	}
	fn := float64(n)
	sigma := math.Sqrt(max(0, (fn*(fn-1)*(2*fn+5)-ties(x)-ties(y))/18))
	const z = 1.959963984540054               // the 0.975 quantile of the normal
	lo := int(math.Round((nt-z*sigma)/2)) - 1 // 0-based
	hi := int(math.Round((nt + z*sigma) / 2))
	l.Bounded = lo >= 0 && hi < len(slopes)
	lo, hi = max(lo, 0), min(hi, len(slopes)-1)
	l.SlopeLo, l.SlopeHi = slopes[lo], slopes[hi]

	l.InterceptLo, l.InterceptHi, l.InterceptBounded = l.Intercept, l.Intercept, true
	for _, b := range []float64{l.SlopeLo, l.Slope, l.SlopeHi} {
		r := residuals(x, y, b)
		s := Summarize(r, 0.95)
		a, c := s.Lo, s.Hi
		if !s.Bounded {
			a, c = slices.Min(r), slices.Max(r)
			l.InterceptBounded = false
		}
		l.InterceptLo, l.InterceptHi = min(l.InterceptLo, a), max(l.InterceptHi, c)
	}

	var my float64
	for _, v := range y {
		my += v
	}
	my /= fn
	var sse, syy float64
	for i := range x {
		r, d := y[i]-l.At(x[i]), y[i]-my
		sse += r * r
		syy += d * d
	}
	if syy > 0 {
		l.R2, l.R2Defined = 1-sse/syy, true
	}
	return l, nil
}

// residuals is y − b·x.
func residuals(x, y []float64, b float64) []float64 {
	r := make([]float64, len(x))
	for i := range x {
		r[i] = y[i] - b*x[i]
	}
	return r
}

// median is the median of sorted s, or of s in any order when it has to
// sort a copy; s is not empty.
func median(s []float64) float64 {
	if !slices.IsSorted(s) {
		s = slices.Clone(s)
		slices.Sort(s)
	}
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
