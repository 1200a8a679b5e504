package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loadlab/loadlab/internal/cost"
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
	// heading names what a verdict table's cells hold.
	"heading": cellHeading,

	// What a run's throughput counted, and what else ran on the machine.
	"drain":   func(s result.Summary) string { return DrainNote(&s) },
	"machine": MachineText,
	"part":    PartNote,
	// limitsInForce and limitsMeasured say server.limits in words.
	"limitsInForce":  limitsInForce,
	"limitsMeasured": limitsMeasured,
	"memoryLines":    memoryLines,
	// money and boxLines say a verdict's boxes (see BoxVerdict).
	"money":    cost.Money,
	"boxLines": boxLines,
}

// pages are the HTML templates, parsed on first use: at package init
// they cost every command 317 KB in 6,126 allocations and 1.3 ms
// (GODEBUG=inittrace=1 loadlab version), a run that writes no report too.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(funcs).ParseFS(templates, "templates/*.html"))
})

// The HTML report's charts are drawn at about the size the page shows them:
// style.html's grid gives each at least 480 px (360 pt) and, two to a row in
// the 1044 px page, about 516 px. At 432 by 240 points the legend's 10 pt
// text shows at 11 px or more in a column of 480 px and wider, where charts
// drawn at 720 points came out at 6 to 7 px.
const (
	htmlChartWidth  = 432 // points
	htmlChartHeight = 240
)

// svg renders a figure as inline SVG for the HTML report. The chart package
// escapes every text it draws, so its output is markup, not user text.
func svg(f figure) template.HTML {
	var b bytes.Buffer
	if err := f.Chart.SVG(&b, htmlChartWidth, htmlChartHeight); err != nil {
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
	// ScenarioLoads are the scenarios' own loads, when they had them.
	ScenarioLoads []scenarioLoad
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
	v := runView{R: r, Charts: charts(runFigures(r)), Version: r.Version, ScenarioLoads: scenarioLoads(r)}
	s := &r.Summary
	v.Rows = []latencyRow{{"latency", s.Latency}, {"service time", s.Service}, {"first byte", s.TTFB}}
	if s.Connect != nil {
		v.Rows = append(v.Rows, latencyRow{"connect", *s.Connect})
	}
	if s.TLS != nil {
		v.Rows = append(v.Rows, latencyRow{fmt.Sprintf("tls handshake (%d, %d resumed)", s.TLS.Count, s.TLSResumed), *s.TLS})
	}
	for _, reason := range sortedReasons(r.Aborts) {
		v.Aborts = append(v.Aborts, abortView{reason, r.Aborts[reason]})
	}
	return pages().ExecuteTemplate(w, "run.html", v)
}

type experimentView struct {
	O       *experiment.Outcome
	V       *experiment.Verdict // O's verdict, described
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
	Steps  []pointStep
}

// pointStep is one step over a point's runs: counts summed, latency
// percentiles the median of the runs', the first failed check seen.
type pointStep struct {
	Name             string
	Requests, Errors int64
	Passed, Checks   int64
	P50, P95, P99    float64
	FailedCheck      *result.FailedCheck
}

// pointSteps sums up each step over the runs of a point.
func pointSteps(runs []*result.Result) []pointStep {
	var out []pointStep
	var p50, p95, p99 [][]float64
	for _, r := range runs {
		for i, st := range r.Steps {
			if i >= len(out) {
				out = append(out, pointStep{Name: stepName(st)})
				p50, p95, p99 = append(p50, nil), append(p95, nil), append(p99, nil)
			}
			ps, s := &out[i], &st.Summary
			ps.Requests += s.Requests
			ps.Errors += s.Errors.Total
			ps.Passed += s.Checks.Passed
			ps.Checks += s.Checks.Passed + s.Checks.Failed
			if s.Latency.Count > 0 {
				p50[i], p95[i], p99[i] = append(p50[i], s.Latency.P50), append(p95[i], s.Latency.P95), append(p99[i], s.Latency.P99)
			}
			if ps.FailedCheck == nil {
				ps.FailedCheck = st.FailedCheck
			}
		}
	}
	for i := range out {
		out[i].P50, out[i].P95, out[i].P99 = median(p50[i]), median(p95[i]), median(p99[i])
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// maxPointCharts bounds the per-point time series drawn into the report, to
// keep a large experiment's report small; the data of every run stays in
// its runs/ directory and in the CSV.
const maxPointCharts = 12

// ExperimentHTML writes an experiment's report: the charts of each figure
// against each swept param with the spread of the repeats and the knee and
// recommendation marked, the verdict tables, and each point's runs.
func ExperimentHTML(w io.Writer, o *experiment.Outcome) error {
	v := experimentView{O: o, V: Describe(o.Verdict), Charts: charts(sweepFigures(o))}
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
		var results []*result.Result
		for j, r := range o.Runs {
			if r.Point == p.Key {
				pv.Runs = append(pv.Runs, r)
				if j < len(o.Results()) && o.Results()[j] != nil {
					results = append(results, o.Results()[j])
				}
			}
		}
		pv.Steps = pointSteps(results)
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
	return pages().ExecuteTemplate(w, "experiment.html", v)
}
