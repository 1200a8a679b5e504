package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/loadlab/loadlab/internal/chart"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
)

// limitsInForce says which limits the server ran under, as set and as the
// kernel enforced them: "cpus 1, memory 512 MiB (cgroup v1: CPU 0, memory
// 512 MiB, swap 0 B)".
func limitsInForce(l *result.Limits) string {
	var parts []string
	if l.CPUList != "" {
		word := "CPUs "
		if !strings.ContainsAny(l.CPUList, ",-") {
			word = "CPU "
		}
		parts = append(parts, word+l.CPUList)
	}
	if l.CPUQuota > 0 {
		parts = append(parts, fmt.Sprintf("CPU quota %g CPUs", l.CPUQuota))
	}
	if l.Memory > 0 {
		parts = append(parts, "memory "+quantity.FormatBytes(l.Memory))
	}
	if l.Swap != nil {
		parts = append(parts, "swap "+quantity.FormatBytes(*l.Swap))
	}
	return fmt.Sprintf("%s (%s: %s)", l.Set, l.Mechanism, strings.Join(parts, ", "))
}

// limitsMeasured says what the cgroups measured: the memory peak and the
// limit's hits, OOM kills, CPU throttling.
func limitsMeasured(l *result.Limits) string {
	var parts []string
	if l.OOM != "" {
		parts = append(parts, l.OOM)
	}
	if l.Memory > 0 {
		p := "memory peak " + quantity.FormatBytes(l.MemoryPeak)
		if l.MemoryFailcnt > 0 {
			p += fmt.Sprintf(", at the limit %d times", l.MemoryFailcnt)
		}
		if l.OOMKills > 0 && l.OOM == "" {
			p += fmt.Sprintf(", %d OOM kills", l.OOMKills)
		}
		parts = append(parts, p)
	}
	if t := l.CPUThrottled; t != nil {
		p := fmt.Sprintf("cpu_throttled %.2fs", t.Seconds)
		if t.Periods > 0 {
			p += fmt.Sprintf(" (in %d of %d periods, %.0f%%)", t.ThrottledPeriods, t.Periods, 100*float64(t.ThrottledPeriods)/float64(t.Periods))
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "nothing (CPU affinity measures nothing of its own)"
	}
	return strings.Join(parts, "; ")
}

// memoryLines are a sweep's memory fits in words: PSS peak, and RSS peak
// (what a platform that counts RSS sees); the averages are in the data.
// A fit is told when the memory grows (or shrinks) with the param beyond
// noise, or when there is a limit to judge it against; a flat, noisy one
// without a limit says nothing worth a line.
func memoryLines(s experiment.SweepVerdict) []string {
	var out []string
	for _, f := range s.Memory {
		if f.Limit == 0 && math.Abs(f.PerUnit) <= f.PerUnitCI {
			continue
		}
		if f.Figure == experiment.FigurePSSPeak || f.Figure == experiment.FigureRSSPeak {
			out = append(out, f.Text)
		}
	}
	return out
}

// addMemoryFit draws a sweep's PSS peak fit on its memory chart, when the
// words tell it (memoryLines), and the memory limit it is judged against.
func addMemoryFit(c *chart.Chart, s *experiment.SweepVerdict) {
	if s == nil {
		return
	}
	for _, f := range s.Memory {
		if f.Figure != experiment.FigurePSSPeak || len(memoryLines(experiment.SweepVerdict{Memory: []experiment.MemoryFit{f}})) == 0 {
			continue
		}
		line := chart.Series{Name: "PSS peak fit"}
		for _, x := range s.X {
			line.X, line.Y = append(line.X, x), append(line.Y, f.Base+f.PerUnit*x)
		}
		c.Series = append(c.Series, line)
		if f.LimitKind == "limit" {
			c.Levels = append(c.Levels, chart.Level{Y: float64(f.Limit), Label: "memory limit"})
		}
	}
}
