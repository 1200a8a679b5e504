package stats

import (
	"math"
	"slices"
)

// SignTestBelow is the number of pairs under which ComparePaired uses the
// sign test rather than Wilcoxon's signed-rank test. Below 6 pairs neither
// can reach p <= 0.05 (both give 2/2^n at best, 0.0625 at 5), and with so
// few pairs the symmetry the signed-rank test assumes cannot be seen; the
// sign test assumes nothing but independent rounds.
const SignTestBelow = 6

// ExactBelow is the number of non-zero differences up to which the
// signed-rank test uses its exact distribution (scipy's limit, 50); beyond,
// or with zeros or ties, the normal approximation.
const ExactBelow = 50

// Test methods of a Paired comparison.
const (
	MethodWilcoxon = "wilcoxon" // Wilcoxon signed-rank, two-sided
	MethodSign     = "sign"     // the sign test, two-sided
)

// SignedRank is the two-sided Wilcoxon signed-rank test of differences
// against a median of 0, with scipy.stats.wilcoxon's conventions
// (zero_method="wilcox", no continuity correction): zero differences are
// dropped; with at most ExactBelow left, none tied in absolute value, the
// p-value is exact, p = 2·min(P(T <= W+), P(T >= W+)), capped at 1;
// otherwise it is the normal approximation with the tie correction of the
// variance, n(n+1)(2n+1)/24 − Σ(t³−t)/48 over groups of t tied ranks.
type SignedRank struct {
	N     int     // non-zero differences, those ranked
	Zeros int     // zero differences, dropped
	Ties  bool    // some absolute differences were tied
	WPlus float64 // the sum of the ranks of the positive differences
	// Statistic is min(W+, W−), scipy's statistic.
	Statistic float64
	P         float64
	Exact     bool
}

// WilcoxonSignedRank tests the differences d. With no non-zero
// difference, P is 1.
func WilcoxonSignedRank(d []float64) SignedRank {
	var nz []float64
	out := SignedRank{P: 1}
	for _, x := range d {
		if x == 0 {
			out.Zeros++
			continue
		}
		nz = append(nz, x)
	}
	n := len(nz)
	out.N = n
	if n == 0 {
		return out
	}
	ranks, groups := absRanks(nz)
	for i, x := range nz {
		if x > 0 {
			out.WPlus += ranks[i]
		}
	}
	total := float64(n*(n+1)) / 2
	out.Statistic = math.Min(out.WPlus, total-out.WPlus)
	for _, g := range groups {
		if g > 1 {
			out.Ties = true
		}
	}
	if n <= ExactBelow && out.Zeros == 0 && !out.Ties {
		out.Exact = true
		pmf := signedRankPMF(n)
		w := int(out.WPlus)
		if 2*w == len(pmf)-1 {
			out.P = 1
			return out
		}
		var less, greater float64
		for k, p := range pmf {
			if k <= w {
				less += p
			}
			if k >= w {
				greater += p
			}
		}
		out.P = math.Min(1, 2*math.Min(less, greater))
		return out
	}
	mean := total / 2
	v := float64(n*(n+1)*(2*n+1)) / 24
	for _, t := range groups {
		tf := float64(t)
		v -= (tf*tf*tf - tf) / 48
	}
	if v <= 0 {
		return out
	}
	z := (out.Statistic - mean) / math.Sqrt(v)
	out.P = math.Min(1, math.Erfc(math.Abs(z)/math.Sqrt2))
	return out
}

// absRanks ranks |x| from 1, ties given their mean rank, and returns the
// sizes of the groups of tied values.
func absRanks(x []float64) ([]float64, []int) {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch av, bv := math.Abs(x[a]), math.Abs(x[b]); {
		case av < bv:
			return -1
		case av > bv:
			return 1
		}
		return 0
	})
	ranks := make([]float64, len(x))
	var groups []int
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && math.Abs(x[idx[j]]) == math.Abs(x[idx[i]]) {
			j++
		}
		r := float64(i+1+j) / 2 // the mean of ranks i+1 .. j
		for k := i; k < j; k++ {
			ranks[idx[k]] = r
		}
		groups = append(groups, j-i)
		i = j
	}
	return ranks, groups
}

// signedRankPMF is the null distribution of W+ for n pairs: P(W+ = k) for
// k = 0 .. n(n+1)/2, built one rank at a time (each in or out with
// probability 1/2).
func signedRankPMF(n int) []float64 {
	pmf := []float64{1}
	for r := 1; r <= n; r++ {
		next := make([]float64, len(pmf)+r)
		for k, p := range pmf {
			next[k] += p / 2
			next[k+r] += p / 2
		}
		pmf = next
	}
	return pmf
}

const exactIntervalBelow = 200

