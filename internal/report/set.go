package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/loadlab/loadlab/internal/result"
)

// RunLine is one run of a result set (loadlab run --repeat) in a line:
// throughput, latency percentiles and errors.
func RunLine(r *result.Result) string {
	s := &r.Summary
	line := fmt.Sprintf("%s/s  p50 %s  p95 %s  p99 %s ms  ", rate(s.ThroughputRPS), ms(s.Latency.P50), ms(s.Latency.P95), ms(s.Latency.P99))
	if s.Errors.Total == 0 {
		line += "no errors"
	} else {
		line += fmt.Sprintf("%s errors (%.2f%%)", count(s.Errors.Total), 100*s.ErrorRate)
	}
	if failed := failedThresholds(r); failed > 0 {
		line += fmt.Sprintf("  %d of %d thresholds failed", failed, len(r.Thresholds))
	}
	return line
}

func failedThresholds(r *result.Result) int {
	n := 0
	for _, t := range r.Thresholds {
		if !t.Pass {
			n++
		}
	}
	return n
}

// ResultSet writes the medians of a result set's runs, with their range,
// and how to compare the set with another.
func ResultSet(w io.Writer, dir string, rs []*result.Result) error {
	ew := &errWriter{w: w}
	ew.printf("\n%s in %s (runs/001 to runs/%03d)\n", counted(int64(len(rs)), "run"), dir, len(rs))
	ew.printf("%-18s %12s %22s\n", "", "median", "lowest–highest")
	for _, f := range []struct {
		name  string
		value func(*result.Summary) float64
		show  func(float64) string
	}{
		{"throughput (/s)", func(s *result.Summary) float64 { return s.ThroughputRPS }, rate},
		{"p50 latency (ms)", func(s *result.Summary) float64 { return s.Latency.P50 }, ms},
		{"p95 latency (ms)", func(s *result.Summary) float64 { return s.Latency.P95 }, ms},
		{"p99 latency (ms)", func(s *result.Summary) float64 { return s.Latency.P99 }, ms},
		{"error rate (%)", func(s *result.Summary) float64 { return 100 * s.ErrorRate }, func(v float64) string { return fmt.Sprintf("%.2f", v) }},
	} {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f.value(&r.Summary)
		}
		lo, hi := slices.Min(xs), slices.Max(xs)
		ew.printf("%-18s %12s %22s\n", f.name, f.show(median(xs)), f.show(lo)+"–"+f.show(hi))
	}
	ew.printf("compare with another set: loadlab compare %s OTHER (--fail-on 'p95 +10%%' for CI)\n", dir)
	return ew.err
}

// ResultSetJSON writes a result set's summaries as a JSON list, in order.
func ResultSetJSON(w io.Writer, rs []*result.Result) error {
	out := make([]*result.Summary, len(rs))
	for i, r := range rs {
		out[i] = &r.Summary
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
