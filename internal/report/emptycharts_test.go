package report

import (
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// TestUnmeasuredMemoryLeftOut: a run's memory chart draws only the figures
// measured (PSS is all zeros where smaps_rollup cannot be read), and is left
// out when neither was, as for a server found but not readable, rather than
// drawn as flat lines at zero (issue 27).
func TestUnmeasuredMemoryLeftOut(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		rss, pss int64
		want     []string // the memory chart's series; nil: no chart
	}{
		{"both", 40 << 20, 30 << 20, []string{"RSS", "PSS"}},
		{"no PSS", 40 << 20, 0, []string{"RSS"}},
		{"neither", 0, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := fixture(t)
			r.Server = &result.Server{}
			for i := range 10 {
				r.Server.Series = append(r.Server.Series, result.ServerPoint{T: float64(i), CPU: 50, RSS: tt.rss, PSS: tt.pss})
			}
			var got []string
			found, cpu := false, false
			for _, f := range runFigures(r) {
				cpu = cpu || f.Name == "server-cpu"
				if f.Name != "server-memory" {
					continue
				}
				found = true
				for _, s := range f.Chart.Series {
					got = append(got, s.Name)
				}
			}
			if !cpu {
				t.Error("no server CPU chart")
			}
			if found != (tt.want != nil) || len(got) != len(tt.want) {
				t.Fatalf("memory chart drawn: %v, series %q; want %q", found, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("series %q, want %q", got, tt.want)
				}
			}
		})
	}
}
