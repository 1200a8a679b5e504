package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
)

//go:embed templates/*.html
var templates embed.FS

var funcs = template.FuncMap{
	"ms":    ms,
	"count": count,
	"rate":  rate,
	"bytes": quantity.FormatBytes,
	"pct":   func(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) },
	"f1":    func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"lines": func(s string) []string { return strings.Split(s, "\n") },
	"add":   func(a, b int64) int64 { return a + b },
}

var pages = template.Must(template.New("").Funcs(funcs).ParseFS(templates, "templates/*.html"))

// svg renders a figure as inline SVG for the HTML report. The chart package
// escapes every text it draws, so its output is markup, not user text.
func svg(f figure) template.HTML {
	var b bytes.Buffer
	if err := f.Chart.SVG(&b, 720, 300); err != nil {
		return template.HTML(`<p class="note">` + template.HTMLEscapeString(f.Chart.Title+": "+err.Error()) + `</p>`)
	}
	return template.HTML(b.String())
}

type chartView struct {
	Title string
	SVG   template.HTML
}

func charts(fs []figure) []chartView {
	out := make([]chartView, 0, len(fs))
	for _, f := range fs {
		out = append(out, chartView{Title: f.Chart.Title, SVG: svg(f)})
	}
	return out
}

type latencyRow struct {
	Name string
	P    result.Percentiles
}

type runView struct {
	R       *result.Result
	Charts  []chartView
	Rows    []latencyRow
	Aborts  []abortView
	Version string
}

type abortView struct {
	Reason string
	Count  int64
}

// HTML writes a run's report: one self-contained page with no scripts and
// no network requests: its tables, its charts as inline SVG, its validity
// warnings and the plan that produced it. All text from the run (URLs, step
// names, log lines, the plan) is escaped by html/template.
func HTML(w io.Writer, r *result.Result) error {
	v := runView{R: r, Charts: charts(runFigures(r)), Version: r.Version}
	s := &r.Summary
	v.Rows = []latencyRow{{"latency", s.Latency}, {"service time", s.Service}, {"first byte", s.TTFB}}
	if s.Connect != nil {
		v.Rows = append(v.Rows, latencyRow{"connect", *s.Connect})
	}
	for _, reason := range sortedReasons(r.Aborts) {
		v.Aborts = append(v.Aborts, abortView{reason, r.Aborts[reason]})
	}
	return pages.ExecuteTemplate(w, "run.html", v)
}

type experimentView struct {
	O       *experiment.Outcome
	Charts  []chartView
	Points  []pointView
	Done    int
	Failed  []experiment.RunInfo
	Version string
}

type pointView struct {
	Key    string
	Runs   []experiment.RunInfo
	Charts []chartView
}

// maxPointCharts bounds the per-point time series drawn into the report, to
// keep a large experiment's report small; the data of every run stays in
// its runs/ directory and in the CSV.
const maxPointCharts = 12

// ExperimentHTML writes an experiment's report: the charts of each figure
// against each swept param with the spread of the repeats and the knee and
// recommendation marked, the verdict tables, and each point's runs.
func ExperimentHTML(w io.Writer, o *experiment.Outcome) error {
	v := experimentView{O: o, Charts: charts(sweepFigures(o))}
	for _, r := range o.Runs {
		switch r.Status {
		case "done":
			v.Done++
		case "failed":
			v.Failed = append(v.Failed, r)
		}
	}
	for i, p := range o.Points {
		pv := pointView{Key: p.Key}
		for _, r := range o.Runs {
			if r.Point == p.Key {
				pv.Runs = append(pv.Runs, r)
			}
		}
		if i < maxPointCharts {
			pv.Charts = charts(pointFigures(o, p.Key, fmt.Sprintf("point%d", i+1)))
		}
		v.Points = append(v.Points, pv)
	}
	for _, r := range o.Results() {
		if r != nil {
			v.Version = r.Version
			break
		}
	}
	return pages.ExecuteTemplate(w, "experiment.html", v)
}
