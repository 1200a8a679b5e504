package report

import (
	"io"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// Limits in force and measured reach every renderer of a run; a run
// without limits shows none (the golden files stay as they were).
func TestLimitsRendered(t *testing.T) {
	r := fixture(t)
	if r.Server == nil {
		t.Fatal("the fixture has no server")
	}
	zero := int64(0)
	r.Server.Limits = &result.Limits{
		Set: "cpus 1, memory 512 MiB, swap 0 B", Mechanism: "cgroup v1", CPUList: "0",
		Memory: 512 << 20, Swap: &zero, MemoryPeak: 512 << 20, MemoryFailcnt: 7, OOMKills: 1,
		OOM: "killed at its 512 MiB memory limit after 41s, at PSS 509 MiB (cgroup peak 512 MiB; 1 process killed by the kernel's OOM killer)",
	}
	quota := &result.Limits{Set: "cpus 150%", Mechanism: "cgroup v1", CPUQuota: 1.5,
		CPUThrottled: &result.Throttled{Seconds: 2.5, Periods: 300, ThrottledPeriods: 60}}
	for _, tt := range []struct {
		name string
		f    func(w io.Writer) error
	}{
		{"text", func(w io.Writer) error { return Text(w, r) }},
		{"markdown", func(w io.Writer) error { return Markdown(w, "", r) }},
		{"html", func(w io.Writer) error { return HTML(w, r) }},
	} {
		got := string(render(t, tt.f))
		for _, want := range []string{
			"cpus 1, memory 512 MiB, swap 0 B (cgroup v1: CPU 0, memory 512 MiB, swap 0 B)",
			"killed at its 512 MiB memory limit after 41s, at PSS 509 MiB",
			"memory peak 512 MiB, at the limit 7 times",
		} {
			if tt.name == "html" {
				want = strings.ReplaceAll(want, "'", "&#39;")
			}
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q", tt.name, want)
			}
		}
	}
	if got, want := limitsMeasured(quota), "cpu_throttled 2.50s (in 60 of 300 periods, 20%)"; got != want {
		t.Errorf("throttling: %q, want %q", got, want)
	}
	if got, want := limitsInForce(quota), "cpus 150% (cgroup v1: CPU quota 1.5 CPUs)"; got != want {
		t.Errorf("quota: %q, want %q", got, want)
	}
}