// SignTest is the two-sided sign test of differences against a median of
// 0: zeros dropped, p = 2·P(Binomial(n, ½) <= min(positives, negatives)),
// capped at 1 (scipy.stats.binomtest(k, n, 0.5).pvalue).
func SignTest(d []float64) (positive, negative int, p float64) {
	for _, x := range d {
		switch {
		case x > 0:
			positive++
		case x < 0:
			negative++
		}
	}
	n := positive + negative
	if n == 0 {
		return 0, 0, 1
	}
	k := min(positive, negative)
	var tail float64
	for i := 0; i <= k; i++ {
		tail += binomial(n, i)
	}
	return positive, negative, math.Min(1, 2*tail*math.Pow(0.5, float64(n)))
}

func binomial(n, k int) float64 {
	out := 1.0
	for i := 1; i <= k; i++ {
		out = out * float64(n-k+i) / float64(i)
	}
	return out
}

// HodgesLehmann is the Hodges–Lehmann estimate of the median of symmetric
// differences, the median of their n(n+1)/2 Walsh averages (dᵢ+dⱼ)/2, i <=
// j, with its distribution-free interval (Hollander & Wolfe, Nonparametric
// Statistical Methods, §3.2; R's wilcox.test(conf.int = TRUE)): the k-th
// smallest and k-th largest Walsh averages, k the largest with 2·P(W+ <=
// k−1) <= 1 − confidence under the exact null distribution (the normal one
// beyond 200 pairs, where the exact one costs more than it tells). With too few pairs for any such k (fewer than 6
// at 95%), Bounded is false and Lo, Hi are the extreme Walsh averages.
type HodgesLehmann struct {
	N        int
	Estimate float64
	Lo, Hi   float64
	Bounded  bool
	// Confidence is the level [Lo, Hi] achieves: the distribution is
	// discrete, so it is at least the one asked for when Bounded.
	Confidence float64
}

// EstimateShift computes the Hodges–Lehmann estimate of d and its interval
// at confidence (0 means DefaultConfidence).
func EstimateShift(d []float64, confidence float64) HodgesLehmann {
	confidence, _ = checkLevel("confidence", confidence, DefaultConfidence, nil)
	n := len(d)
	out := HodgesLehmann{N: n}
	if n == 0 {
		return out
	}
	var walsh []float64
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			walsh = append(walsh, (d[i]+d[j])/2)
		}
	}
	slices.Sort(walsh)
	m := len(walsh)
	if m%2 == 1 {
		out.Estimate = walsh[m/2]
	} else {
		out.Estimate = (walsh[m/2-1] + walsh[m/2]) / 2
	}
	out.Lo, out.Hi = walsh[0], walsh[m-1]
	tail := (1 - confidence) / 2
	k, achieved := 0, 0.0
	if n <= exactIntervalBelow {
		pmf := signedRankPMF(n)
		cdf := 0.0
		for kk := 1; kk <= m; kk++ {
			cdf += pmf[kk-1] // P(W+ <= kk-1)
			if cdf > tail {
				break
			}
			k, achieved = kk, 1-2*cdf
		}
	} else {
		z := math.Sqrt2 * math.Erfinv(1-2*tail)
		mean, sd := float64(m)/2, math.Sqrt(float64(n*(n+1)*(2*n+1))/24)
		k = int(math.Floor(mean - z*sd))
		achieved = confidence
	}
	if k >= 1 && k <= m-k+1 {
		out.Lo, out.Hi, out.Bounded, out.Confidence = walsh[k-1], walsh[m-k], true, achieved
	} else {
		out.Confidence = 1 - 2*math.Pow(0.5, float64(n)) // of [min, max] Walsh averages
	}
	return out
}

// Paired is a comparison of paired measurements (one pair a round): test
// against base, judged on the log ratios ln(testᵢ/baseᵢ), whose median a
// change of settings moves and the machine's common slow phases do not.
type Paired struct {
	// Method is MethodSign below SignTestBelow pairs, MethodWilcoxon from
	// there.
	Method string
	N      int // pairs
	P      float64
	// Exact says whether P is from the exact null distribution.
	Exact bool
	// Ratio is exp of the Hodges–Lehmann estimate of the median log
	// ratio: 0.926 is 7.4% lower. Lo and Hi bound it (Bounded, at
	// Confidence).
	Ratio      float64
	Lo, Hi     float64
	Bounded    bool
	Confidence float64
	// MinP is the smallest P these pairs could give, 2/2^n; Testable is
	// MinP <= Alpha.
	MinP     float64
	Testable bool
	Alpha    float64
	// Positive says that every value was above zero: a ratio needs it.
	// When false nothing else is set.
	Positive bool
}

