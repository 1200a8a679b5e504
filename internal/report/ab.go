package report

import (
	"fmt"
	"math"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/stats"
)

// ABLine is loadlab ab's answer in one line, point b against its
// reference: "B is 7.4% slower (paired, p=0.002, 8
// rounds; noise floor 1.9%)".
func ABLine(o *experiment.Outcome, b string) string {
	v := o.Verdict
	t, row := v.Row(experiment.FigureThroughput, b)
	if row == nil || row.Change == nil {
		return "B against A: no verdict (a side has no completed run)"
	}
	c := row.Change
	how := "unpaired"
	n := fmt.Sprintf("%d against %d runs", c.N1, c.N2)
	if c.IsPaired() {
		how = "paired"
		n = fmt.Sprintf("%d rounds", c.Rounds)
	}
	floor := ""
	if nf := v.NoiseFloor; nf != nil && nf.Testable {
		floor = fmt.Sprintf("; noise floor %.1f%%", 100*nf.Detectable)
	} else if nf != nil {
		floor = "; too few rounds for a noise floor"
	}
	pct := math.Abs(100 * c.Delta)
	faster, slower := "faster", "slower"
	if t != nil && !t.Higher {
		faster, slower = "lower", "higher"
	}
	var what string
	switch {
	case !c.DeltaDefined:
		what = "B against A: no relative change (A's median is 0)"
	case c.Significant() && c.Delta < 0:
		what = fmt.Sprintf("B is %.1f%% %s", pct, slower)
	case c.Significant():
		what = fmt.Sprintf("B is %.1f%% %s", pct, faster)
	case c.Status == experiment.Untested:
		what = fmt.Sprintf("B against A: %+.1f%%, untested (%s)", 100*c.Delta, c.Reason)
	case c.Interval != nil && o.Sequential != nil && o.Sequential.MinEffect > 0 && c.Interval.Lo > -o.Sequential.MinEffect && c.Interval.Hi < o.Sequential.MinEffect:
		what = fmt.Sprintf("no change larger than %.0f%%: B against A %+.1f%%", 100*o.Sequential.MinEffect, 100*c.Delta)
	default:
		what = fmt.Sprintf("B is not told from A: %+.1f%%", 100*c.Delta)
	}
	ci := ""
	if c.Interval != nil && c.Interval.Bounded {
		ci = fmt.Sprintf(", 95%% CI %+.1f%%..%+.1f%%", 100*c.Interval.Lo, 100*c.Interval.Hi)
	}
	return fmt.Sprintf("%s (%s, p=%.3f, %s%s%s)", what, how, c.P, n, ci, floor)
}

// DuetLine is a duet's answer in one line: "B is 7.4% slower (duet, B/A
// 0.926 [0.918, 0.934], p=0.002, 10 runs; noise floor 0.8%)".
func DuetLine(v *experiment.DuetVerdict) string {
	f := v.Throughput
	if f == nil || f.Ratio == 0 {
		return "B against A: no verdict (no run measured both sides)"
	}
	change := 100 * (f.Ratio - 1)
	var what string
	switch {
	case f.Significant && change < 0:
		what = fmt.Sprintf("B is %.1f%% slower", -change)
	case f.Significant:
		what = fmt.Sprintf("B is %.1f%% faster", change)
	case !f.Testable:
		what = fmt.Sprintf("B against A: %+.1f%%, untested: a test takes %d runs", change, stats.PairsToTest(experiment.Alpha))
	default:
		what = fmt.Sprintf("B is not told from A: %+.1f%%", change)
	}
	ci := ""
	if f.Bounded {
		ci = fmt.Sprintf(" [%.3f, %.3f]", f.Lo, f.Hi)
	}
	floor := ""
	if f.Testable {
		floor = fmt.Sprintf("; noise floor %.1f%%", 100*f.Detectable)
	}
	s := fmt.Sprintf("%s (duet, B/A %.3f%s, p=%.3f, %d runs%s)", what, f.Ratio, ci, f.P, v.Runs, floor)
	if !v.Alike {
		s += "; NOT ALIKE: the sides were not treated alike"
	}
	return s
}

// DuetSides is a line a side of a duet: its runs' median throughput and p95.
func DuetSides(v *experiment.DuetVerdict) []string {
	if v.Throughput == nil || v.P95 == nil {
		return nil
	}
	var out []string
	for _, s := range []struct {
		name     string
		thr, p95 []float64
	}{{"A", v.Throughput.A, v.P95.A}, {"B", v.Throughput.B, v.P95.B}} {
		out = append(out, fmt.Sprintf("  %s: %s req/s, p95 %s ms (medians of %d runs)", s.name, rate(median(s.thr)), ms(median(s.p95)), len(s.thr)))
	}
	if ps := v.PerSecond; ps != nil {
		out = append(out, fmt.Sprintf("  per second: B/A %.3f, half the %d seconds within [%.3f, %.3f]", ps.Ratio, ps.Seconds, ps.Q1, ps.Q3))
	}
	return out
}
