package stats

import (
	"fmt"
	"math"
	"strings"

	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchunit"
)

// Defaults used when a caller passes 0, the same as benchstat's flags.
const (
	DefaultConfidence = 0.95
	DefaultAlpha      = 0.05
)

// A Summary describes one set of repeated measurements of a figure:
// its median and a distribution-free confidence interval around it.
type Summary struct {
	// N is the number of samples used (non-finite samples are dropped).
	N int
	// Center is the median.
	Center float64
	// Bounded is false when there are too few samples for an interval at
	// the requested level (benchstat prints "± ∞"); Lo and Hi are then 0
	// rather than benchmath's ±Inf, which encoding/json cannot store.
	Bounded bool
	// Lo and Hi bound the confidence interval when Bounded.
	Lo, Hi float64
	// Confidence is the actual level of [Lo, Hi]; order statistics give
	// discrete levels, so it is at least the level requested.
	Confidence float64
	// Warnings explain anything the numbers alone would hide.
	Warnings []string
}

// Summarize computes the median of samples and its confidence interval at
// the given level (for example 0.95; 0 means DefaultConfidence). It does not
// modify samples.
func Summarize(samples []float64, confidence float64) Summary {
	var warnings []string
	confidence, warnings = checkLevel("confidence", confidence, DefaultConfidence, warnings)
	values, warnings := finite(samples, warnings)
	if len(values) == 0 {
		return Summary{Confidence: confidence, Warnings: append(warnings, "no samples")}
	}
	sample := benchmath.NewSample(values, &benchmath.DefaultThresholds)
	s := benchmath.AssumeNothing.Summary(sample, confidence)
	summary := Summary{
		N:          len(values),
		Center:     s.Center,
		Confidence: s.Confidence,
		Warnings:   appendErrors(warnings, s.Warnings),
	}
	// The median's interval is symmetric in order statistics, so both
	// bounds are infinite or neither is.
	if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
		summary.Bounded, summary.Lo, summary.Hi = true, s.Lo, s.Hi
	}
	return summary
}

// RangeString renders the confidence interval as benchstat does: the larger
// distance from the center to a bound, as a percentage of the center ("2%"),
// "∞" when the interval is unbounded and "?" when a bound has the other sign.
func (s Summary) RangeString() string {
	if s.N == 0 {
		return "?"
	}
	return s.bench().PctRangeString()
}

// String renders the summary as one benchstat cell, "101.0 ± 2%", with the
// center scaled by SI prefixes (k, M, m, µ ...) to at least three
// significant digits; units are the caller's to add.
func (s Summary) String() string {
	return FormatCells(s)[0]
}

// FormatCells renders summaries as the cells of one benchstat row: like
// String, but all centers share the scale that suits the smallest non-zero
// one, so that 1000.5 and 900.5 print as "1000.5" and "900.5", not "1.000k"
// and "900.5". Empty summaries render as "no samples".
func FormatCells(summaries ...Summary) []string {
	var centers []float64
	for _, s := range summaries {
		if s.N > 0 {
			centers = append(centers, s.Center)
		}
	}
	scale := benchunit.CommonScale(centers, benchunit.Decimal)
	cells := make([]string, len(summaries))
	for i, s := range summaries {
		if s.N == 0 {
			cells[i] = "no samples"
			continue
		}
		cells[i] = scale.Format(s.Center) + " ± " + s.RangeString()
	}
	return cells
}

func (s Summary) bench() benchmath.Summary {
	lo, hi := math.Inf(-1), math.Inf(1)
	if s.Bounded {
		lo, hi = s.Lo, s.Hi
	}
	return benchmath.Summary{Center: s.Center, Lo: lo, Hi: hi, Confidence: s.Confidence}
}

// A Comparison says whether a test set of measurements differs from a
// baseline set, and by how much.
type Comparison struct {
	// P is the p-value of the two-sided Mann-Whitney U test. It is 1 when
	// the test cannot be run (a side is empty, or all samples are equal).
	P float64
	// Alpha is the significance level the comparison used.
	Alpha float64
	// Base and Test summarize the two sides.
	Base, Test Summary
	// Delta is the relative change of the centers, (test-base)/base:
	// +0.12 means the test center is 12% above the baseline's. It is 0
	// when DeltaDefined is false.
	Delta float64
	// DeltaDefined is false when the baseline center is 0 and the test
	// center is not, so no relative change exists (benchstat prints "?").
	DeltaDefined bool
	// Significant is true when P <= Alpha. Following benchstat, a
	// non-significant difference is shown as "~" whatever Delta is.
	Significant bool
	// MinP is the smallest p-value the test could give for samples of
	// these sizes (see MinP); Testable is MinP <= Alpha, that is, whether
	// a difference could be significant at all with this many runs.
	MinP     float64
	Testable bool
	// Warnings concern the comparison itself (for example too few samples
	// to ever reach Alpha); each side's own warnings stay in Base and Test.
	Warnings []string
}

