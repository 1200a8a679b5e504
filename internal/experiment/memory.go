package experiment

import (
	"fmt"
	"math"
	"strconv"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

// MemoryFit is one memory figure of the server fitted against a numeric
// param over every run along its sweep: Base + PerUnit × param by
// Theil–Sen (stats.FitTheilSen: the median of pairwise slopes, which a run
// or two of stray peaks do not pull as they pull least squares), with
// distribution-free 95% intervals and the line's R². "Each Puma thread adds
// 18 MiB" is PerUnit.
type MemoryFit struct {
	Figure FigureID `json:"figure"` // pss_peak, pss_avg, rss_peak, rss_avg
	Method string   `json:"method"` // "theil-sen"
	Base   float64  `json:"base_bytes"`
	// BaseCI and PerUnitCI are the larger distance from the value to an end
	// of its 95% interval (Sen's interval need not be symmetric), so Base ±
	// BaseCI holds [BaseLo, BaseHi].
	BaseCI    float64 `json:"base_ci_bytes"`
	BaseLo    float64 `json:"base_lo_bytes"`
	BaseHi    float64 `json:"base_hi_bytes"`
	PerUnit   float64 `json:"per_unit_bytes"`
	PerUnitCI float64 `json:"per_unit_ci_bytes"`
	PerUnitLo float64 `json:"per_unit_lo_bytes"`
	PerUnitHi float64 `json:"per_unit_hi_bytes"`
	// Bounded is false with too few runs (under 6) for a 95% interval on
	// the per-unit figure: Lo and Hi are then the range of pairwise slopes
	// and the words say "± ∞".
	Bounded bool    `json:"bounded"`
	R2      float64 `json:"r2"`
	Runs    int     `json:"runs"`
	// Limit is what the memory is judged against: the runs' server.limits
	// memory, else their memory_quota (LimitKind says which); 0: neither.
	Limit     int64  `json:"limit_bytes,omitempty"`
	LimitKind string `json:"limit_kind,omitempty"` // "limit" or "quota"
	// Fits is the highest value of the param whose fitted memory stays
	// under Limit with Headroom to spare, when the memory grows with it.
	Fits     *float64 `json:"fits,omitempty"`
	Headroom float64  `json:"headroom,omitempty"`
	Text     string   `json:"text"`
}

// MemoryHeadroom is the share of a memory limit left free when saying how
// much of a param fits in it.
const MemoryHeadroom = 0.2

// memoryFigures are the figures fitted, the one the words lead with first.
var memoryFigures = []FigureID{FigurePSSPeak, FigurePSSAverage, FigureRSSPeak, FigureRSSAverage}

// memoryFits fits the server's memory against the sweep's param from every
// run of its levels; nil without server figures or with fewer than 3 runs.
func memoryFits(s SweepVerdict, points []Point, v *Verdict, byPoint [][]*result.Result) []MemoryFit {
	index := map[string]int{}
	for i, p := range points {
		index[p.Key] = i
	}
	limit, kind := memoryLimit(s, index, byPoint)
	var out []MemoryFit
	for _, id := range memoryFigures {
		t := v.Table(id)
		if t == nil {
			continue
		}
		var x, y []float64
		for k, key := range s.Points {
			for _, mibs := range t.Rows[index[key]].Samples {
				x, y = append(x, s.X[k]), append(y, mibs*mib)
			}
		}
		l, err := stats.FitTheilSen(x, y)
		if err != nil {
			continue
		}
		f := MemoryFit{Figure: id, Method: "theil-sen",
			Base: l.Intercept, BaseCI: l.InterceptHalfWidth(), BaseLo: l.InterceptLo, BaseHi: l.InterceptHi,
			PerUnit: l.Slope, PerUnitCI: l.SlopeHalfWidth(), PerUnitLo: l.SlopeLo, PerUnitHi: l.SlopeHi, Bounded: l.Bounded,
			R2: l.R2, Runs: l.N, Limit: limit, LimitKind: kind}
		if !l.R2Defined {
			f.R2 = 0
		}
		if limit > 0 && f.Bounded && f.PerUnitLo > 0 {
			budget := float64(limit) * (1 - MemoryHeadroom)
			fits := math.Floor((budget - f.Base) / f.PerUnit)
			f.Fits, f.Headroom = &fits, MemoryHeadroom
		}
		f.Text = memoryText(f, s.Param, t.Name)
		out = append(out, f)
	}
	return out
}

// memoryLimit is the memory limit every run along the sweep had (its
// server.limits memory, else its memory_quota), or 0 when they had none or
// not one and the same (a swept limit).
func memoryLimit(s SweepVerdict, index map[string]int, byPoint [][]*result.Result) (int64, string) {
	var limit int64
	kind := ""
	for _, key := range s.Points {
		for _, r := range byPoint[index[key]] {
			var b int64
			k := ""
			switch sv := r.Server; {
			case sv == nil:
			case sv.Limits != nil && sv.Limits.Memory > 0:
				b, k = sv.Limits.Memory, "limit"
			case sv.Quota != nil:
				b, k = sv.Quota.Bytes, "quota"
			}
			if kind == "" && b > 0 {
				limit, kind = b, k
			} else if b != limit || k != kind {
				return 0, ""
			}
		}
	}
	return limit, kind
}

// memoryText says a fit in words: "PSS peak = 60 MiB (±5 MiB) + 18 MiB
// (±2.1 MiB) × workers (R²=0.98, 15 runs); workers=12 fits in the 512 MiB
// limit with 20% headroom".
func memoryText(f MemoryFit, param, figure string) string {
	size := func(b float64) string { return quantity.FormatBytes(int64(math.Round(b))) }
	sign, slope := "+", f.PerUnit
	if slope < 0 {
		sign, slope = "−", -slope
	}
	ci := size(f.PerUnitCI)
	if !f.Bounded {
		ci = "∞"
	}
	line := fmt.Sprintf("%s = %s (±%s) %s %s (±%s) × %s (R²=%s, %d runs)",
		figure, size(f.Base), size(f.BaseCI), sign, size(slope), ci, param, stats.FormatRSquared(f.R2), f.Runs)
	switch {
	case f.Limit == 0:
	case f.Fits == nil:
		line += fmt.Sprintf("; it does not grow with %s beyond noise: %s is not what bounds it against the %s %s", param, param, size(float64(f.Limit)), f.LimitKind)
	case *f.Fits < 1:
		line += fmt.Sprintf("; not even %s=1 fits in the %s %s with %.0f%% headroom", param, size(float64(f.Limit)), f.LimitKind, 100*f.Headroom)
	default:
		line += fmt.Sprintf("; %s=%s fits in the %s %s with %.0f%% headroom", param, strconv.FormatFloat(*f.Fits, 'f', -1, 64), size(float64(f.Limit)), f.LimitKind, 100*f.Headroom)
	}
	return line
}
