package stats

import (
	"errors"
	"math"
)

// Linear is a least-squares line y = Intercept + Slope·x with 95%
// confidence intervals on both coefficients (Student's t with n-2 degrees
// of freedom) and R².
type Linear struct {
	Intercept, Slope float64
	// Half-widths of the 95% intervals: the slope is Slope ± SlopeCI.
	InterceptCI, SlopeCI float64
	R2                   float64
	// R2Defined is false when every y is equal (R² is 0/0).
	R2Defined bool
	N         int
}

// At is the line's value at x.
func (l Linear) At(x float64) float64 { return l.Intercept + l.Slope*x }

// FitLinear fits y against x by least squares. It needs at least 3 points
// (an interval takes one degree of freedom beyond the line's two) and two
// distinct x.
func FitLinear(x, y []float64) (Linear, error) {
	n := len(x)
	if n != len(y) {
		return Linear{}, errors.New("stats: x and y differ in length")
	}
	if n < 3 {
		return Linear{}, errors.New("stats: a line with intervals takes at least 3 points")
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return Linear{}, errors.New("stats: every x is equal")
	}
	l := Linear{Slope: sxy / sxx, N: n}
	l.Intercept = my - l.Slope*mx
	var sse float64
	for i := range x {
		r := y[i] - l.At(x[i])
		sse += r * r
	}
	s2 := sse / float64(n-2)
	t := tQuantile975(n - 2)
	l.SlopeCI = t * math.Sqrt(s2/sxx)
	l.InterceptCI = t * math.Sqrt(s2*(1/float64(n)+mx*mx/sxx))
	if syy > 0 {
		l.R2, l.R2Defined = 1-sse/syy, true
	}
	return l, nil
}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom (a two-sided 95% interval), from the standard table; between
// its rows, the next smaller df's value, which is the wider interval.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df < len(table):
		return table[df]
	case df < 40:
		return 2.042
	case df < 60:
		return 2.021
	case df < 120:
		return 2.000
	case df < 1000:
		return 1.980
	}
	return 1.960
}
