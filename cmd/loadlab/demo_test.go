package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/report"
)

// TestDemo runs `loadlab demo` as a newcomer would, from a built binary: the
// shop starts as the server under test for each of 25 runs, the verdict names
// a worker count with significant differences, and the report is written, in
// under two minutes.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole demo: about a minute")
	}
	bin := filepath.Join(t.TempDir(), "loadlab")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "demo", "--out", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("loadlab demo: %v\n%s%s", err, stderr.Bytes(), stdout.Bytes())
	}
	out := stdout.Bytes()
	// Answer first: the summary fits a screen, 45 lines on a terminal of
	// 100 columns at most (a longer line takes two), its table is not
	// wrapped, and the recommendation is within its first 10 lines.
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	shown := 0
	for _, line := range lines {
		shown += max(1, (len([]rune(line))+99)/100)
	}
	if shown > 45 {
		t.Errorf("the demo's summary takes %d lines at 100 columns, want 45 at most:\n%s", shown, out)
	}
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "point ") }); i < 0 {
		t.Errorf("no table of the points:\n%s", out)
	} else {
		for _, line := range lines[i:] {
			if line == "" || strings.HasPrefix(line, "(") {
				break
			}
			if n := len([]rune(line)); n > 100 {
				t.Errorf("a line of the table is %d columns, want 100 at most: %q", n, line)
			}
		}
	}
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "recommendation: ") }); i < 0 || i >= 10 {
		t.Errorf("the recommendation is at line %d of the summary, want within the first 10:\n%s", i+1, out)
	}
	if took > 2*time.Minute {
		t.Errorf("the demo took %v, want under 2 minutes", took)
	}
	text := string(out)
	if !(strings.Contains(text, "recommendation: workers=") || strings.Contains(text, "recommendation: NOT TRUSTED YET") || strings.Contains(text, "recommendation: trusted for ")) || !strings.Contains(text, "report: ") {
		t.Errorf("the demo's output has no recommendation or report:\n%s", text)
	}
	o, err := experiment.LoadOutcome(filepath.Join(dir, "results"))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Complete || len(o.Runs) != 25 || len(o.Verdict.Sweeps) != 1 {
		t.Fatalf("complete %v, %d runs, %d sweeps", o.Complete, len(o.Runs), len(o.Verdict.Sweeps))
	}
	s := o.Verdict.Sweeps[0]
	if s.Throughput[len(s.Throughput)-1] < 1.5*s.Throughput[0] {
		t.Errorf("throughput by workers %v: more workers should help a lot", s.Throughput)
	}
	// workers=1 is far slower than the baseline: with 5 runs a point the
	// verdict says so with a p-value, not "untested".
	if tp := o.Verdict.Table(experiment.FigureThroughput); tp == nil || !tp.Rows[1].Significant || tp.Rows[1].Point != "workers=1" {
		t.Errorf("throughput of workers=1 against the baseline: %+v", tp)
	}
	if strings.Contains(text, "untested") || strings.Contains(text, "need >=") {
		t.Errorf("the demo's verdict has untested changes or benchmath's warnings:\n%s", text)
	}
	for _, r := range o.Results() {
		if r.Summary.Checks.Failed != 0 || r.Summary.Errors.Total != 0 || r.Summary.Iterations != 50 {
			t.Errorf("a run had %d failed checks, %d errors, %d journeys: the journey must pass its CSRF checks", r.Summary.Checks.Failed, r.Summary.Errors.Total, r.Summary.Iterations)
			break
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "report.html")); err != nil {
		t.Error(err)
	}
	t.Logf("demo took %v: %s", took.Round(time.Second), report.Describe(o.Verdict).Recommendation)
}
