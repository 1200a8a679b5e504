package runner

import (
	"fmt"
	"sync"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/threshold"
)

// thresholds measures a plan's thresholds against the run just made: its
// result for the counts, and totals, the engine's merged recorder, for the
// histograms, read where they are in memory rather than decoded from the
// encodings result.json keeps. Unless the plan has a checks threshold of
// its own, a run whose steps checked anything also gets DefaultChecks. Nil
// when there is nothing to judge.
func thresholds(ts []plan.Threshold, res *result.Result, totals *metrics.Recorder) []result.ThresholdResult {
	var out []result.ThresholdResult
	histograms := threshold.Live(totals)
	figures := ServerFigures(res.Server)
	own := false
	for _, t := range ts {
		o := threshold.Evaluate(t.T, res, histograms, figures)
		out = append(out, result.ThresholdResult{Text: t.Text, Measured: o.Measured, Pass: o.Pass, Detail: o.Detail})
		own = own || t.T.Metric == threshold.Checks
	}
	if d, ok := defaultChecks(res.Summary.Checks, own); ok {
		out = append(out, d)
	}
	return out
}

// DefaultChecks is the threshold every plan run has unless its plan sets a
// checks threshold of its own: every check passes. A failed check means the
// server did not answer as the journey expects (a login refused, an error
// page), so the figures measured something else; k6 counts such a run as
// passed, loadlab fails it (exit 3).
const DefaultChecks = "checks == 100%"

// defaultChecks judges DefaultChecks: false when the plan has its own
// checks threshold (own) or no check ran.
func defaultChecks(c result.Checks, own bool) (result.ThresholdResult, bool) {
	n := c.Passed + c.Failed
	if own || n == 0 {
		return result.ThresholdResult{}, false
	}
	t := result.ThresholdResult{Text: DefaultChecks, Default: true, Measured: float64(c.Passed) / float64(n), Pass: c.Failed == 0}
	t.Detail = fmt.Sprintf("checks passed: %s (%d of %d passed); the default threshold, which a checks threshold in the plan replaces", percent(t.Measured), c.Passed, n)
	return t, true
}

// DefaultQuickErrors is the threshold of a quick run given no --threshold:
// fewer than 1% of its requests got an error status or no response. A run
// whose every response was a 503 measured an error page, not the server's
// work, and CI must not pass it.
const DefaultQuickErrors = "error_rate < 1%"

var defaultQuickErrors = sync.OnceValue(func() *threshold.Threshold {
	t, err := threshold.Parse(DefaultQuickErrors)
	if err != nil {
		panic(err) // a constant of this package
	}
	return t
})

// quickThresholds judges a quick run: by ts (--threshold) when given, else
// by DefaultQuickErrors, marked as the default.
func quickThresholds(ts []plan.Threshold, res *result.Result, totals *metrics.Recorder) []result.ThresholdResult {
	if len(ts) > 0 {
		return thresholds(ts, res, totals)
	}
	o := threshold.Evaluate(defaultQuickErrors(), res, threshold.Live(totals), nil)
	if o.Missing {
		return nil // no request was made: nothing to judge
	}
	return []result.ThresholdResult{{Text: DefaultQuickErrors, Default: true, Measured: o.Measured, Pass: o.Pass,
		Detail: o.Detail + "; the default threshold of a quick run, which --threshold replaces"}}
}

// percent writes a share as the summary does: 66.67%, 100%.
func percent(f float64) string {
	s := fmt.Sprintf("%.2f", 100*f)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s + "%"
}

// ThresholdsFailed counts the thresholds a result failed.
func ThresholdsFailed(res *result.Result) int {
	failed := 0
	for _, t := range res.Thresholds {
		if !t.Pass {
			failed++
		}
	}
	return failed
}

// ServerFigures gives thresholds the server's figures in their units: CPU
// as a fraction of one core, memory in bytes. Nil when no server was watched.
func ServerFigures(s *result.Server) threshold.ServerFigures {
	if s == nil {
		return nil
	}
	return threshold.ServerMap{
		threshold.ServerCPUAvg:      s.CPUAvg / 100,
		threshold.ServerCPUPeak:     s.CPUPeak / 100,
		threshold.ServerRSSAvg:      float64(s.RSSAvg),
		threshold.ServerRSSPeak:     float64(s.RSSPeak),
		threshold.ServerPSSAvg:      float64(s.PSSAvg),
		threshold.ServerPSSPeak:     float64(s.PSSPeak),
		threshold.ServerSwapPeak:    float64(s.SwapPeak),
		threshold.ServerMajorFaults: float64(s.MajorFaults),
	}
}
