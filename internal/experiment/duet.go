package experiment

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

// Duet benchmarking (Bulej et al., "Duet Benchmarking: Improving
// Measurement Accuracy in the Cloud", ICPE 2020): A and B run at the same
// time, under one load generator with identical schedules, so that the
// machine's interference hits both; the verdict is on the ratio B/A of each
// run, which that interference moves far less than either side.

// DuetFigure is one figure's ratio B/A over a duet's runs.
type DuetFigure struct {
	Figure FigureID `json:"figure"`
	// Ratios are each run's B/A; A and B each side's figure, run by run.
	Ratios []float64 `json:"ratios"`
	A      []float64 `json:"a"`
	B      []float64 `json:"b"`
	// Ratio is the Hodges–Lehmann median of the ratios (of their logs),
	// with its interval [Lo, Hi] at Confidence; Bounded false with too few
	// runs for one.
	Ratio      float64 `json:"ratio"`
	Lo         float64 `json:"low"`
	Hi         float64 `json:"high"`
	Bounded    bool    `json:"bounded"`
	Confidence float64 `json:"confidence"`
	// P is the Wilcoxon signed-rank test (sign test under 6 runs) of the
	// log ratios against 0; Significant at Alpha.
	P           float64 `json:"p"`
	Test        string  `json:"test"`
	Testable    bool    `json:"testable"`
	Significant bool    `json:"significant"`
	// Spread is the robust run-to-run spread of the log ratios, and
	// Detectable the smallest change these runs could tell from it (at
	// Alpha, stats.Power): the duet's noise floor.
	Spread     float64 `json:"spread"`
	Detectable float64 `json:"detectable"`
}

// DuetVerdict is a duet's answer: B against A, run by run.
type DuetVerdict struct {
	A, B string `json:"-"` // the scenarios of the two sides
	Runs int    `json:"runs"`
	// Throughput and P95 are the ratios B/A of each side's throughput and
	// p95 latency.
	Throughput *DuetFigure `json:"throughput"`
	P95        *DuetFigure `json:"p95"`
	// PerSecond is the throughput's ratio B/A second by second, over every
	// whole second of every run that counted both sides' responses; nil
	// when the results have no per-second counts (written before them).
	PerSecond *DuetSeconds `json:"per_second,omitempty"`
	// Alike is false when the two sides were not treated alike: the load
	// generator was saturated, or one side had errors, timeouts, dropped or
	// late arrivals the other did not; Unlike says each.
	Alike  bool     `json:"alike"`
	Unlike []string `json:"unlike,omitempty"`
}

// DuetSeconds is the ratio B/A of the two sides' responses in each second.
// The seconds of a run are not independent of each other (a slow second
// is often followed by another), so they are not tested: the verdict is
// on the runs' ratios; these show how steady the ratio was within them.
type DuetSeconds struct {
	Seconds int `json:"seconds"`
	// Ratio is the median of the seconds' ratios, Q1 and Q3 their
	// quartiles: half the seconds lie between them.
	Ratio float64 `json:"ratio"`
	Q1    float64 `json:"q1"`
	Q3    float64 `json:"q3"`
}

// scenarioOf is a run's totals of one scenario; nil without them.
func scenarioOf(r *result.Result, name string) *result.Summary {
	if t := totalsOf(r, name); t != nil {
		return &t.Summary
	}
	return nil
}

func totalsOf(r *result.Result, name string) *result.ScenarioTotals {
	for i := range r.Scenarios {
		if r.Scenarios[i].Scenario == name {
			return &r.Scenarios[i]
		}
	}
	return nil
}

// duetSeconds are the per-second ratios of runs' sides a and b: seconds in
// which either side got no response are left out.
func duetSeconds(runs []*result.Result, a, b string) *DuetSeconds {
	var ratios []float64
	for _, r := range runs {
		if r == nil {
			continue
		}
		ta, tb := totalsOf(r, a), totalsOf(r, b)
		if ta == nil || tb == nil {
			continue
		}
		for i := range min(len(ta.PerSecond), len(tb.PerSecond)) {
			if ta.PerSecond[i] > 0 && tb.PerSecond[i] > 0 {
				ratios = append(ratios, float64(tb.PerSecond[i])/float64(ta.PerSecond[i]))
			}
		}
	}
	if len(ratios) == 0 {
		return nil
	}
	slices.Sort(ratios)
	return &DuetSeconds{Seconds: len(ratios), Ratio: quantile(ratios, 0.5), Q1: quantile(ratios, 0.25), Q3: quantile(ratios, 0.75)}
}

// quantile is the q-quantile of sorted x, interpolated between neighbours.
func quantile(x []float64, q float64) float64 {
	pos := q * float64(len(x)-1)
	i := int(pos)
	if i+1 >= len(x) {
		return x[len(x)-1]
	}
	return x[i] + (pos-float64(i))*(x[i+1]-x[i])
}

