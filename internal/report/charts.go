package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/loadlab/loadlab/internal/chart"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
)

// figure is a chart with a file-safe name, for the HTML report (inline SVG)
// and the markdown report (PNG beside it).
type figure struct {
	Name  string
	Chart *chart.Chart
}

// runFigures are the time series of one run.
func runFigures(r *result.Result) []figure {
	s := r.Series
	if len(s) == 0 {
		return nil
	}
	t := make([]float64, len(s))
	rps, p50, p95, p99, errs, active := make([]float64, len(s)), make([]float64, len(s)), make([]float64, len(s)), make([]float64, len(s)), make([]float64, len(s)), make([]float64, len(s))
	for i, p := range s {
		t[i], rps[i], p50[i], p95[i], p99[i], errs[i], active[i] = p.T, p.RPS, p.P50, p.P95, p.P99, float64(p.Errors)/math.Max(p.Len, 1e-9), float64(p.Active)
	}
	out := []figure{
		{"throughput", &chart.Chart{Title: "Throughput", XLabel: "time (s)", YLabel: "requests/s", YUnit: chart.PerSecond, YMin0: true, Series: []chart.Series{{Name: "requests/s", X: t, Y: rps}}}},
		{"latency", &chart.Chart{Title: "Latency percentiles (per second)", XLabel: "time (s)", YLabel: "latency", YUnit: chart.Milliseconds, YMin0: true, Series: []chart.Series{
			{Name: "p50", X: t, Y: p50}, {Name: "p95", X: t, Y: p95}, {Name: "p99", X: t, Y: p99}}}},
		{"errors", &chart.Chart{Title: "Errors", XLabel: "time (s)", YLabel: "errors/s", YMin0: true, Series: []chart.Series{{Name: "errors/s", X: t, Y: errs}}}},
		{"active", &chart.Chart{Title: "Active VUs", XLabel: "time (s)", YLabel: "VUs in an iteration", YMin0: true, Series: []chart.Series{{Name: "active", X: t, Y: active}}}},
	}
	if sv := r.Server; sv != nil && len(sv.Series) > 1 {
		n := len(sv.Series)
		st, cpu, rss, pss := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i, p := range sv.Series {
			st[i], cpu[i], rss[i], pss[i] = p.T, p.CPU, float64(p.RSS), float64(p.PSS)
		}
		out = append(out, figure{"server-cpu", &chart.Chart{Title: "Server CPU", XLabel: "time (s)", YLabel: "% of one core", YMin0: true, Series: []chart.Series{{Name: "CPU", X: st, Y: cpu}}}})
		// A figure not measured (PSS, where smaps_rollup cannot be read;
		// both, for a server found but not readable) is all zeros: left out,
		// and the chart too when nothing is left.
		mem := &chart.Chart{Title: "Server memory", XLabel: "time (s)", YLabel: "memory", YUnit: chart.Bytes, YMin0: true}
		if measured(rss) {
			mem.Series = append(mem.Series, chart.Series{Name: "RSS", X: st, Y: rss})
		}
		if measured(pss) {
			mem.Series = append(mem.Series, chart.Series{Name: "PSS", X: st, Y: pss, Dashed: true})
		}
		if q := sv.Quota; q != nil {
			mem.Levels = []chart.Level{{Y: float64(q.Bytes), Label: "quota"}}
		}
		if len(mem.Series) > 0 {
			out = append(out, figure{"server-memory", mem})
		}
	}
	return out
}

// measured reports whether a series has any value above zero.
func measured(ys []float64) bool {
	return slices.ContainsFunc(ys, func(y float64) bool { return y > 0 })
}

const mib = 1 << 20

