package experiment

import (
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// The words of a memory fit: the line, what fits under a limit with 20%
// headroom, and what is said when the memory does not grow or the base
// alone is too much.
func TestMemoryText(t *testing.T) {
	const mib = 1 << 20
	fits := func(f float64) *float64 { return &f }
	for _, tt := range []struct {
		name string
		f    MemoryFit
		want string
	}{
		{"fits", MemoryFit{Base: 60 * mib, BaseCI: 5 * mib, PerUnit: 18 * mib, PerUnitCI: 2 * mib, Bounded: true, R2: 0.98, Runs: 15, Limit: 512 * mib, LimitKind: "limit", Fits: fits(19), Headroom: 0.2},
			"PSS peak = 60 MiB (±5 MiB) + 18 MiB (±2 MiB) × threads (R²=0.9800, 15 runs); threads=19 fits in the 512 MiB limit with 20% headroom"},
		{"no limit", MemoryFit{Base: 60 * mib, BaseCI: 5 * mib, PerUnit: 18 * mib, PerUnitCI: 2 * mib, Bounded: true, R2: 0.98, Runs: 15},
			"PSS peak = 60 MiB (±5 MiB) + 18 MiB (±2 MiB) × threads (R²=0.9800, 15 runs)"},
		{"flat", MemoryFit{Base: 60 * mib, BaseCI: 5 * mib, PerUnit: -1 * mib, PerUnitCI: 2 * mib, Bounded: true, R2: 0.1, Runs: 15, Limit: 2560 * mib, LimitKind: "quota"},
			"PSS peak = 60 MiB (±5 MiB) − 1 MiB (±2 MiB) × threads (R²=0.1000, 15 runs); it does not grow with threads beyond noise: threads is not what bounds it against the 2.5 GiB quota"},
		{"too big", MemoryFit{Base: 600 * mib, PerUnit: 18 * mib, PerUnitCI: 2 * mib, Bounded: true, R2: 0.98, Runs: 15, Limit: 512 * mib, LimitKind: "limit", Fits: fits(-10), Headroom: 0.2},
			"PSS peak = 600 MiB (±0 B) + 18 MiB (±2 MiB) × threads (R²=0.9800, 15 runs); not even threads=1 fits in the 512 MiB limit with 20% headroom"},
		{"too few runs", MemoryFit{Base: 60 * mib, BaseCI: 5 * mib, PerUnit: 18 * mib, PerUnitCI: 4 * mib, R2: 0.98, Runs: 4},
			"PSS peak = 60 MiB (±5 MiB) + 18 MiB (±∞) × threads (R²=0.9800, 4 runs)"},
	} {
		if got := memoryText(tt.f, "threads", "PSS peak"); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// memoryFits over a verdict's table: the fit, the limit every run had, and
// floor((0.8 × limit − base) / per unit) workers.
func TestMemoryFits(t *testing.T) {
	const mib = 1 << 20
	points := []Point{{Key: "workers=1"}, {Key: "workers=2"}, {Key: "workers=4"}}
	v := &Verdict{Figures: []FigureTable{{ID: FigurePSSPeak, Name: "PSS peak", Rows: []FigureRow{
		{Samples: []float64{30, 30}}, {Samples: []float64{48, 48}}, {Samples: []float64{84, 84}},
	}}}}
	s := SweepVerdict{Param: "workers", X: []float64{1, 2, 4}, Points: []string{"workers=1", "workers=2", "workers=4"}}
	got := memoryFits(s, points, v, make([][]*result.Result, len(points)))
	if len(got) != 1 {
		t.Fatalf("fits %+v", got)
	}
	f := got[0]
	if f.Runs != 6 || f.PerUnit < 18*mib-1 || f.PerUnit > 18*mib+1 || f.Base < 12*mib-1 || f.Base > 12*mib+1 || f.Limit != 0 || f.Fits != nil || f.Method != "theil-sen" || !f.Bounded {
		t.Errorf("fit %+v: want 12 MiB + 18 MiB a worker", f)
	}
	// A stray peak of 11 MiB in one run of workers=1: least squares would
	// read 16.95 MiB a worker; 21 of the 27 pairwise slopes are still 18.
	v.Figures[0].Rows = []FigureRow{{Samples: []float64{30, 30, 41}}, {Samples: []float64{48, 48, 48}}, {Samples: []float64{84, 84, 84}}}
	f = memoryFits(s, points, v, make([][]*result.Result, len(points)))[0]
	if f.Runs != 9 || f.PerUnit < 18*mib-1 || f.PerUnit > 18*mib+1 || f.Base < 12*mib-1 || f.Base > 12*mib+1 {
		t.Errorf("fit %+v: want 12 MiB + 18 MiB a worker despite the stray peak", f)
	}
}