// Duet judges the runs of a duet whose two sides are the scenarios a and b:
// each run that has both counts, in its order.
func Duet(runs []*result.Result, a, b string) *DuetVerdict {
	v := &DuetVerdict{A: a, B: b, Alike: true}
	var thrA, thrB, p95A, p95B []float64
	saturated := 0
	var errA, errB, toA, toB, reqA, reqB, dropA, dropB, lateA, lateB int64
	for _, r := range runs {
		if r == nil {
			continue
		}
		sa, sb := scenarioOf(r, a), scenarioOf(r, b)
		if sa == nil || sb == nil {
			continue
		}
		v.Runs++
		thrA, thrB = append(thrA, sa.ThroughputRPS), append(thrB, sb.ThroughputRPS)
		p95A, p95B = append(p95A, sa.Latency.P95), append(p95B, sb.Latency.P95)
		for _, w := range r.Validity {
			if w.Code == "generator_saturated" {
				saturated++
				break
			}
		}
		errA, errB = errA+sa.Errors.Total, errB+sb.Errors.Total
		toA, toB = toA+sa.Errors.Timeout, toB+sb.Errors.Timeout
		reqA, reqB = reqA+sa.Requests, reqB+sb.Requests
		dropA, dropB = dropA+sa.Dropped, dropB+sb.Dropped
		lateA, lateB = lateA+sa.Late.Count, lateB+sb.Late.Count
	}
	if v.Runs == 0 {
		v.Alike = false
		v.Unlike = append(v.Unlike, "no run measured both sides")
		return v
	}
	v.Throughput = duetFigure(FigureThroughput, thrA, thrB)
	v.P95 = duetFigure(FigureP95, p95A, p95B)
	v.PerSecond = duetSeconds(runs, a, b)
	if saturated > 0 {
		v.Unlike = append(v.Unlike, fmt.Sprintf("the load generator was saturated in %d of %d runs: it may have served one side's schedule later than the other's", saturated, v.Runs))
	}
	rate := func(n, of int64) float64 {
		if of == 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	// One side's share of a trouble beyond the other's: more than 1% of
	// its requests (or arrivals), and more than twice the other's share.
	unlike := func(what string, na, nb, ofA, ofB int64) {
		ra, rb := rate(na, ofA), rate(nb, ofB)
		switch {
		case rb > 0.01 && rb > 2*ra:
			v.Unlike = append(v.Unlike, fmt.Sprintf("B had %s in %.1f%% of its requests, A in %.1f%%", what, 100*rb, 100*ra))
		case ra > 0.01 && ra > 2*rb:
			v.Unlike = append(v.Unlike, fmt.Sprintf("A had %s in %.1f%% of its requests, B in %.1f%%", what, 100*ra, 100*rb))
		}
	}
	unlike("errors", errA, errB, reqA, reqB)
	unlike("timeouts", toA, toB, reqA, reqB)
	unlike("dropped arrivals", dropA, dropB, reqA+dropA, reqB+dropB)
	unlike("late arrivals", lateA, lateB, reqA, reqB)
	v.Alike = len(v.Unlike) == 0
	return v
}

func duetFigure(id FigureID, a, b []float64) *DuetFigure {
	f := &DuetFigure{Figure: id, P: 1, A: a, B: b}
	for i := range a {
		r := math.NaN()
		if a[i] > 0 {
			r = b[i] / a[i]
		}
		f.Ratios = append(f.Ratios, r)
	}
	p := stats.ComparePaired(a, b, Alpha)
	f.Test = TestWilcoxon
	if p.Method == stats.MethodSign {
		f.Test = TestSign
	}
	if !p.Positive {
		return f // a zero or missing figure: no ratio
	}
	f.Ratio, f.Lo, f.Hi, f.Bounded, f.Confidence = p.Ratio, p.Lo, p.Hi, p.Bounded, p.Confidence
	f.P, f.Testable = p.P, p.Testable
	f.Significant = p.Testable && p.P <= Alpha
	d, _ := stats.LogRatios(a, b)
	f.Spread = stats.SpreadOf(d)
	f.Detectable = stats.DetectablePairedChange(f.Spread, len(d), Alpha)
	return f
}

// DuetOfSides judges a duet whose two sides ran as two plans at once (a
// plan duet: each side its own server and its own result): a[i] and b[i]
// are run i's, nil where a side was not measured. Each pair is read as one
// run of the scenarios A and B, as a duet of URLs records it in one result,
// each side's responses per second taken from its own series (its whole
// seconds after warmup; the two sides' schedules started at one instant).
func DuetOfSides(a, b []*result.Result, warmup time.Duration) *DuetVerdict {
	runs := make([]*result.Result, len(a))
	for i := range a {
		if a[i] == nil || i >= len(b) || b[i] == nil {
			continue
		}
		runs[i] = &result.Result{
			Validity: append(slices.Clone(a[i].Validity), b[i].Validity...),
			Scenarios: []result.ScenarioTotals{
				{Scenario: "A", Summary: a[i].Summary, PerSecond: wholeSeconds(a[i].Series, warmup)},
				{Scenario: "B", Summary: b[i].Summary, PerSecond: wholeSeconds(b[i].Series, warmup)},
			},
		}
	}
	return Duet(runs, "A", "B")
}

// wholeSeconds are the responses of each whole second of a series that
// begins after warmup: the last, short interval is left out.
func wholeSeconds(series []result.Point, warmup time.Duration) []int64 {
	var out []int64
	for _, p := range series {
		if math.Abs(p.Len-1) > 0.01 || p.T-p.Len < warmup.Seconds()-1e-6 {
			continue
		}
		out = append(out, p.Responses)
	}
	return out
}
