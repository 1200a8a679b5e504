package report

import (
	"bytes"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/loadlab/loadlab/internal/experiment"
)

// testdata/capacity is a real search, kept as loadlab wrote it
// (capacity.json and each step's result.json, without server.log and the
// reports): `loadlab capacity plan.yaml --slo 'p95(latency) < 200ms,
// error_rate < 1%' --precision 25% --confirm 1 --step-max 10s --workers 1`
// against `loadlab target --workers 4` started by the plan's server:
// section, with two steps (20 ms; 20 ms and 5 ms of CPU). The plan's name
// and its steps' names hold markup, to be shown, never run.

// TestCapacityReport: report.html of a capacity search has the answer,
// what broke first, its five charts (latency with the SLO line and the
// answer marked, throughput against the offered rate, server CPU and
// memory, each step's p95), the ranking and every step, and the search's
// text escaped everywhere; report.md links the same charts as PNG files
// and carries no raw HTML.
func TestCapacityReport(t *testing.T) {
	c, err := ReadCapacity("testdata/capacity")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range c.Results {
		if r == nil {
			t.Fatalf("step %d: no result", i+1)
		}
	}
	page := render(t, func(w io.Writer) error { return CapacityHTML(w, c) })
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	svgs, rows := 0, 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "img", "iframe", "object", "embed", "link":
				bad = append(bad, n.Data)
			case "b": // the page's own bold is fine; the step name's <b>x</b> is not
				if ch := n.FirstChild; ch != nil && ch.Type == html.TextNode && ch.Data == "x" {
					bad = append(bad, "b from a step name")
				}
			case "svg":
				svgs++
			case "tr":
				rows++
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") || strings.Contains(a.Val, "javascript:") {
					bad = append(bad, n.Data+" "+a.Key)
				}
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	if len(bad) > 0 {
		t.Errorf("the capacity report has elements from the search's text: %v", bad)
	}
	if svgs != 5 {
		t.Errorf("%d charts, want 5", svgs)
	}
	// The ranking (a heading and 2 steps) and the steps (a heading and 8).
	if rows != 3+9 {
		t.Errorf("%d table rows, want 12", rows)
	}
	text := string(page)
	if strings.Contains(text, "browse / home") {
		t.Error("the steps are named two ways")
	}
	for _, want := range []string{
		"Capacity: 60/s (held 1 of 1 confirm repeats; 80/s broke)",
		"shop &lt;script&gt;alert(1)&lt;-script&gt;",
		"browse/login &lt;script&gt;",
		"browse/home &lt;b&gt;x&lt;/b&gt; is the bottleneck: its p95 rose 24×",
		"p95(latency) &lt; 200ms: 37.31 ms → 831.5 ms (19% of its limit at the answer, the nearest; breaks above)",
		">capacity 60/s<",           // the answer, marked on the charts
		">p95(latency) &lt; 200ms<", // the SLO's line on the latency chart
		">offered<", ">iterations/s<", ">CPU-bound<",
		`<a href="steps/008/result.json">`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	dir := t.TempDir()
	mdText := render(t, func(w io.Writer) error { return CapacityMarkdown(w, dir, dir, c) })
	if bytes.Contains(mdText, []byte("<script")) || bytes.Contains(mdText, []byte("<b>")) {
		t.Errorf("report.md carries raw HTML:\n%s", mdText)
	}
	for _, name := range []string{"latency", "throughput", "server-cpu", "server-memory", "steps"} {
		if !bytes.Contains(mdText, []byte("!["+name+"](report-"+name+".png)")) {
			t.Errorf("report.md does not link its %s chart:\n%s", name, mdText)
		}
		if fi, err := os.Stat(filepath.Join(dir, "report-"+name+".png")); err != nil || fi.Size() < 1000 {
			t.Errorf("chart %s: %v", name, err)
		}
	}
	if !bytes.Contains(mdText, []byte("**Capacity: 60/s** (held 1 of 1 confirm repeats; 80/s broke).")) {
		t.Errorf("report.md lacks the answer:\n%s", mdText)
	}

	rowsCSV, err := csv.NewReader(bytes.NewReader(render(t, func(w io.Writer) error { return CapacityCSV(w, c) }))).ReadAll()
	if err != nil || len(rowsCSV) != 9 || rowsCSV[1][2] != "20" || rowsCSV[8][4] != "true" {
		t.Errorf("CSV %v: %v", rowsCSV, err)
	}

	// Written as the search writes them.
	out := t.TempDir()
	if err := WriteCapacityFiles(out, c); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{HTMLFile, MarkdownFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestCapacityReportNoSteps: a search with no step kept yet renders.
func TestCapacityReportNoSteps(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "capacity.json"), []byte(`{"schema":"loadlab.capacity/v1","name":"x","slo":["p95(latency) < 1s"],"search":{"by":"rate"},"capacity":null,"limit":null,"done":false,"steps":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !IsCapacity(dir) {
		t.Fatal("IsCapacity: false")
	}
	c, err := ReadCapacity(dir)
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, func(w io.Writer) error { return CapacityHTML(w, c) })
	if !bytes.Contains(page, []byte("no answer yet: 0 steps done")) || !bytes.Contains(page, []byte("not done")) {
		t.Errorf("page:\n%s", page)
	}
	if _, err := ReadCapacity(t.TempDir()); err == nil {
		t.Error("a directory without capacity.json: no error")
	}
}

// TestNamedCapacity: an experiment of capacity searches says which value
// holds more, with the p-value, before the other figures.
func TestNamedCapacity(t *testing.T) {
	n := experiment.NamedComparison{Param: "balance", Value: "leastconn", Baseline: "roundrobin", Figures: []experiment.FigureChange{
		{ID: experiment.FigureCapacity, Name: "capacity", N: 6, Change: experiment.Change{Status: experiment.Significant, P: 0.002, Delta: 0.12}},
		{ID: experiment.FigureThroughput, Name: "throughput", N: 6, Change: experiment.Change{Status: experiment.Significant, P: 0.002, Delta: 0.11}},
	}}
	want := "balance=leastconn vs roundrobin: leastconn holds 12% more than roundrobin (capacity, p=0.002); capacity +12.0% (p=0.002), throughput +11.0% (p=0.002)"
	if got := named(n); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	n.Figures[0].Change.Delta = -0.3
	if got := named(n); !strings.Contains(got, "holds 30% less than roundrobin") {
		t.Errorf("less: %s", got)
	}
	n.Figures = n.Figures[1:]
	if got := named(n); strings.Contains(got, "holds") {
		t.Errorf("no capacity figure: %s", got)
	}
}