// sweepFigures are the charts of an experiment against each swept param: the
// published tuning studies' charts, with the spread of the repeats.
func sweepFigures(o *experiment.Outcome) []figure {
	v := o.Verdict
	if v == nil {
		return nil
	}
	var out []figure
	for _, prm := range o.Params {
		xs, labels, idx := axis(o, prm)
		if len(idx) < 2 {
			continue
		}
		var sweep *experiment.SweepVerdict
		for i := range v.Sweeps {
			if v.Sweeps[i].Param == prm.Name {
				// The first: a matrix's factor is swept at each condition,
				// the baseline's first, and the chart's axis is the baseline's.
				sweep = &v.Sweeps[i]
				break
			}
		}
		mk := func(ids []experiment.FigureID, title, ylabel string, unit chart.Unit, scale float64) *chart.Chart {
			c := &chart.Chart{Title: title, XLabel: prm.Name, YLabel: ylabel, YUnit: unit, YMin0: true}
			if !prm.Numeric {
				c.XLabels = labels
			}
			for _, id := range ids {
				t := v.Table(id)
				if t == nil {
					continue
				}
				s := chart.Series{Name: t.Name}
				for k, i := range idx {
					row := t.Rows[i]
					if row.N == 0 {
						continue
					}
					lo, hi := spread(row.Samples)
					s.X, s.Y, s.Lo, s.Hi = append(s.X, xs[k]), append(s.Y, row.Median*scale), append(s.Lo, lo*scale), append(s.Hi, hi*scale)
				}
				if len(s.X) > 0 {
					c.Series = append(c.Series, s)
				}
			}
			if len(c.Series) == 0 {
				return nil
			}
			if sweep != nil {
				if k := sweep.Knee; k != nil && *k >= 0 && *k < len(sweep.X) {
					c.Marks = append(c.Marks, chart.Mark{X: sweep.X[*k], Label: kneeMark(sweep)})
				}
				c.Marks = append(c.Marks, chart.Mark{X: sweep.X[sweep.Pick], Label: "recommended"})
			}
			return c
		}
		add := func(name, title, ylabel string, unit chart.Unit, figs ...experiment.FigureID) {
			if c := mk(figs, title, ylabel, unit, 1); c != nil {
				out = append(out, figure{prm.Name + "-" + name, c})
			}
		}
		add("throughput", "Requests per second by "+prm.Name, "requests/s", chart.PerSecond, experiment.FigureThroughput)
		add("latency", "Request duration by "+prm.Name, "latency", chart.Milliseconds, experiment.FigureP50, experiment.FigureP95, experiment.FigureP99)
		add("elapsed", "Elapsed time by "+prm.Name, "elapsed", chart.Seconds, experiment.FigureElapsed)
		add("cpu", "Server CPU by "+prm.Name, "% of one core", chart.Number, experiment.FigureCPU)
		memory := []experiment.FigureID{experiment.FigureRSSPeak, experiment.FigureRSSAverage, experiment.FigurePSSPeak, experiment.FigurePSSAverage}
		if c := mk(memory, "Server memory by "+prm.Name, "memory", chart.Bytes, mib); c != nil {
			if q := quota(o); q > 0 {
				c.Levels = []chart.Level{{Y: q, Label: "quota"}}
			}
			addMemoryFit(c, sweep)
			out = append(out, figure{prm.Name + "-memory", c})
		}
	}
	return out
}

// axis lists the points along one param with the others at baseline, in
// order of the param's values, and their positions on the X axis.
func axis(o *experiment.Outcome, prm experiment.Param) (xs []float64, labels []string, idx []int) {
	for vi, val := range prm.Values {
		for i, pt := range o.Points {
			if pt.Labels[prm.Name] != val || !pt.OthersAtBaseline(o.Params, prm.Name) {
				continue
			}
			x := float64(vi)
			if prm.Numeric {
				x, _ = strconv.ParseFloat(val, 64)
			}
			xs, labels, idx = append(xs, x), append(labels, val), append(idx, i)
		}
	}
	return xs, labels, idx
}

func spread(s []float64) (lo, hi float64) {
	if len(s) == 0 {
		return 0, 0
	}
	lo, hi = s[0], s[0]
	for _, x := range s {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// quota is the memory quota of the experiment's runs, in bytes (0: none).
func quota(o *experiment.Outcome) float64 {
	for _, r := range o.Results() {
		if r != nil && r.Server != nil && r.Server.Quota != nil {
			return float64(r.Server.Quota.Bytes)
		}
	}
	return 0
}

// pointFigures are one point's runs over time, repeats overlaid.
func pointFigures(o *experiment.Outcome, point string, name string) []figure {
	c := &chart.Chart{Title: "p95 latency over time, " + point, XLabel: "time (s)", YLabel: "p95", YUnit: chart.Milliseconds, YMin0: true}
	t := &chart.Chart{Title: "Throughput over time, " + point, XLabel: "time (s)", YLabel: "requests/s", YUnit: chart.PerSecond, YMin0: true}
	res := o.Results()
	for _, r := range o.Runs {
		if r.Point != point || r.Index-1 >= len(res) || res[r.Index-1] == nil {
			continue
		}
		s := res[r.Index-1].Series
		x, p95, rps := make([]float64, len(s)), make([]float64, len(s)), make([]float64, len(s))
		for i, p := range s {
			x[i], p95[i], rps[i] = p.T, p.P95, p.RPS
		}
		label := fmt.Sprintf("run %d", r.Index)
		c.Series = append(c.Series, chart.Series{Name: label, X: x, Y: p95})
		t.Series = append(t.Series, chart.Series{Name: label, X: x, Y: rps})
	}
	if len(c.Series) == 0 {
		return nil
	}
	return []figure{{name + "-throughput", t}, {name + "-p95", c}}
}
