package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
)

// TestStepVerdictsShown: each step's tables and the recommendation that
// names the one step that changed are in the terminal verdict, the
// markdown and the HTML report.
func TestStepVerdictsShown(t *testing.T) {
	o := fixtureExperiment(t)
	v := *o.Verdict
	v.Recommendation = ""
	base, other := o.Points[0].Key, o.Points[1].Key
	sig := &experiment.Change{Status: experiment.Significant, P: 0.002, N1: 5, N2: 5, Delta: 0.8, DeltaDefined: true}
	noise := &experiment.Change{Status: experiment.NotSignificant, P: 0.69, N1: 5, N2: 5, Delta: 0.01, DeltaDefined: true}
	part := func(name string, c *experiment.Change, median float64) experiment.PartVerdict {
		t := experiment.FigureTable{ID: experiment.FigureP95, Name: "p95 latency", Unit: "ms", Rows: []experiment.FigureRow{
			{Point: base, Baseline: true, Spread: experiment.Spread{N: 5, Median: 10, Min: 9, Max: 11}},
			{Point: other, Reference: base, Spread: experiment.Spread{N: 5, Median: median, Min: median - 1, Max: median + 1}, Change: c, Delta: c.Delta, P: c.P, Significant: c.Significant()},
		}}
		return experiment.PartVerdict{Scenario: "default", Step: name, Name: name, Figures: []experiment.FigureTable{t}}
	}
	v.Steps = []experiment.PartVerdict{part("login", sig, 18), part("browse", noise, 10.1)}
	v.StepChanges = []experiment.StepChange{{Point: other, Reference: base, Step: "login", Figure: experiment.FigureP95, Change: *sig, Others: 1}}
	o.Verdict = &v
	rec := other + " vs " + base + ": login p95 +80% (p=0.002); no other step's p95 changed by 5% or more"

	var buf bytes.Buffer
	if err := Verdict(&buf, o); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{"\nstep login: p95 latency (ms)", "\nstep browse: p95 latency (ms)", "+80.00% (p=0.002 n=5)", "~ (p=0.690 n=5)", "  " + rec + "\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("terminal verdict lacks %q:\n%s", want, text)
		}
	}
	buf.Reset()
	if err := ExperimentMarkdown(&buf, "", o); err != nil {
		t.Fatal(err)
	}
	mdText := buf.String()
	for _, want := range []string{"### By step", "| step login: p95 latency (ms) |", "**+80.00% (p=0.002 n=5)**", md(rec)} {
		if !strings.Contains(mdText, want) {
			t.Errorf("markdown lacks %q:\n%s", want, mdText)
		}
	}
	buf.Reset()
	if err := ExperimentHTML(&buf, o); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<h2>By step</h2>", "<h3>step login: p95 latency (ms)</h3>", "<h3>step browse: p95 latency (ms)</h3>", `class="sig">&#43;80.00% (p=0.002 n=5)`} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	if d := Describe(&v); !strings.Contains(d.Recommendation, rec) || d.Steps[0].Figures[0].Rows[1].Versus != "+80.00% (p=0.002 n=5)" {
		t.Errorf("described: recommendation %q, login row %+v", d.Recommendation, d.Steps[0].Figures[0].Rows[1])
	}
}
