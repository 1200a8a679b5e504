package report

import (
	"io"
	"slices"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
)

// Verdict writes an experiment's verdict: for each figure, every point's
// median with its confidence interval and its change from the baseline
// (benchstat's notation: "~" when the difference is not significant), then
// the recommendation and the warnings.
func Verdict(w io.Writer, o *experiment.Outcome) error {
	ew := &errWriter{w: w}
	v, done := experimentHead(ew, o)
	if v == nil {
		return ew.err
	}
	if v.Factor != "" {
		ew.printf("factor: %s\n", v.Factor)
	}
	if done == 0 {
		// No figures to show: one line, not a table of "no runs" per
		// figure, then why the runs failed.
		ew.printf("\nno runs done: no figures to show\n")
		failedRuns(ew, o)
		return interrupted(ew, o)
	}
	width := len("point")
	for _, p := range o.Points {
		width = max(width, len(p.Key)+len(" (baseline)"))
	}
	for _, t := range v.Figures {
		width = max(width, len(t.Name)+len(t.Unit)+3)
	}
	for _, p := range slices.Concat(v.Steps, v.Scenarios) {
		for _, t := range p.Figures {
			width = max(width, len("scenario ")+len([]rune(p.Name))+len(": ")+len(t.Name)+len(t.Unit)+3)
		}
	}
	figureTables(ew, v.Figures, width, "", v.Against)
	for _, parts := range []struct {
		kind  string
		parts []experiment.PartVerdict
	}{{"step", v.Steps}, {"scenario", v.Scenarios}} {
		for _, p := range parts.parts {
			figureTables(ew, p.Figures, width, parts.kind+" "+p.Name+": ", v.Against)
		}
	}
	for _, s := range v.Sweeps {
		if s.USL != nil {
			ew.printf("\nUSL fit of throughput against %s: %s\n", s.Param, s.USL.Text)
		}
		if m := memoryLines(s); len(m) > 0 {
			ew.printf("\nmemory against %s\n", s.Param)
			for _, line := range m {
				ew.printf("  %s\n", line)
			}
		}
	}
	if b := v.Boxes; b != nil {
		ew.printf("\nwhich box (%s, by price)\n", b.Param)
		for _, line := range b.Text {
			ew.printf("  %s\n", line)
		}
	}
	if v.Recommendation != "" {
		ew.printf("\nrecommendation\n")
		for _, line := range strings.Split(v.Recommendation, "\n") {
			ew.printf("  %s\n", line)
		}
	}
	if len(v.Noise) > 0 {
		ew.printf("\nnoise\n")
		for _, line := range v.Noise {
			ew.printf("  %s\n", line)
		}
	}
	if len(v.Quota) > 0 {
		ew.printf("\nmemory quota\n")
		for _, line := range v.Quota {
			ew.printf("  %s\n", line)
		}
	}
	if len(v.Validity) > 0 {
		ew.printf("\nvalidity: runs whose figures are suspect\n")
		for _, line := range v.Validity {
			ew.printf("  %s\n", line)
		}
	}
	if len(v.Thresholds)+len(v.Passed) > 0 {
		ew.printf("\nthresholds\n")
		for _, line := range v.Thresholds {
			ew.printf("  FAIL  %s\n", line)
		}
		for _, line := range v.Passed {
			ew.printf("  pass  %s\n", line)
		}
	}

	if len(v.Warnings) > 0 {
		ew.printf("\nwarnings\n")
		for _, line := range v.Warnings {
			ew.printf("  %s\n", line)
		}
	}
	failedRuns(ew, o)
	return interrupted(ew, o)
}

