package experiment

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

// Verdict is what an experiment found: every figure at every point with its
// spread, how each point differs from the baseline and whether that is more
// than noise, where gains flatten along each numeric param, and a
// recommendation with its evidence.
type Verdict struct {
	Baseline string `json:"baseline"`
	// Against says what each point is compared with: the baseline, or in a
	// matrix the same point with its last param at its baseline value.
	Against        string         `json:"against"`
	Figures        []FigureTable  `json:"figures"`
	Sweeps         []SweepVerdict `json:"sweeps,omitempty"`
	Recommendation string         `json:"recommendation,omitempty"`
	Warnings       []string       `json:"warnings,omitempty"`
	// Thresholds lists each threshold that failed in some run, with how
	// often and an example.
	Thresholds []string `json:"thresholds_failed,omitempty"`
	// Passed lists each threshold that passed in every run.
	Passed []string `json:"thresholds_passed,omitempty"`
	// Quota says, per point, how often the server's memory went over its
	// memory_quota, at peak and on average.
	Quota []string `json:"memory_quota,omitempty"`
	// Validity says, per point, how many runs carried each validity warning
	// (see Validity), with the first one's message: figures to distrust.
	Validity []string `json:"validity,omitempty"`
}

// CellHeading names what the cells of t hold: the median ± its confidence
// interval, or with too few runs for one, the median (lowest–highest run).
func (t *FigureTable) CellHeading() string {
	for _, r := range t.Rows {
		if r.Bounded || r.N < 2 {
			continue
		}
		return "median (min–max)"
	}
	return "median ± 95% CI"
}

// FigureTable is one figure across the points.
type FigureTable struct {
	Name   string      `json:"name"`
	Unit   string      `json:"unit"`
	Higher bool        `json:"higher_is_better"`
	Rows   []FigureRow `json:"rows"`
}

// FigureRow is one figure at one point: the median of the repeats with its
// confidence interval, and the change from the baseline.
type FigureRow struct {
	Point       string    `json:"point"`
	Baseline    bool      `json:"baseline,omitempty"`
	Reference   string    `json:"reference,omitempty"` // the point this one is compared with
	N           int       `json:"n"`
	Median      float64   `json:"median"`
	Lo          float64   `json:"ci_low"`
	Hi          float64   `json:"ci_high"`
	Bounded     bool      `json:"ci_bounded"`
	Cell        string    `json:"cell"`  // "123.4 ± 3%"
	Delta       float64   `json:"delta"` // relative change from the baseline: +0.12 is +12%
	P           float64   `json:"p"`     // Mann-Whitney U p-value
	Significant bool      `json:"significant"`
	Versus      string    `json:"versus"` // "+12.00% (p=0.008 n=5)", "~ (p=0.310 n=5)"
	Samples     []float64 `json:"samples"`
}

// SweepVerdict describes one numeric param swept with the others held.
type SweepVerdict struct {
	Param          string    `json:"param"`
	X              []float64 `json:"x"`
	Throughput     []float64 `json:"throughput"` // medians
	P95            []float64 `json:"p95_ms"`
	Best           int       `json:"best"` // index of the highest throughput
	Knee           int       `json:"knee"` // index where gains flatten, -1 for none
	Pick           int       `json:"pick"` // index recommended
	USL            *USL      `json:"usl,omitempty"`
	Recommendation string    `json:"recommendation"`
}

// USL is a Universal Scalability Law fit of throughput against the param.
type USL struct {
	Sigma, Kappa, Lambda float64
	HasPeak              bool
	PeakN, PeakX         float64
	R2                   float64
	Text                 string
	Warnings             []string `json:",omitempty"` // what the coefficients alone do not say
}

// MinUSLPoints is the fewest levels a USL fit is made from: its three
// coefficients pass exactly through three points and nearly through four,
// which would make R² no evidence at all.
const MinUSLPoints = 5