// Compare compares test against base with the Mann-Whitney U test at level
// alpha (0 means DefaultAlpha), summarizing each side at DefaultConfidence.
// It does not modify its arguments.
func Compare(base, test []float64, alpha float64) Comparison {
	return CompareWith(base, test, alpha, DefaultConfidence)
}

// CompareWith is Compare with the confidence level of the two summaries
// chosen by the caller, like benchstat's -alpha and -confidence flags.
func CompareWith(base, test []float64, alpha, confidence float64) Comparison {
	var warnings []string
	alpha, warnings = checkLevel("alpha", alpha, DefaultAlpha, warnings)
	c := Comparison{
		P:     1,
		Alpha: alpha,
		Base:  Summarize(base, confidence),
		Test:  Summarize(test, confidence),
	}
	c.MinP = MinP(c.Base.N, c.Test.N)
	c.Testable = c.MinP <= alpha
	switch {
	case c.Base.N == 0:
		c.Warnings = append(warnings, "no baseline samples to compare with")
		return c
	case c.Test.N == 0:
		c.Warnings = append(warnings, "no test samples to compare")
		return c
	}

	thresholds := benchmath.DefaultThresholds
	thresholds.CompareAlpha = alpha
	baseValues, _ := finite(base, nil)
	testValues, _ := finite(test, nil)
	bc := benchmath.AssumeNothing.Compare(
		benchmath.NewSample(baseValues, &thresholds),
		benchmath.NewSample(testValues, &thresholds))

	c.P = bc.P
	c.Significant = !(bc.P > bc.Alpha) // benchmath's FormatDelta prints "~" iff P > Alpha.
	c.Warnings = appendErrors(warnings, bc.Warnings)
	// Same cases as benchmath's FormatDelta: equal centers are "0.00%"
	// even when both are zero; otherwise a zero baseline has no ratio.
	switch b, t := c.Base.Center, c.Test.Center; {
	case b == t:
		c.Delta, c.DeltaDefined = 0, true
	case b != 0:
		c.Delta, c.DeltaDefined = t/b-1, true // benchmath's arithmetic, so rounding matches
		if math.IsInf(c.Delta, 0) {
			// A baseline so close to zero that the ratio overflows:
			// as undefined as a zero baseline.
			c.Delta, c.DeltaDefined = 0, false
		}
	}
	return c
}

// DeltaString renders the change as benchstat's "vs base" column: "~" when
// not significant, "?" when the relative change is undefined, otherwise a
// signed percentage with two decimals ("+11.88%", "-6.10%", "0.00%").
func (c Comparison) DeltaString() string {
	switch {
	case !c.Significant:
		return "~"
	case !c.DeltaDefined:
		return "?"
	case c.Delta == 0:
		return "0.00%"
	}
	return fmt.Sprintf("%+.2f%%", c.Delta*100)
}

// TestString renders the test statistic as benchstat does: "p=0.002 n=5"
// when both sides have 5 samples, "p=0.001 n=5+10" otherwise; the p part is
// left out when P is exactly 0.
func (c Comparison) TestString() string {
	return benchmath.Comparison{P: c.P, N1: c.Base.N, N2: c.Test.N, Alpha: c.Alpha}.String()
}

// String renders the comparison as benchstat's delta and test columns
// together: "+12.34% (p=0.002 n=5)" or "~ (p=0.310 n=5)".
func (c Comparison) String() string {
	return c.DeltaString() + " (" + c.TestString() + ")"
}

// Notes returns the warnings of AllWarnings other than benchmath's two about
// sample sizes ("need >= 6 samples for confidence interval ...", "need >= 4
// samples to detect a difference ..."): a caller that explains the sample
// sizes in its own words, from Summary.Bounded, Testable and MinP, shows
// these instead.
func (c Comparison) Notes() []string {
	var out []string
	for _, w := range c.AllWarnings() {
		if !IsSampleSizeWarning(w) {
			out = append(out, w)
		}
	}
	return out
}