// experimentHead writes an experiment's first line (its points, repeats
// and runs done, how it varies, its seed) and returns its verdict in words
// (nil without one) and how many runs are done.
func experimentHead(ew *errWriter, o *experiment.Outcome) (*experiment.Verdict, int) {
	done := 0
	for _, r := range o.Runs {
		if r.Status == "done" {
			done++
		}
	}
	ew.printf("experiment %s · %s × %s (%d of %s done) · %s · seed %d\n",
		o.Name, plural(len(o.Points), "point"), plural(o.Repeat, "repeat"), done, plural(len(o.Runs), "run"), o.Vary, o.Seed)
	if o.Verdict == nil {
		return nil, done
	}
	return Describe(o.Verdict), done
}

// figureTables writes one table a figure: each point's median with its
// spread and its change from its reference. Each heading starts with
// prefix ("step login: ").
func figureTables(ew *errWriter, tables []experiment.FigureTable, width int, prefix, against string) {
	for _, t := range tables {
		heading := cellHeading(t)
		cellWidth := len([]rune(heading))
		for _, r := range t.Rows {
			cellWidth = max(cellWidth, len([]rune(strings.TrimSpace(r.Cell))))
		}
		ew.printf("\n%-*s  %-*s  vs %s\n", width, prefix+t.Name+" ("+t.Unit+")", cellWidth, heading, against)
		for _, r := range t.Rows {
			name := r.Point
			if r.Baseline {
				name += " (baseline)"
			}
			cell := strings.TrimSpace(r.Cell)
			if r.N == 0 {
				cell = "no runs"
			}
			pad := cellWidth - len([]rune(cell))
			ew.printf("%-*s  %s%s  %s\n", width, name, cell, strings.Repeat(" ", max(pad, 0)), r.Versus)
		}
	}
}

// maxFailedShown is how many failed runs the verdict lists.
const maxFailedShown = 5

// failedRuns writes the failed runs under their own heading: how many of
// all, and the first few with their error's first line.
func failedRuns(ew *errWriter, o *experiment.Outcome) {
	failed := 0
	for _, r := range o.Runs {
		if r.Status == "failed" {
			failed++
		}
	}
	if failed == 0 {
		return
	}
	ew.printf("\nfailed runs: %d of %d\n", failed, len(o.Runs))
	shown := 0
	for _, r := range o.Runs {
		if r.Status == "failed" && shown < maxFailedShown {
			shown++
			ew.printf("  run %d (%s #%d): %s\n", r.Index, r.Point, r.Rep, firstLine(r.Error))
		}
	}
	if failed > shown {
		ew.printf("  and %d more (runs.csv has them all)\n", failed-shown)
	}
}

func interrupted(ew *errWriter, o *experiment.Outcome) error {
	if o.Interrupted {
		ew.printf("\ninterrupted: run the same command again to resume; the runs above are kept\n")
	}
	return ew.err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Comparison writes two sides figure by figure, benchstat style.
func Comparison(w io.Writer, c *experiment.Comparison) error {
	ew := &errWriter{w: w}
	ew.printf("A: %s (%s)\nB: %s (%s)\n\n", c.A.Label, plural(len(c.A.Results), "run"), c.B.Label, plural(len(c.B.Results), "run"))
	view := comparisonView(c)
	if len(view.Likeness) > 0 {
		for _, l := range view.Likeness {
			ew.printf("%s\n", l)
		}
		ew.printf("\n")
	}
	nameW, aW, bW := len("figure"), len("A"), len("B")
	for _, r := range view.Rows {
		nameW = max(nameW, len(r.Figure)+len(r.Unit)+3)
		aW = max(aW, len([]rune(r.A)))
		bW = max(bW, len([]rune(r.B)))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(n-len([]rune(s)), 0)) }
	ew.printf("%s  %s  %s  %s\n", pad("figure", nameW), pad("A", aW), pad("B", bW), "B vs A")
	for _, r := range view.Rows {
		ew.printf("%s  %s  %s  %s\n", pad(r.Figure+" ("+r.Unit+")", nameW), pad(r.A, aW), pad(r.B, bW), r.Versus)
	}
	if len(view.Notes) > 0 {
		ew.printf("\n")
		for _, w := range view.Notes {
			ew.printf("note: %s\n", w)
		}
	}
	return ew.err
}