// Throughput is a run's responses (of any status) per second, computed from
// its counts so that results written when throughput_rps still counted
// failed requests compare alike.
func Throughput(r *result.Result) float64 {
	if s := &r.Summary; s.DurationS > 0 {
		return float64(s.Responses) / s.DurationS
	}
	return r.Summary.ThroughputRPS
}

// figure reads one figure from a run's result.
type figure struct {
	name, unit string
	higher     bool
	get        func(r *result.Result) (float64, bool)
	applies    func(rs []*result.Result) bool
}

func always([]*result.Result) bool { return true }

func withServer(rs []*result.Result) bool {
	for _, r := range rs {
		if r != nil && r.Server != nil {
			return true
		}
	}
	return false
}

// finite runs: elapsed time says something only when the work is fixed.
func fixedWork(rs []*result.Result) bool {
	for _, r := range rs {
		if r != nil && r.Settings.Duration == 0 && r.Settings.Mode == "closed" {
			return true
		}
	}
	return false
}

const mib = 1 << 20

var figures = []figure{
	{"throughput", "req/s", true, func(r *result.Result) (float64, bool) { return Throughput(r), true }, always},
	{"p50 latency", "ms", false, func(r *result.Result) (float64, bool) { return r.Summary.Latency.P50, r.Summary.Latency.Count > 0 }, always},
	{"p95 latency", "ms", false, func(r *result.Result) (float64, bool) { return r.Summary.Latency.P95, r.Summary.Latency.Count > 0 }, always},
	{"p99 latency", "ms", false, func(r *result.Result) (float64, bool) { return r.Summary.Latency.P99, r.Summary.Latency.Count > 0 }, always},
	{"error rate", "%", false, func(r *result.Result) (float64, bool) { return 100 * r.Summary.ErrorRate, true }, always},
	{"elapsed", "s", false, func(r *result.Result) (float64, bool) { return r.Summary.DurationS, true }, fixedWork},
	{"server CPU", "% of a core", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return r.Server.CPUAvg, true
	}, withServer},
	{"RSS peak", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.RSSPeak) / mib, true
	}, withServer},
	{"RSS average", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.RSSAvg) / mib, true
	}, withServer},
	{"PSS peak", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.PSSPeak) / mib, true
	}, withServer},
	{"PSS average", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.PSSAvg) / mib, true
	}, withServer},
}

// cell writes a median and its confidence interval as "123.4 ± 3%" in the
// figure's own unit, with four significant digits at most: benchstat scales
// to SI prefixes, which reads oddly for MiB and percentages.
// cell renders a figure's runs: the median ± its 95% confidence interval
// as benchstat does; with too few runs for an interval (fewer than 6), the
// median with the lowest and highest run, which still shows the spread.
func cell(s stats.Summary, samples []float64) string {
	switch {
	case s.N == 0:
		return ""
	case len(samples) == 1: // one run: no spread to show
		return number(s.Center)
	case s.Bounded:
		return number(s.Center) + " ± " + s.RangeString()
	}
	return number(s.Center) + " (" + number(slices.Min(samples)) + "–" + number(slices.Max(samples)) + ")"
}

