package runner

import (
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/threshold"
)

// thresholds measures a plan's thresholds against the run just made: its
// result for the counts, and totals, the engine's merged recorder, for the
// histograms, read where they are in memory rather than decoded from the
// encodings result.json keeps. Nil when the plan has none.
func thresholds(ts []plan.Threshold, res *result.Result, totals *metrics.Recorder) []result.ThresholdResult {
	var out []result.ThresholdResult
	histograms := threshold.Live(totals)
	figures := ServerFigures(res.Server)
	for _, t := range ts {
		o := threshold.Evaluate(t.T, res, histograms, figures)
		out = append(out, result.ThresholdResult{Text: t.Text, Measured: o.Measured, Pass: o.Pass, Detail: o.Detail})
	}
	return out
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
