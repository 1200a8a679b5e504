package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
)

func f(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
func n(v int64) string   { return strconv.FormatInt(v, 10) }

// csvWriter is a csv.Writer whose text cells cannot run as spreadsheet
// formulas (OWASP CSV injection): a cell that starts with =, +, -, @, a tab
// or a carriage return, and is not a number, is written with a ' before it.
// A step named "=HYPERLINK(...)" or an error text "-1 + ..." is shown, not
// run; a negative delta stays a number.
type csvWriter struct{ *csv.Writer }

func newCSV(w io.Writer) csvWriter { return csvWriter{csv.NewWriter(w)} }

func (c csvWriter) Write(row []string) error {
	out := make([]string, len(row))
	for i, v := range row {
		out[i] = csvCell(v)
	}
	return c.Writer.Write(out)
}

// csvCell is v as a CSV cell a spreadsheet shows as text.
func csvCell(v string) string {
	if v == "" || !strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return v
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	return "'" + v
}

// StepsCSV writes a run's figures, one row per step and one for the run.
func StepsCSV(w io.Writer, r *result.Result) error {
	cw := newCSV(w)
	cw.Write([]string{"scenario", "step", "requests", "responses", "errors", "error_rate", "checks_passed", "checks_failed",
		"throughput_rps", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms", "service_p99_ms", "ttfb_p99_ms"})
	row := func(scenario, step string, s *result.Summary) {
		cw.Write([]string{scenario, step, n(s.Requests), n(s.Responses), n(s.Errors.Total), f(s.ErrorRate), n(s.Checks.Passed), n(s.Checks.Failed),
			f(s.ThroughputRPS), f(s.Latency.P50), f(s.Latency.P90), f(s.Latency.P95), f(s.Latency.P99), f(s.Latency.P999), f(s.Latency.Max), f(s.Service.P99), f(s.TTFB.P99)})
	}
	for i := range r.Steps {
		row(r.Steps[i].Scenario, r.Steps[i].Name, &r.Steps[i].Summary)
	}
	row("*", "*", &r.Summary)
	cw.Flush()
	return cw.Error()
}

// SeriesCSV writes a run's time series.
func SeriesCSV(w io.Writer, r *result.Result) error {
	cw := newCSV(w)
	cw.Write([]string{"t_s", "len_s", "requests", "errors", "rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms", "late", "dropped", "iterations", "active", "bytes"})
	for _, p := range r.Series {
		cw.Write([]string{f(p.T), f(p.Len), n(p.Requests), n(p.Errors), f(p.RPS), f(p.P50), f(p.P90), f(p.P95), f(p.P99), f(p.Max), n(p.Late), n(p.Dropped), n(p.Iterations), n(p.Active), n(p.Bytes)})
	}
	cw.Flush()
	return cw.Error()
}

// RunsCSV writes an experiment's runs, one row each.
func RunsCSV(w io.Writer, o *experiment.Outcome) error {
	cw := newCSV(w)
	cw.Write([]string{"run", "point", "rep", "status", "requests", "throughput_rps", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "error_rate", "duration_s",
		"server_cpu_avg_pct", "server_rss_peak_bytes", "server_rss_avg_bytes", "server_pss_peak_bytes", "error"})
	res := o.Results()
	for i, r := range o.Runs {
		row := []string{strconv.Itoa(r.Index), r.Point, strconv.Itoa(r.Rep), r.Status}
		if i < len(res) && res[i] != nil {
			s := &res[i].Summary
			row = append(row, n(s.Requests), f(s.ThroughputRPS), f(s.Latency.P50), f(s.Latency.P95), f(s.Latency.P99), f(s.ErrorRate), f(s.DurationS))
			if sv := res[i].Server; sv != nil {
				row = append(row, f(sv.CPUAvg), n(sv.RSSPeak), n(sv.RSSAvg), n(sv.PSSPeak))
			} else {
				row = append(row, "", "", "", "")
			}
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "", "", "")
		}
		cw.Write(append(row, r.Error))
	}
	cw.Flush()
	return cw.Error()
}

// PointsCSV writes an experiment's verdict, one row per point and figure.
func PointsCSV(w io.Writer, o *experiment.Outcome) error {
	cw := newCSV(w)
	cw.Write([]string{"point", "baseline", "figure", "unit", "n", "median", "ci_low", "ci_high", "ci_bounded", "delta", "p", "significant", "figure_id", "status", "reason"})
	if o.Verdict != nil {
		for _, t := range o.Verdict.Figures {
			for _, r := range t.Rows {
				// A value that does not exist is empty, not 0: no
				// interval with too few runs, no change for the point
				// that is its own reference, no median without runs.
				var median, lo, hi, delta, pv, status, reason string
				if r.N > 0 {
					median = f(r.Median)
				}
				if r.Bounded {
					lo, hi = f(r.Lo), f(r.Hi)
				}
				if c := r.Change; c != nil {
					status, reason = string(c.Status), string(c.Reason)
					if c.DeltaDefined {
						delta = f(r.Delta)
					}
					pv = f(r.P)
				}
				cw.Write([]string{r.Point, strconv.FormatBool(r.Baseline), t.Name, t.Unit, strconv.Itoa(r.N), median, lo, hi,
					strconv.FormatBool(r.Bounded), delta, pv, strconv.FormatBool(r.Significant), string(t.ID), status, reason})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