func number(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Alpha is the significance level of comparisons (benchstat's default).
const Alpha = 0.05

// WithinBest is how close to the best throughput a recommended setting must
// come: the smallest setting within 5% of the best wins, as it does the same
// work with fewer threads, workers or connections.
const WithinBest = 0.05

// Analyze computes the verdict from the done runs.
func Analyze(e *plan.Experiment, points []Point, order []Slot, results []*result.Result) *Verdict {
	v := &Verdict{}
	byPoint := make([][]*result.Result, len(points))
	for _, s := range order {
		if r := results[s.Index]; r != nil {
			byPoint[s.Point] = append(byPoint[s.Point], r)
		}
	}
	base := -1
	for i, p := range points {
		if p.Baseline {
			base = i
			v.Baseline = p.Key
		}
	}
	refs := references(e, points, base)
	if e.Vary == plan.Matrix && len(e.Params) > 1 {
		last := e.Params[len(e.Params)-1]
		v.Against = fmt.Sprintf("the same point with %s=%s", last.Name, last.Values[e.Baseline[last.Name]].Label)
	} else {
		v.Against = v.Baseline
	}
	for i, rs := range byPoint {
		if len(rs) < e.Repeat {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: %d of %d runs done", points[i].Key, len(rs), e.Repeat))
		}
	}
	for _, f := range figures {
		if !f.applies(results) {
			continue
		}
		t := FigureTable{Name: f.name, Unit: f.unit, Higher: f.higher}
		samples := make([][]float64, len(points))
		for i, rs := range byPoint {
			for _, r := range rs {
				if x, ok := f.get(r); ok {
					samples[i] = append(samples[i], x)
				}
			}
		}
		var sums []stats.Summary
		var cells []string
		for i := range points {
			sums = append(sums, stats.Summarize(samples[i], 0))
			cells = append(cells, cell(sums[i], samples[i]))
		}
		for i, p := range points {
			row := FigureRow{Point: p.Key, Baseline: i == base, N: sums[i].N, Median: sums[i].Center, Lo: sums[i].Lo, Hi: sums[i].Hi, Bounded: sums[i].Bounded, Cell: cells[i], Samples: samples[i]}
			if ref := refs[i]; ref >= 0 && ref != i && len(samples[i]) > 0 && len(samples[ref]) > 0 {
				c := stats.Compare(samples[ref], samples[i], Alpha)
				row.Delta, row.P, row.Significant, row.Versus = c.Delta, c.P, c.Significant, versus(c)
				row.Reference = points[ref].Key
			}
			t.Rows = append(t.Rows, row)
		}
		v.Figures = append(v.Figures, t)
	}
	if base >= 0 {
		seen := map[string]bool{}
		for _, w := range stats.Summarize(samplesOf(byPoint[base]), 0).Warnings {
			seen[w] = true
			v.Warnings = append(v.Warnings, w)
		}
		for i := range points {
			if i == base {
				continue
			}
			for _, w := range stats.Compare(samplesOf(byPoint[base]), samplesOf(byPoint[i]), Alpha).Warnings {
				if !seen[w] {
					seen[w] = true
					v.Warnings = append(v.Warnings, w)
				}
			}
		}
		if e.Repeat < MinTestable && len(points) > 1 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("with %d repeats no difference can be significant at α=%.2f (the Mann-Whitney test needs 4 runs a side); set repeat: 5 to tell differences from noise", e.Repeat, Alpha))
		}
	}
	v.Thresholds, v.Passed = thresholdTally(points, order, results)
	v.Quota = quotaSummary(points, byPoint)
	v.Validity = validitySummary(points, order, results)
	v.Sweeps = sweeps(e, points, v)
	for _, s := range v.Sweeps {
		if s.USL != nil {
			for _, w := range s.USL.Warnings {
				v.Warnings = append(v.Warnings, "USL fit of "+s.Param+": "+w)
			}
		}
	}
	var recs []string
	for _, s := range v.Sweeps {
		recs = append(recs, s.Recommendation)
	}
	recs = append(recs, namedComparisons(e, points, v)...)
	v.Recommendation = strings.Join(recs, "\n")
	return v
}

// quotaSummary counts, per point, the runs whose server memory (PSS) went
// over the quota at peak and on average: a hosting platform's memory alarm.
func quotaSummary(points []Point, byPoint [][]*result.Result) []string {
	var out []string
	for i, rs := range byPoint {
		var quota int64
		peak, avg := 0, 0
		for _, r := range rs {
			if r.Server == nil || r.Server.Quota == nil {
				continue
			}
			quota = r.Server.Quota.Bytes
			if r.Server.Quota.PeakExceeded {
				peak++
			}
			if r.Server.Quota.AverageExceeded {
				avg++
			}
		}
		if quota == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s: over the %s quota at peak in %d of %d runs, on average in %d", points[i].Key, quantity.FormatBytes(quota), peak, len(rs), avg))
	}
	return out
}