// IsSampleSizeWarning reports whether w is one of benchmath's warnings about
// too few samples, as Summarize and Compare pass them on (with or without
// the side's prefix of AllWarnings).
func IsSampleSizeWarning(w string) bool {
	w = strings.TrimPrefix(strings.TrimPrefix(w, "baseline: "), "test: ")
	return strings.HasPrefix(w, "need >= ") || strings.HasPrefix(w, "need > ")
}

// AllWarnings returns the warnings of the comparison and of both summaries,
// each prefixed with the side it concerns, for a footnote.
func (c Comparison) AllWarnings() []string {
	var all []string
	for _, w := range c.Base.Warnings {
		all = append(all, "baseline: "+w)
	}
	for _, w := range c.Test.Warnings {
		all = append(all, "test: "+w)
	}
	return append(all, c.Warnings...)
}

// MinP is the smallest p-value the two-sided Mann-Whitney U test can give
// for samples of n1 and n2 values, 2/C(n1+n2, n1): the p of two samples that
// do not overlap at all. A difference between so few runs can be significant
// at level alpha only when MinP(n1, n2) <= alpha: 3 runs against 5 can
// (MinP = 0.036), 3 against 4 cannot (0.057). It is 1 when a side is empty.
//
// benchmath warns only when both sides are smaller than the size at which n
// against n reaches alpha; MinP also decides uneven sizes.
func MinP(n1, n2 int) float64 {
	if n1 < 1 || n2 < 1 {
		return 1
	}
	// C(n1+n2, n1) as a float: exact for the sizes of experiments, and
	// no overflow for large ones (the p-value then underflows to 0).
	ways := 1.0
	for i := 1; i <= n1; i++ {
		ways = ways * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/ways)
}

// Testable reports whether n1 runs against n2 can show a significant
// difference at level alpha (0 means DefaultAlpha): MinP(n1, n2) <= alpha.
func Testable(n1, n2 int, alpha float64) bool {
	alpha, _ = checkLevel("alpha", alpha, DefaultAlpha, nil)
	return MinP(n1, n2) <= alpha
}

// RunsToTest is the fewest runs against as many that can show a
// significant difference at level alpha (0 means DefaultAlpha): 4 at 0.05.
func RunsToTest(alpha float64) int {
	n := 1
	for !Testable(n, n, alpha) {
		n++
	}
	return n
}

// RunsToTestAgainst is the fewest runs m such that n runs against m can show
// a significant difference at level alpha: 5 against 3 at 0.05, 8 against 2.
// It is 0 when no number of runs is enough (n < 1).
func RunsToTestAgainst(n int, alpha float64) int {
	if n < 1 {
		return 0
	}
	m := 1
	for !Testable(n, m, alpha) {
		m++
	}
	return m
}

// IntervalRuns is the fewest samples whose median has a bounded confidence
// interval at the given level (0 means DefaultConfidence): 6 at 0.95, when
// the lowest and highest of them cover the median with 96.9% confidence.
// With fewer, Summarize returns an unbounded summary.
func IntervalRuns(confidence float64) int {
	confidence, _ = checkLevel("confidence", confidence, DefaultConfidence, nil)
	var samples []float64
	for n := 1; n <= 1000; n++ {
		samples = append(samples, float64(n))
		if Summarize(samples, confidence).Bounded {
			return n
		}
	}
	return 0
}

// checkLevel returns level, or def when level is 0 (the zero value asks for
// the default) or outside (0, 1), noting the latter in warnings.
func checkLevel(name string, level, def float64, warnings []string) (float64, []string) {
	switch {
	case level == 0:
		return def, warnings
	case !(level > 0 && level < 1): // also catches NaN
		return def, append(warnings, fmt.Sprintf("%s %v is not in (0, 1); using %v", name, level, def))
	}
	return level, warnings
}

// finite returns a copy of samples without NaN and ±Inf, because benchmath
// sorts its input in place and a NaN would make the median meaningless.
func finite(samples []float64, warnings []string) ([]float64, []string) {
	values := make([]float64, 0, len(samples))
	for _, v := range samples {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			values = append(values, v)
		}
	}
	if dropped := len(samples) - len(values); dropped > 0 {
		warnings = append(warnings, fmt.Sprintf("dropped %d non-finite %s", dropped, plural(dropped, "sample")))
	}
	return values, warnings
}

func appendErrors(warnings []string, errs []error) []string {
	for _, err := range errs {
		warnings = append(warnings, err.Error())
	}
	return warnings
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
