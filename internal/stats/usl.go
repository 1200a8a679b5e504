package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ErrCannotFit is wrapped by every error FitUSL returns for input that has
// no meaningful fit, so a caller can skip the model and still report the
// measurements.
var ErrCannotFit = errors.New("cannot fit the Universal Scalability Law")

// A USLFit is the Universal Scalability Law fitted to throughput measured
// at several concurrency levels:
//
//	X(N) = Lambda*N / (1 + Sigma*(N-1) + Kappa*N*(N-1))
type USLFit struct {
	// Sigma is the contention (serialization) coefficient, >= 0.
	Sigma float64
	// Kappa is the coherency (crosstalk) coefficient, >= 0. It alone makes
	// throughput fall past a peak.
	Kappa float64
	// Lambda is the throughput of a single unit of concurrency, > 0.
	Lambda float64

	// HasPeak is false when Kappa is 0: the model then rises forever,
	// approaching Ceiling, and PeakN and PeakThroughput are 0.
	HasPeak bool
	// PeakN is the concurrency of highest modelled throughput,
	// sqrt((1-Sigma)/Kappa), never below 1: when Sigma >= 1 concurrency
	// never helps and the peak is at N = 1. It is a real number; round
	// it down for a thread count.
	PeakN float64
	// PeakThroughput is X(PeakN).
	PeakThroughput float64
	// Ceiling is Lambda/Sigma, the throughput the model approaches as N
	// grows when Kappa is 0 (Amdahl's law). It is 0 when Kappa > 0 (the
	// peak is the bound) or when Sigma and Kappa are both 0 (linear
	// scaling, no bound).
	Ceiling float64

	// RSquared is 1 - SSE/SST, the share of the throughput's variance the
	// model explains. RSquaredDefined is false when it cannot be computed:
	// every throughput is the same (SST = 0, nothing to explain) or the
	// sums are not finite; RSquared is then 0, never NaN.
	RSquared        float64
	RSquaredDefined bool
	// Points is the number of measurements fitted; Levels the number of
	// distinct concurrency values among them.
	Points, Levels int
	// Warnings note what the coefficients alone do not say, such as a peak
	// that lies beyond the measured range.
	Warnings []string
}

// Throughput returns the modelled throughput X(n).
func (f USLFit) Throughput(n float64) float64 {
	return uslThroughput(f.Lambda, f.Sigma, f.Kappa, n)
}

// String summarizes the fit in one line, including what the peak is or
// why there is none.
func (f USLFit) String() string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	r2 := "R² undefined (every throughput equal)"
	if f.RSquaredDefined {
		r2 = "R²=" + FormatRSquared(f.RSquared)
	}
	s := fmt.Sprintf("σ=%s κ=%s λ=%s %s: ", g(f.Sigma), g(f.Kappa), g(f.Lambda), r2)
	switch {
	case f.HasPeak:
		return s + fmt.Sprintf("peak throughput %s at N=%s", g(f.PeakThroughput), g(f.PeakN))
	case f.Ceiling > 0:
		return s + fmt.Sprintf("no peak (κ=0): throughput rises toward λ/σ=%s", g(f.Ceiling))
	}
	return s + "no peak (σ=κ=0): throughput scales linearly"
}

// FitUSL fits the Universal Scalability Law to throughput[i] measured at
// concurrency[i] by least squares, with Sigma >= 0, Kappa >= 0 and
// Lambda > 0. Repeated runs at one level may be passed as separate points.
//
// It needs at least three distinct concurrency levels (three parameters)
// and positive, finite values; anything else is an error wrapping
// ErrCannotFit.
func FitUSL(concurrency, throughput []float64) (USLFit, error) {
	levels, err := checkUSLInput(concurrency, throughput)
	if err != nil {
		return USLFit{}, err
	}
	p := uslProblem{n: concurrency, x: throughput}

	// Start from a linearised fit (Gunther's transformation) and from no
	// contention at all; keep whichever converges lower. Two starts cost
	// microseconds and guard against a poor linearisation.
	best := p.levenbergMarquardt(p.initialGuess())
	if alt := p.levenbergMarquardt(uslParams{lambda: best.lambda, sigma: 0, kappa: 0}); p.sse(alt) < p.sse(best) {
		best = alt
	}

	f := USLFit{
		Lambda: best.lambda,
		Sigma:  best.sigma,
		Kappa:  best.kappa,
		Points: len(concurrency),
		Levels: levels,
	}
	f.RSquared, f.RSquaredDefined = p.rSquared(best)
	f.describePeak(maxOf(concurrency))
	return f, nil
}