// validitySummary counts, per point, the runs that carried each validity
// warning, with the first such run's message.
func validitySummary(points []Point, order []Slot, results []*result.Result) []string {
	type tally struct {
		runs    int
		example string
	}
	var out []string
	for i := range points {
		runs := 0
		counts := map[string]*tally{}
		var codes []string
		for _, s := range order {
			r := results[s.Index]
			if s.Point != i || r == nil {
				continue
			}
			runs++
			seen := map[string]bool{}
			for _, w := range r.Validity {
				if seen[w.Code] {
					continue
				}
				seen[w.Code] = true
				c := counts[w.Code]
				if c == nil {
					c = &tally{example: fmt.Sprintf("run %d: %s", s.Index+1, w.Message)}
					counts[w.Code] = c
					codes = append(codes, w.Code)
				}
				c.runs++
			}
		}
		for _, code := range codes {
			c := counts[code]
			out = append(out, fmt.Sprintf("%s: %s in %d of %d runs (%s)", points[i].Key, code, c.runs, runs, c.example))
		}
	}
	return out
}

// thresholdTally sums up the thresholds run by run: those that failed in
// some run, and those that passed in every one.
func thresholdTally(points []Point, order []Slot, results []*result.Result) (failed, passed []string) {
	type tally struct {
		failed, runs int
		example      string
	}
	counts := map[string]*tally{}
	var texts []string
	for _, s := range order {
		r := results[s.Index]
		if r == nil {
			continue
		}
		for _, t := range r.Thresholds {
			c := counts[t.Text]
			if c == nil {
				c = &tally{}
				counts[t.Text] = c
				texts = append(texts, t.Text)
			}
			c.runs++
			if !t.Pass {
				c.failed++
				if c.example == "" {
					c.example = fmt.Sprintf("run %d, %s: %s", s.Index+1, points[s.Point].Key, t.Detail)
				}
			}
		}
	}
	for _, text := range texts {
		if c := counts[text]; c.failed > 0 {
			failed = append(failed, fmt.Sprintf("%s failed in %d of %d runs (%s)", text, c.failed, c.runs, c.example))
		} else {
			passed = append(passed, fmt.Sprintf("%s passed in all %d runs", text, c.runs))
		}
	}
	return failed, passed
}

func samplesOf(rs []*result.Result) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, Throughput(r))
	}
	return out
}

// references says which point each point is compared with: the baseline;
// in a matrix, the point that differs only in the last param, set to its
// baseline value (list the param you compare last: server, allocator). A
// point that is its own reference has none (-1 when there is none at all).
func references(e *plan.Experiment, points []Point, base int) []int {
	refs := make([]int, len(points))
	for i := range points {
		refs[i] = base
	}
	if e.Vary != plan.Matrix || len(e.Params) < 2 {
		return refs
	}
	last := e.Params[len(e.Params)-1]
	baseLabel := last.Values[e.Baseline[last.Name]].Label
	for i, p := range points {
		refs[i] = -1
		for j, q := range points {
			same := q.Labels[last.Name] == baseLabel
			for _, prm := range e.Params[:len(e.Params)-1] {
				same = same && q.Labels[prm.Name] == p.Labels[prm.Name]
			}
			if same {
				refs[i] = j
			}
		}
	}
	return refs
}

func (v *Verdict) table(name string) *FigureTable {
	for i := range v.Figures {
		if v.Figures[i].Name == name {
			return &v.Figures[i]
		}
	}
	return nil
}