// LogRatios returns ln(testᵢ/baseᵢ), and false when a value is not
// positive or the lengths differ.
func LogRatios(base, test []float64) ([]float64, bool) {
	if len(base) != len(test) {
		return nil, false
	}
	out := make([]float64, len(base))
	for i := range base {
		if !(base[i] > 0) || !(test[i] > 0) || math.IsInf(base[i], 0) || math.IsInf(test[i], 0) {
			return nil, false
		}
		out[i] = math.Log(test[i] / base[i])
	}
	return out, true
}

// ComparePaired compares test against base, pair by pair, at level alpha
// (0 means DefaultAlpha), its interval at DefaultConfidence.
func ComparePaired(base, test []float64, alpha float64) Paired {
	alpha, _ = checkLevel("alpha", alpha, DefaultAlpha, nil)
	out := Paired{N: len(base), P: 1, Alpha: alpha, Method: MethodWilcoxon, MinP: PairedMinP(len(base))}
	if len(base) < SignTestBelow {
		out.Method = MethodSign
	}
	d, ok := LogRatios(base, test)
	if !ok || len(d) == 0 {
		return out
	}
	out.Positive = true
	if out.Method == MethodSign {
		_, _, out.P = SignTest(d)
		out.Exact = true
	} else {
		w := WilcoxonSignedRank(d)
		out.P, out.Exact = w.P, w.Exact
	}
	hl := EstimateShift(d, 0)
	out.Ratio, out.Lo, out.Hi = math.Exp(hl.Estimate), math.Exp(hl.Lo), math.Exp(hl.Hi)
	out.Bounded, out.Confidence = hl.Bounded, hl.Confidence
	out.Testable = out.MinP <= alpha
	return out
}

// PairedMinP is the smallest two-sided p-value the sign test or the exact
// signed-rank test can give for n pairs: 2/2^n, when every pair moves the
// same way (0.0625 at 5 pairs, 0.031 at 6). It is 1 for no pairs.
func PairedMinP(n int) float64 {
	if n < 1 {
		return 1
	}
	return math.Min(1, 2*math.Pow(0.5, float64(n)))
}

// PairsToTest is the fewest pairs whose comparison can be significant at
// alpha (0 means DefaultAlpha): 6 at 0.05.
func PairsToTest(alpha float64) int {
	alpha, _ = checkLevel("alpha", alpha, DefaultAlpha, nil)
	n := 1
	for PairedMinP(n) > alpha {
		n++
	}
	return n
}

// Power is the power at which DetectableChange sizes a change: 80%, the
// convention of sample-size tables.
const Power = 0.8

// RelativeSpread is the run-to-run spread of positive samples as a
// fraction of their level: the standard deviation of ln x, estimated
// robustly as 1.4826 × the median absolute deviation of ln x (so that one
// stolen run does not set it). It is 0 for fewer than two positive
// samples.
func RelativeSpread(samples []float64) float64 {
	var logs []float64
	for _, x := range samples {
		if x > 0 && !math.IsInf(x, 0) {
			logs = append(logs, math.Log(x))
		}
	}
	return SpreadOf(logs)
}

// Quantile is the q-quantile of x (0 ≤ q ≤ 1), interpolated linearly
// between order statistics (R's type 7, numpy's default); 0 for none.
func Quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	k := q * float64(len(s)-1)
	i := int(k)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (s[i+1]-s[i])*(k-float64(i))
}

func medianOf(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// DetectableChange is the smallest change, as a fraction, that n pairs (or
// n runs a side) of a figure whose runs spread by spread (RelativeSpread)
// detect at level alpha with Power: (z₁₋α/₂ + z_power)·√2·spread/√n, the
// difference of two runs spreading √2 times one run's. It is 0 when n < 1.
func DetectableChange(spread float64, n int, alpha float64) float64 {
	alpha, _ = checkLevel("alpha", alpha, DefaultAlpha, nil)
	if n < 1 {
		return 0
	}
	z := normalQuantile(1-alpha/2) + normalQuantile(Power)
	return math.Expm1(z * math.Sqrt2 * spread / math.Sqrt(float64(n)))
}

// DetectablePairedChange is DetectableChange for n pairs whose log ratios
// themselves spread by ratioSpread (the spread of the differences, so no
// √2): (z₁₋α/₂ + z_power)·ratioSpread/√n.
func DetectablePairedChange(ratioSpread float64, n int, alpha float64) float64 {
	return DetectableChange(ratioSpread/math.Sqrt2, n, alpha)
}

// SpreadOf is the robust standard deviation of x: 1.4826 × its median
// absolute deviation; 0 for fewer than two values.
func SpreadOf(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	med := medianOf(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - med)
	}
	return 1.4826 * medianOf(dev)
}

func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