// describePeak fills the peak and ceiling fields and their warnings.
func (f *USLFit) describePeak(maxN float64) {
	switch {
	case f.Sigma >= 1:
		// The numerator of dX/dN is 1 - σ - κN², negative for every N >= 1.
		f.HasPeak, f.PeakN = true, 1
		f.Warnings = append(f.Warnings, "σ >= 1: throughput never rises above a single unit's; concurrency does not help")
	case f.Kappa > 0:
		f.HasPeak, f.PeakN = true, math.Max(1, math.Sqrt((1-f.Sigma)/f.Kappa))
		if f.PeakN > maxN {
			f.Warnings = append(f.Warnings, fmt.Sprintf(
				"the peak N=%.3g lies beyond the largest measured concurrency %.3g: it is extrapolated", f.PeakN, maxN))
		}
	case f.Sigma > 0:
		f.Ceiling = f.Lambda / f.Sigma
		f.Warnings = append(f.Warnings, "κ = 0: no coherency delay measured, so the model has no peak")
	default:
		f.Warnings = append(f.Warnings, "σ = κ = 0: throughput scaled linearly over the measured range, so the model has no peak")
	}
	if f.HasPeak {
		f.PeakThroughput = f.Throughput(f.PeakN)
	}
}

// checkUSLInput rejects input that cannot be fitted and returns the number
// of distinct concurrency levels.
func checkUSLInput(concurrency, throughput []float64) (int, error) {
	if len(concurrency) != len(throughput) {
		return 0, fmt.Errorf("%w: %d concurrency values but %d throughput values",
			ErrCannotFit, len(concurrency), len(throughput))
	}
	for i := range concurrency {
		if n := concurrency[i]; !(n > 0) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%w: concurrency[%d] is %v, want a positive finite number", ErrCannotFit, i, n)
		}
		if x := throughput[i]; !(x > 0) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%w: throughput[%d] (at concurrency %v) is %v, want a positive finite number",
				ErrCannotFit, i, concurrency[i], x)
		}
	}
	distinct := append([]float64(nil), concurrency...)
	sort.Float64s(distinct)
	levels := 0
	for i, n := range distinct {
		if i == 0 || n != distinct[i-1] {
			levels++
		}
	}
	if levels < 3 {
		return levels, fmt.Errorf("%w: need at least 3 distinct concurrency levels for 3 parameters, got %d",
			ErrCannotFit, levels)
	}
	return levels, nil
}

type uslParams struct{ lambda, sigma, kappa float64 }

func (p uslParams) get(j int) float64 {
	return [3]float64{p.lambda, p.sigma, p.kappa}[j]
}

func (p *uslParams) set(j int, v float64) {
	switch j {
	case 0:
		p.lambda = v
	case 1:
		p.sigma = v
	default:
		p.kappa = v
	}
}