// sweeps looks along each numeric param with the other params at baseline.
func sweeps(e *plan.Experiment, points []Point, v *Verdict) []SweepVerdict {
	tp, p95 := v.table("throughput"), v.table("p95 latency")
	if tp == nil || p95 == nil {
		return nil
	}
	var out []SweepVerdict
	for _, prm := range e.Params {
		if !prm.Numeric || len(prm.Values) < 2 {
			continue
		}
		type pt struct {
			x       float64
			tp, p95 float64
			ok      bool
			label   string
			point   int
		}
		var pts []pt
		for i, p := range points {
			others := true
			for _, o := range e.Params {
				if o.Name != prm.Name && p.Labels[o.Name] != o.Values[e.Baseline[o.Name]].Label {
					others = false
				}
			}
			if !others || tp.Rows[i].N == 0 {
				continue
			}
			x, err := strconv.ParseFloat(p.Labels[prm.Name], 64)
			if err != nil {
				continue
			}
			pts = append(pts, pt{x: x, tp: tp.Rows[i].Median, p95: p95.Rows[i].Median, label: p.Labels[prm.Name], point: i})
		}
		if len(pts) < 2 {
			continue
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		s := SweepVerdict{Param: prm.Name, Knee: -1}
		for _, p := range pts {
			s.X = append(s.X, p.x)
			s.Throughput = append(s.Throughput, p.tp)
			s.P95 = append(s.P95, p.p95)
		}
		s.Best = stats.BestIndex(s.Throughput)
		if k, ok := stats.Knee(s.X, s.Throughput); ok {
			s.Knee = k
		}
		s.Pick = stats.WithinOfBest(s.X, s.Throughput, WithinBest)
		if s.Pick < 0 {
			s.Pick = s.Best
		}
		if len(s.X) >= MinUSLPoints {
			if fit, err := stats.FitUSL(s.X, s.Throughput); err == nil {
				s.USL = &USL{Sigma: fit.Sigma, Kappa: fit.Kappa, Lambda: fit.Lambda, HasPeak: fit.HasPeak, PeakN: fit.PeakN, PeakX: fit.PeakThroughput, R2: fit.RSquared, Text: fit.String(), Warnings: fit.Warnings}
			}
		}
		// test says whether a figure differs between two levels of the
		// sweep by more than noise: a claim without it is qualified.
		test := func(t *FigureTable, from, to int) string {
			a, b := t.Rows[pts[from].point].Samples, t.Rows[pts[to].point].Samples
			c := stats.Compare(a, b, Alpha)
			if c.Significant {
				return ""
			}
			if !testable(c) {
				return fmt.Sprintf(" (untested: n=%d)", min(c.Base.N, c.Test.N))
			}
			return fmt.Sprintf(" (not significant, p=%.2f)", c.P)
		}
		s.Recommendation = recommend(prm.Name, s, func(fig string, from, to int) string {
			if fig == "p95" {
				return test(p95, from, to)
			}
			return test(tp, from, to)
		})
		out = append(out, s)
	}
	return out
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// recommend writes the one-line recommendation for a numeric sweep; test
// qualifies a claim that a figure differs between two levels when the
// difference is not significant.
func recommend(param string, s SweepVerdict, test func(fig string, from, to int) string) string {
	pick, best := s.Pick, s.Best
	last := len(s.X) - 1
	parts := []string{}
	if pick == best {
		parts = append(parts, fmt.Sprintf("the best throughput (%.1f req/s)", s.Throughput[best]))
	} else {
		gap := 100 * (1 - s.Throughput[pick]/s.Throughput[best])
		parts = append(parts, fmt.Sprintf("within %.0f%% of the best throughput (%s=%s: %.1f req/s)", math.Max(gap, 0), param, num(s.X[best]), s.Throughput[best]))
	}
	if pick != last && s.P95[last] > 0 && s.P95[pick] < s.P95[last]*0.95 {
		parts = append(parts, fmt.Sprintf("p95 %.0f%% lower than %s=%s%s", 100*(1-s.P95[pick]/s.P95[last]), param, num(s.X[last]), test("p95", last, pick)))
	}
	if s.Knee >= 0 {
		parts = append(parts, fmt.Sprintf("gains flatten after %s=%s", param, num(s.X[s.Knee])))
	}
	if best < last && s.Throughput[last] < s.Throughput[best]*(1-WithinBest) {
		parts = append(parts, fmt.Sprintf("throughput falls %.0f%% from %s=%s to %s=%s%s", 100*(1-s.Throughput[last]/s.Throughput[best]), param, num(s.X[best]), param, num(s.X[last]), test("throughput", best, last)))
	}
	if u := s.USL; u != nil && u.R2 > 0.8 {
		if u.HasPeak {
			extrapolated := ""
			if u.PeakN > s.X[last] || u.PeakN < s.X[0] {
				extrapolated = ", outside the measured range"
			}
			parts = append(parts, fmt.Sprintf("USL peak at %s≈%.1f (σ=%.3f, κ=%.4f, R²=%.2f%s)", param, u.PeakN, u.Sigma, u.Kappa, u.R2, extrapolated))
		} else {
			parts = append(parts, fmt.Sprintf("USL: no peak (σ=%.3f, κ=0, R²=%.2f)", u.Sigma, u.R2))
		}
	}
	return fmt.Sprintf("%s=%s: %s", param, num(s.X[pick]), strings.Join(parts, "; "))
}

// namedComparisons sums up non-numeric params (glibc vs jemalloc): what
// changed significantly against the baseline, and what did not.
func namedComparisons(e *plan.Experiment, points []Point, v *Verdict) []string {
	var out []string
	matrix := e.Vary == plan.Matrix && len(e.Params) > 1
	for pi, prm := range e.Params {
		if prm.Numeric && !(matrix && pi == len(e.Params)-1) {
			continue
		}
		if matrix && pi != len(e.Params)-1 {
			continue // in a matrix, the last param is the one compared
		}
		baseLabel := prm.Values[e.Baseline[prm.Name]].Label
		for i, p := range points {
			if p.Baseline || p.Labels[prm.Name] == baseLabel {
				continue
			}
			others := true
			var at []string
			for _, o := range e.Params {
				if o.Name == prm.Name {
					continue
				}
				if matrix {
					at = append(at, o.Name+"="+p.Labels[o.Name])
				} else if p.Labels[o.Name] != o.Values[e.Baseline[o.Name]].Label {
					others = false
				}
			}
			if !others {
				continue
			}
			var sig, same, untested []string
			n := 0
			for _, t := range v.Figures {
				r := t.Rows[i]
				if r.N == 0 || r.Baseline {
					continue
				}
				switch {
				case r.Significant:
					sig = append(sig, fmt.Sprintf("%s %+.1f%% (p=%.3f)", t.Name, 100*r.Delta, r.P))
				case strings.Contains(r.Versus, "untested"):
					// Too few runs for any test: the change of the medians,
					// said to be untested, never "no difference".
					if r.Delta != 0 {
						untested = append(untested, fmt.Sprintf("%s %+.1f%%", t.Name, 100*r.Delta))
					}
					n = r.N
				default:
					same = append(same, t.Name)
				}
			}
			line := fmt.Sprintf("%s=%s vs %s:", prm.Name, p.Labels[prm.Name], baseLabel)
			if len(at) > 0 {
				line = fmt.Sprintf("%s=%s vs %s at %s:", prm.Name, p.Labels[prm.Name], baseLabel, strings.Join(at, " "))
			}
			switch {
			case len(sig) > 0:
				line += " " + strings.Join(sig, ", ")
				if len(same) > 0 {
					line += "; no significant change in " + strings.Join(same, ", ")
				}
			case len(untested) > 0:
				line += fmt.Sprintf(" untested, too few runs (n=%d) to tell from noise: %s", n, strings.Join(untested, ", "))
			default:
				line += " no significant difference"
			}
			out = append(out, line)
		}
	}
	return out
}
