package report

import (
	"fmt"
	"strings"

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