func uslThroughput(lambda, sigma, kappa, n float64) float64 {
	return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

type uslProblem struct{ n, x []float64 }

// initialGuess takes lambda from the smallest concurrency measured (the
// model is nearly linear there), then solves Gunther's linearisation
// N*lambda/X - 1 = σ(N-1) + κN(N-1) for σ and κ by linear least squares,
// clamped to the constraints.
func (p uslProblem) initialGuess() uslParams {
	minN := p.n[0]
	for _, n := range p.n {
		minN = math.Min(minN, n)
	}
	var sum float64
	var count int
	for i, n := range p.n {
		if n == minN {
			sum += p.x[i] / n
			count++
		}
	}
	lambda := sum / float64(count)

	// Normal equations of z = σa + κb with a = N-1, b = N(N-1).
	var saa, sab, sbb, saz, sbz float64
	for i, n := range p.n {
		a, b := n-1, n*(n-1)
		z := n*lambda/p.x[i] - 1
		saa += a * a
		sab += a * b
		sbb += b * b
		saz += a * z
		sbz += b * z
	}
	var sigma, kappa float64
	if det := saa*sbb - sab*sab; det != 0 {
		sigma = (saz*sbb - sbz*sab) / det
		kappa = (sbz*saa - saz*sab) / det
	}
	switch {
	case sigma < 0 && sbb > 0:
		sigma, kappa = 0, sbz/sbb
	case kappa < 0 && saa > 0:
		sigma, kappa = saz/saa, 0
	}
	return uslParams{lambda: lambda, sigma: math.Max(0, sigma), kappa: math.Max(0, kappa)}
}

// sse is the sum of squared residuals; +Inf when the model is undefined
// (a non-positive denominator, possible only for concurrency below 1).
func (p uslProblem) sse(q uslParams) float64 {
	var sum float64
	for i, n := range p.n {
		d := 1 + q.sigma*(n-1) + q.kappa*n*(n-1)
		if !(d > 0) {
			return math.Inf(1)
		}
		r := p.x[i] - q.lambda*n/d
		sum += r * r
	}
	return sum
}

func (p uslProblem) rSquared(q uslParams) (float64, bool) {
	var mean float64
	for _, x := range p.x {
		mean += x
	}
	mean /= float64(len(p.x))
	var sst float64
	for _, x := range p.x {
		sst += (x - mean) * (x - mean)
	}
	r2 := 1 - p.sse(q)/sst
	if sst == 0 || math.IsNaN(r2) || math.IsInf(r2, 0) {
		// Every throughput equal: no variance to explain, so R² is 0/0.
		return 0, false
	}
	return r2, true
}

// FormatRSquared writes R² with four decimals, or with as many more as it
// takes not to round a value below 1 up to "1.0000" (0.99996 is
// "0.99996"); 1 itself is "1". 0.9964 is "0.9964", never "1.00".
func FormatRSquared(r2 float64) string {
	if r2 == 1 {
		return "1"
	}
	for digits := 4; digits < 16; digits++ {
		s := strconv.FormatFloat(r2, 'f', digits, 64)
		if r2 > 1 || !strings.HasPrefix(s, "1.") { // below 1, and not rounded up to it
			return s
		}
	}
	return strconv.FormatFloat(r2, 'g', -1, 64)
}

// levenbergMarquardt minimises sse from start within the bounds
// lambda > 0, sigma >= 0, kappa >= 0. Bounds are kept by projection with an
// active set: a parameter sitting on its bound whose gradient points out of
// the feasible region is held fixed for that step. Damping is Marquardt's,
// scaled by the diagonal of JᵀJ, because lambda (thousands) and kappa
// (1e-4) differ by many orders of magnitude.
func (p uslProblem) levenbergMarquardt(start uslParams) uslParams {
	// It stops when no damping, however strong, lowers the SSE any more:
	// with three parameters that costs microseconds and avoids a tolerance
	// that could stop early in a long, flat valley.
	const maxIterations = 1000
	q := start
	cost := p.sse(q)
	damping := 1e-3
	for iter := 0; iter < maxIterations && damping < 1e16; iter++ {
		var jtj [3][3]float64
		var jtr [3]float64
		for i, n := range p.n {
			d := 1 + q.sigma*(n-1) + q.kappa*n*(n-1)
			f := q.lambda * n / d
			// Partial derivatives of the model, not of the residual.
			jac := [3]float64{n / d, -f * (n - 1) / d, -f * n * (n - 1) / d}
			r := p.x[i] - f
			for a := range 3 {
				jtr[a] += jac[a] * r
				for b := range 3 {
					jtj[a][b] += jac[a] * jac[b]
				}
			}
		}

		// Hold a parameter on its bound when the descent direction
		// (along jtr) would push it below.
		var free []int
		for j := range 3 {
			if j > 0 && q.get(j) == 0 && jtr[j] <= 0 {
				continue
			}
			if jtj[j][j] == 0 {
				continue // this parameter does not affect the model (all N = 1)
			}
			free = append(free, j)
		}
		if len(free) == 0 {
			break
		}

		improved := false
		for damping < 1e16 {
			m := len(free)
			a := make([][]float64, m)
			rhs := make([]float64, m)
			for r, j := range free {
				a[r] = make([]float64, m)
				for c, k := range free {
					a[r][c] = jtj[j][k]
				}
				a[r][r] *= 1 + damping
				rhs[r] = jtr[j]
			}
			step, ok := solve(a, rhs)
			if !ok {
				damping *= 10
				continue
			}
			next := q
			for r, j := range free {
				v := q.get(j) + step[r]
				if j == 0 && v <= 0 {
					v = q.lambda / 10 // keep lambda positive, move toward the bound
				}
				if j > 0 && v < 0 {
					v = 0
				}
				next.set(j, v)
			}
			nextCost := p.sse(next)
			if nextCost < cost {
				q, cost = next, nextCost
				damping = math.Max(damping/10, 1e-12)
				improved = true
				break
			}
			damping *= 10
		}
		if !improved {
			break
		}
	}
	return q
}

// solve solves a·x = b by Gaussian elimination with partial pivoting; the
// systems here have at most three unknowns.
func solve(a [][]float64, b []float64) ([]float64, bool) {
	m := len(b)
	for col := range m {
		pivot := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[pivot][col]) {
				pivot = r
			}
		}
		if a[pivot][col] == 0 || math.IsNaN(a[pivot][col]) {
			return nil, false
		}
		a[col], a[pivot] = a[pivot], a[col]
		b[col], b[pivot] = b[pivot], b[col]
		for r := col + 1; r < m; r++ {
			factor := a[r][col] / a[col][col]
			for c := col; c < m; c++ {
				a[r][c] -= factor * a[col][c]
			}
			b[r] -= factor * b[col]
		}
	}
	x := make([]float64, m)
	for r := m - 1; r >= 0; r-- {
		sum := b[r]
		for c := r + 1; c < m; c++ {
			sum -= a[r][c] * x[c]
		}
		x[r] = sum / a[r][r]
		if math.IsNaN(x[r]) || math.IsInf(x[r], 0) {
			return nil, false
		}
	}
	return x, true
}

func maxOf(values []float64) float64 {
	m := values[0]
	for _, v := range values[1:] {
		m = math.Max(m, v)
	}
	return m
}
