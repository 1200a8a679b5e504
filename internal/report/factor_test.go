package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// TestVerdictNamesItsFactor: a matrix's verdict says which param it
// compares, at which conditions, and why; its recommendation speaks of the
// factor at each condition, and never recommends a condition (c=100).
func TestVerdictNamesItsFactor(t *testing.T) {
	p, err := plan.Parse("plan.yaml", []byte(`
name: thin-vs-puma
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: "{{ c }}", iterations: "{{ per_vu }}" } }
params:
  server: { thin: thin start, puma: puma }
  c: [100, 200]
  per_vu: [5, 50]
vary: matrix
baseline: { server: thin }
repeat: 5
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const seed = 9
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 5, seed)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		rps := 100.0 + float64(s.Rep)
		if points[s.Point].Labels["server"] == "puma" {
			rps *= 1.12
		}
		results[i] = &result.Result{Summary: result.Summary{Requests: int64(rps), Responses: int64(rps), DurationS: 1, Latency: result.Percentiles{Count: 10, P50: 5, P95: 10, P99: 20}}}
	}
	o := experiment.Assemble(p.Head(), p.Experiment, seed, results)
	var text, markdown, page bytes.Buffer
	if err := Verdict(&text, o); err != nil {
		t.Fatal(err)
	}
	ExperimentMarkdown(&markdown, "", o)
	ExperimentHTML(&page, o)
	const factor = "server, each value against server=thin, at each combination of c and per_vu (the only param the baseline names; compare: PARAM names another)"
	got := text.String()
	if !strings.Contains(got, "\nfactor: "+factor+"\n") {
		t.Errorf("the text verdict does not name the factor:\n%s", got)
	}
	if !strings.Contains(markdown.String(), "**Factor:** "+md(factor)) {
		t.Errorf("the markdown verdict does not name the factor:\n%s", markdown.String())
	}
	if !strings.Contains(page.String(), "Factor: "+factor) {
		t.Errorf("the HTML verdict does not name the factor")
	}
	_, rec, _ := strings.Cut(got, "\nrecommendation\n")
	rec, _, _ = strings.Cut(rec, "\n\n")
	lines := strings.Split(strings.TrimSpace(rec), "\n")
	if len(lines) != 4 {
		t.Fatalf("recommendation: %d lines, want one per condition:\n%s", len(lines), rec)
	}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "at c=") || !strings.Contains(l, ", server=puma vs thin: throughput +1") {
			t.Errorf("recommendation line %q, want \"at c=… per_vu=…, server=puma vs thin: throughput +12…\"", l)
		}
	}
	if !strings.Contains(rec, "at c=200 per_vu=50, server=puma vs thin: throughput +11.7% (p=0.008)") {
		t.Errorf("no line for c=200 per_vu=50:\n%s", rec)
	}
}
