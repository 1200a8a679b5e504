package experiment

import (
	"slices"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

// FigureID names a figure for scripts, --fail-on rules and renderers; its
// display name ("p95 latency") is the renderers' business.
type FigureID string

// The figures of a verdict and of a comparison.
const (
	FigureThroughput FigureID = "throughput"
	FigureP50        FigureID = "p50"
	FigureP95        FigureID = "p95"
	FigureP99        FigureID = "p99"
	FigureErrorRate  FigureID = "error_rate"
	FigureElapsed    FigureID = "elapsed"
	FigureCPU        FigureID = "cpu"
	FigureRSSPeak    FigureID = "rss_peak"
	FigureRSSAverage FigureID = "rss_avg"
	FigurePSSPeak    FigureID = "pss_peak"
	FigurePSSAverage FigureID = "pss_avg"
	// FigureCapacity is the answer of a capacity search at each run (a
	// plan with params and capacity:): its rate, or its VUs.
	FigureCapacity FigureID = "capacity"
)

// ChangeStatus is what the comparison of a figure's runs at two points found.
type ChangeStatus string

const (
	// Significant: the Mann-Whitney U p-value is at most Alpha.
	Significant ChangeStatus = "significant"
	// NotSignificant: it is above Alpha, with enough runs that it could
	// have been below: the runs do not tell the two points apart.
	NotSignificant ChangeStatus = "not_significant"
	// Untested: no test could say anything; Reason says why.
	Untested ChangeStatus = "untested"
)

// UntestedReason says why a change was not tested.
type UntestedReason string

const (
	// TooFewRuns: the smallest p-value these numbers of runs can give,
	// 2/C(n1+n2, n1), is above Alpha (3 runs against 3, or 3 against 4),
	// so only the medians are compared.
	TooFewRuns UntestedReason = "too_few_runs"
	// EqualSamples: every run of both points gave the same value (an
	// error rate of 0 throughout): there is no difference to test.
	EqualSamples UntestedReason = "equal_samples"
)

// Change is a figure at one point against its reference point. From a
// median of 0 there is no relative change: DeltaDefined is then false
// whatever the status.
type Change struct {
	Status       ChangeStatus   `json:"status"`
	Reason       UntestedReason `json:"reason,omitempty"`
	P            float64        `json:"p"`     // Mann-Whitney U p-value; 1 when untested
	MinP         float64        `json:"min_p"` // the smallest p these numbers of runs can give
	Alpha        float64        `json:"alpha"`
	N1           int            `json:"n1"` // runs of the reference
	N2           int            `json:"n2"` // runs of the point
	Delta        float64        `json:"delta"`
	DeltaDefined bool           `json:"delta_defined"`
	// Test names the test behind P: TestMannWhitney (unpaired; empty in
	// files written before paired rounds), TestWilcoxon or TestSign
	// (paired, see Pairing). A paired change's N1 and N2 are both the
	// rounds compared, its Delta the Hodges–Lehmann median ratio less 1,
	// with its Interval.
	Test     string    `json:"test,omitempty"`
	Rounds   int       `json:"rounds,omitempty"`
	Interval *Interval `json:"interval,omitempty"`
}

// IsPaired reports whether the change compares rounds.
func (c Change) IsPaired() bool { return c.Test == TestWilcoxon || c.Test == TestSign }

// Significant reports whether the change is more than noise.
func (c Change) Significant() bool { return c.Status == Significant }

// compareRuns compares a figure's runs at a point (test) with those at its
// reference (base).
func compareRuns(base, test []float64) Change {
	c := stats.Compare(base, test, Alpha)
	ch := Change{P: c.P, MinP: c.MinP, Alpha: c.Alpha, N1: c.Base.N, N2: c.Test.N, Delta: c.Delta, DeltaDefined: c.DeltaDefined, Test: TestMannWhitney}
	switch {
	case c.Significant:
		ch.Status = Significant
	case !c.Testable:
		ch.Status, ch.Reason = Untested, TooFewRuns
	case allEqual(base, test):
		ch.Status, ch.Reason = Untested, EqualSamples
	default:
		ch.Status = NotSignificant
	}
	return ch
}

func allEqual(a, b []float64) bool {
	all := append(slices.Clone(a), b...)
	for _, v := range all {
		if v != all[0] {
			return false
		}
	}
	return true
}

// Spread is a figure's runs at one point: how many, their median with its
// 95% confidence interval (Bounded false when there are too few runs for
// one: fewer than stats.IntervalRuns), and the lowest and highest run.
type Spread struct {
	N       int     `json:"n"`
	Median  float64 `json:"median"`
	Lo      float64 `json:"ci_low"`
	Hi      float64 `json:"ci_high"`
	Bounded bool    `json:"ci_bounded"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
}

func spreadOf(samples []float64) Spread {
	s := stats.Summarize(samples, 0)
	sp := Spread{N: s.N, Median: s.Center, Lo: s.Lo, Hi: s.Hi, Bounded: s.Bounded}
	if len(samples) > 0 {
		sp.Min, sp.Max = slices.Min(samples), slices.Max(samples)
	}
	return sp
}

// Sampling says what the numbers of runs allow: whether each point has
// enough for a confidence interval, and whether the comparisons could tell
// a difference from noise at all. The renderers turn it into one sentence
// in place of benchmath's own warnings.
type Sampling struct {
	// RunsMin and RunsMax are the fewest and most runs of a point (or a
	// side of a comparison).
	RunsMin int `json:"runs_min"`
	RunsMax int `json:"runs_max"`
	// Confidence is the level of the intervals; IntervalRuns the fewest
	// runs that give one (6 at 95%).
	Confidence   float64 `json:"confidence"`
	IntervalRuns int     `json:"interval_runs"`
	// Alpha is the significance level; RunsToTest the fewest runs a point
	// for which n against n can be significant (4 at 0.05).
	Alpha      float64 `json:"alpha"`
	RunsToTest int     `json:"runs_to_test"`
	// Untested is the comparison with the largest smallest-attainable
	// p-value among those too few runs to test, if any.
	Untested *UntestedPair `json:"untested,omitempty"`
}

// UntestedPair is n1 runs against n2 that no test can call different:
// the smallest p-value they can give, MinP, is above Alpha.
type UntestedPair struct {
	N1   int     `json:"n1"`
	N2   int     `json:"n2"`
	MinP float64 `json:"min_p"`
}

// newSampling describes the runs per point (or side) and the changes.
func newSampling(runs []int, changes []Change) Sampling {
	s := Sampling{Confidence: stats.DefaultConfidence, IntervalRuns: stats.IntervalRuns(0), Alpha: Alpha, RunsToTest: stats.RunsToTest(Alpha)}
	first := true
	for _, n := range runs {
		if n == 0 {
			continue
		}
		if first || n < s.RunsMin {
			s.RunsMin = n
		}
		s.RunsMax = max(s.RunsMax, n)
		first = false
	}
	for _, c := range changes {
		if c.Reason == TooFewRuns && (s.Untested == nil || c.MinP > s.Untested.MinP) {
			s.Untested = &UntestedPair{N1: c.N1, N2: c.N2, MinP: c.MinP}
		}
	}
	return s
}

// FallsShort reports whether the runs are too few for a confidence
// interval at some point, or for a test of some comparison.
func (s Sampling) FallsShort() bool {
	return s.RunsMin > 1 && s.RunsMin < s.IntervalRuns || s.Untested != nil
}

// figure reads one figure from a run's result.
type figure struct {
	id         FigureID
	name, unit string
	higher     bool
	get        func(r *result.Result) (float64, bool)
	applies    func(rs []*result.Result) bool
}

// FigureInfo is what a figure is called and measured in, for those who read
// figures from results outside a verdict (loadlab history).
type FigureInfo struct {
	ID           FigureID
	Name, Unit   string
	HigherBetter bool
	// Of reads the figure from a run's result; false when the run has none.
	Of func(r *result.Result) (float64, bool)
}

// Figures are every figure a verdict or comparison knows, in their order.
func Figures() []FigureInfo {
	out := make([]FigureInfo, len(figures))
	for i, f := range figures {
		out[i] = FigureInfo{ID: f.id, Name: f.name, Unit: f.unit, HigherBetter: f.higher, Of: f.get}
	}
	return out
}
