package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/loadlab/loadlab/internal/capacity"
	"github.com/loadlab/loadlab/internal/chart"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/threshold"
)

// Capacity is a capacity search as its directory keeps it: capacity.json
// and the result of each step that has one (nil where a step kept none).
type Capacity struct {
	Doc     *capacity.Document
	Results []*result.Result // by step, from 0
}

// IsCapacity says whether dir holds a capacity search.
func IsCapacity(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, capacity.File))
	return err == nil
}

// ReadCapacity reads a capacity search's directory: capacity.json and the
// result.json of every step. A step's result that cannot be read leaves
// that step out of the charts.
func ReadCapacity(dir string) (*Capacity, error) {
	path := filepath.Join(dir, capacity.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d capacity.Document
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.Schema != capacity.Schema {
		return nil, fmt.Errorf("%s: schema %q, want %s", path, d.Schema, capacity.Schema)
	}
	c := &Capacity{Doc: &d, Results: make([]*result.Result, len(d.Steps))}
	for i, s := range d.Steps {
		if s.Result == "" || !filepath.IsLocal(filepath.FromSlash(s.Result)) {
			continue
		}
		c.Results[i], _ = store.ReadResult(filepath.Join(dir, filepath.FromSlash(s.Result)))
	}
	return c, nil
}

// WriteCapacityFiles writes a capacity search's reports into its
// directory: report.html, and report.md with its PNG charts.
func WriteCapacityFiles(dir string, c *Capacity) error {
	return store.WritesFailed(
		writeFile(dir, HTMLFile, func(w io.Writer) error { return CapacityHTML(w, c) }),
		writeFile(dir, MarkdownFile, func(w io.Writer) error { return CapacityMarkdown(w, dir, dir, c) }),
	)
}

// level is what a step of the search varied: its rate, or its VUs.
func level(s capacity.StepRecord) float64 {
	if s.VUs > 0 {
		return float64(s.VUs)
	}
	return s.Rate
}

// byLevel groups a figure of the steps by their level, in ascending order:
// the median at each level and, where several steps ran at one level (the
// confirm repeats), the lowest and highest. ok leaves a step out.
type byLevel struct {
	X, Y, Lo, Hi []float64
	Spread       bool // some level has more than one step
}

func groupByLevel(steps []capacity.StepRecord, value func(i int) (float64, bool)) byLevel {
	at := map[float64][]float64{}
	for i, s := range steps {
		if v, ok := value(i); ok && !math.IsNaN(v) {
			at[level(s)] = append(at[level(s)], v)
		}
	}
	var g byLevel
	for _, x := range slices.Sorted(func(yield func(float64) bool) {
		for x := range at {
			if !yield(x) {
				return
			}
		}
	}) {
		vs := at[x]
		g.X, g.Y = append(g.X, x), append(g.Y, median(vs))
		g.Lo, g.Hi = append(g.Lo, slices.Min(vs)), append(g.Hi, slices.Max(vs))
		g.Spread = g.Spread || len(vs) > 1
	}
	return g
}

func (g byLevel) series(name string) chart.Series {
	s := chart.Series{Name: name, X: g.X, Y: g.Y}
	if g.Spread {
		s.Lo, s.Hi = g.Lo, g.Hi
	}
	return s
}

// maxStepSeries bounds the plan steps drawn in the per-step latency chart;
// the ranking table has them all.
const maxStepSeries = 8

// capacityFigures are a search's charts against the level it varied: the
// latency percentiles with the SLO's latency limits and the answer marked,
// throughput against the offered rate (the plateau), the server's CPU and
// memory, and each plan step's p95 (the ranking, drawn).
func capacityFigures(c *Capacity) []figure {
	d := c.Doc
	if len(d.Steps) == 0 {
		return nil
	}
	byVUs := d.Search.By == "vus"
	xLabel, xUnit := "offered rate", chart.PerSecond
	if byVUs {
		xLabel, xUnit = "VUs", chart.Number
	}
	var marks []chart.Mark
	if a := d.Answer(); a > 0 {
		marks = append(marks, chart.Mark{X: a, Label: "capacity " + d.Unit(a)})
	}
	measured := func(i int) bool { return d.Steps[i].Throughput > 0 }
	steps := d.Steps
	fig := func(name string, ch *chart.Chart) figure {
		ch.XLabel, ch.XUnit, ch.Marks = xLabel, xUnit, marks
		return figure{name, ch}
	}

	var levels []chart.Level
	for _, text := range d.SLO {
		t, err := threshold.Parse(text)
		if err == nil && t.Metric.Unit() == threshold.Milliseconds && (t.Op == threshold.Less || t.Op == threshold.LessOrEqual) {
			levels = append(levels, chart.Level{Y: t.Value, Label: text})
		}
	}
	latency := &chart.Chart{Title: "Latency against load", YLabel: "latency", YUnit: chart.Milliseconds, YMin0: true, Levels: levels}
	for _, p := range []struct {
		name string
		get  func(capacity.StepRecord) float64
	}{{"p50", func(s capacity.StepRecord) float64 { return s.P50 }}, {"p95", func(s capacity.StepRecord) float64 { return s.P95 }}, {"p99", func(s capacity.StepRecord) float64 { return s.P99 }}} {
		latency.Series = append(latency.Series, groupByLevel(steps, func(i int) (float64, bool) { return p.get(steps[i]), measured(i) }).series(p.name))
	}
	// An iteration of a plan of several steps sends several requests: the
	// offered rate is of iterations, so they are drawn beside responses.
	multi := false
	for _, r := range c.Results {
		multi = multi || r != nil && len(r.Steps) > 1
	}
	tput := &chart.Chart{Title: "Throughput against load", YLabel: "per second", YUnit: chart.PerSecond, YMin0: true}
	g := groupByLevel(steps, func(i int) (float64, bool) { return steps[i].Throughput, measured(i) })
	tput.Series = append(tput.Series, g.series("responses/s"))
	if multi {
		it := groupByLevel(steps, func(i int) (float64, bool) {
			if i < len(c.Results) && c.Results[i] != nil && c.Results[i].Summary.DurationS > 0 {
				return float64(c.Results[i].Summary.Iterations) / c.Results[i].Summary.DurationS, true
			}
			return 0, false
		})
		tput.Series = append(tput.Series, it.series("iterations/s"))
	}
	if !byVUs && len(g.X) > 0 {
		tput.Series = append(tput.Series, chart.Series{Name: "offered", X: g.X, Y: g.X, Dashed: true})
	}
	out := []figure{fig("latency", latency), fig("throughput", tput)}

	server := func(i int) *result.Server {
		if i < len(c.Results) && c.Results[i] != nil {
			return c.Results[i].Server
		}
		return nil
	}
	cpu := groupByLevel(steps, func(i int) (float64, bool) {
		if s := server(i); s != nil {
			return s.MachineAvg, true
		}
		return 0, false
	})
	if len(cpu.X) > 0 {
		out = append(out, fig("server-cpu", &chart.Chart{Title: "Server CPU against load", YLabel: "% of its CPUs", YMin0: true,
			Series: []chart.Series{cpu.series("CPU (average)")}, Levels: []chart.Level{{Y: 100 * capacity.CPUBound, Label: "CPU-bound"}}}))
		rss := groupByLevel(steps, func(i int) (float64, bool) {
			if s := server(i); s != nil {
				return float64(s.RSSPeak), true
			}
			return 0, false
		})
		out = append(out, fig("server-memory", &chart.Chart{Title: "Server memory against load", YLabel: "RSS peak", YUnit: chart.Bytes, YMin0: true,
			Series: []chart.Series{rss.series("RSS peak")}}))
	}

	// The plan's steps, the ranking's order first.
	var names []string
	for _, r := range d.Ranking {
		names = append(names, r.Step)
	}
	for _, r := range c.Results {
		if r == nil {
			continue
		}
		for _, s := range r.Steps {
			if n := capacity.StepName(s); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) > 1 {
		per := &chart.Chart{Title: "p95 latency per step", YLabel: "p95 latency", YUnit: chart.Milliseconds, YMin0: true}
		for _, name := range names[:min(len(names), maxStepSeries)] {
			gs := groupByLevel(steps, func(i int) (float64, bool) {
				if i >= len(c.Results) || c.Results[i] == nil {
					return 0, false
				}
				for _, s := range c.Results[i].Steps {
					if capacity.StepName(s) == name && s.Summary.Latency.Count > 0 {
						return s.Summary.Latency.P95, true
					}
				}
				return 0, false
			})
			per.Series = append(per.Series, gs.series(name))
		}
		out = append(out, fig("steps", per))
	}
	return out
}

type capacityView struct {
	D        *capacity.Document
	Headline string
	Clauses  []string
	Charts   []chartView
	Level    string
	Steps    []capacityStep
	Version  string
}

type capacityStep struct {
	capacity.StepRecord
	Level, CPU, Verdict string
}

// CapacityHTML writes a capacity search's report: one self-contained page
// (no scripts, no network requests) with the answer, what broke first, the
// charts as inline SVG, the ranking of the plan's steps and every step.
// All text from the search (names, clauses, reasons) is escaped by
// html/template.
func CapacityHTML(w io.Writer, c *Capacity) error {
	d := c.Doc
	v := capacityView{D: d, Headline: d.Headline(), Charts: charts(capacityFigures(c)), Level: "rate", Version: capacityVersion(c)}
	if d.Search.By == "vus" {
		v.Level = "VUs"
	}
	if d.Limit != nil {
		v.Clauses = d.Limit.ClauseWords()
	}
	for _, s := range d.Steps {
		cs := capacityStep{StepRecord: s, Level: s.Level(), Verdict: verdict(s)}
		if s.ServerCPUPct > 0 {
			cs.CPU = fmt.Sprintf("%.0f%%", s.ServerCPUPct)
		}
		v.Steps = append(v.Steps, cs)
	}
	return pages().ExecuteTemplate(w, "capacity.html", v)
}

// capacityVersion is the loadlab that made the search's last step kept.
func capacityVersion(c *Capacity) string {
	for i := len(c.Results) - 1; i >= 0; i-- {
		if c.Results[i] != nil {
			return c.Results[i].Version
		}
	}
	return ""
}

func verdict(s capacity.StepRecord) string {
	v := "holds"
	if !s.Holds {
		v = "breaks: " + s.Clause
	}
	if s.Stop != "" {
		v += " [" + string(s.Stop) + "]"
	}
	return v
}

// CapacityMarkdown writes a capacity search's report.md: the tables of
// capacity.Document.WriteMarkdown, with its charts as PNG files in dir
// linked from the directory from (dir "" draws none).
func CapacityMarkdown(w io.Writer, dir, from string, c *Capacity) error {
	var images []capacity.Image
	if dir != "" {
		names, err := writePNGs(dir, "report", capacityFigures(c))
		if err != nil {
			return err
		}
		for _, n := range names {
			images = append(images, capacity.Image{Name: strings.TrimSuffix(strings.TrimPrefix(n, "report-"), ".png"), Path: link(dir, from, n)})
		}
	}
	return c.Doc.WriteMarkdown(w, images...)
}

// CapacityCSV writes a capacity search's steps, one row each.
func CapacityCSV(w io.Writer, c *Capacity) error {
	cw := newCSV(w)
	if err := cw.Write([]string{"index", "phase", "rate_per_s", "vus", "holds", "throughput_per_s", "p50_ms", "p95_ms", "p99_ms", "error_rate", "in_flight", "server_cpu_avg_pct", "clause", "stop"}); err != nil {
		return err
	}
	for _, s := range c.Doc.Steps {
		holds := "false"
		if s.Holds {
			holds = "true"
		}
		if err := cw.Write([]string{n(int64(s.Index)), string(s.Phase), f(s.Rate), n(int64(s.VUs)), holds, f(s.Throughput), f(s.P50), f(s.P95), f(s.P99), f(s.ErrorRate), f(s.InFlight), f(s.ServerCPUPct), s.Clause, string(s.Stop)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
