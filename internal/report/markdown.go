package report

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"

	"github.com/loadlab/loadlab/internal/cost"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// md escapes text from a run (step names, URLs, messages) for a markdown
// table cell: no HTML, no table breaks, no emphasis or links by accident.
func md(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '|':
			b.WriteString(`\|`)
		case '\n', '\r':
			b.WriteByte(' ')
		case '\\', '`', '*', '_', '[', ']', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writePNGs draws the figures as PNG files named prefix-NAME.png in dir and
// returns their file names.
func writePNGs(dir, prefix string, fs []figure) ([]string, error) {
	var names []string
	for _, f := range fs {
		var b bytes.Buffer
		if err := f.Chart.PNG(&b, 900, 380); err != nil {
			continue
		}
		name := prefix + "-" + f.Name + ".png"
		if err := store.WriteFile(filepath.Join(dir, name), b.Bytes()); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// Markdown writes a run's report in markdown, fit for a pull-request
// comment or a CI job summary. When dir is not empty its charts are written
// there as PNG files and linked; otherwise the report has no charts.
func Markdown(w io.Writer, dir string, r *result.Result) error {
	return MarkdownFrom(w, dir, dir, r)
}

// MarkdownFrom is Markdown for a file that will be read from the directory
// from (the current one, for a report printed on stdout): the charts, in
// dir, are linked by their path from there.
func MarkdownFrom(w io.Writer, dir, from string, r *result.Result) error {
	ew := &errWriter{w: w}
	s := &r.Summary
	ew.printf("## %s\n\n", md(r.Name))
	ew.printf("%s load", md(r.Settings.Mode))
	if r.Settings.URL != "" {
		ew.printf(" · %s %s", md(r.Settings.Method), md(r.Settings.URL))
	}
	ew.printf(" · %d VUs/connections", r.Settings.Connections)
	if r.Settings.Duration > 0 {
		ew.printf(" · %s", r.Settings.Duration)
	}
	ew.printf(" · loadlab %s\n\n", md(r.Version))
	if n := PartNote(r); n != "" {
		ew.printf("%s.\n\n", md(strings.ToUpper(n[:1])+n[1:]))
	}
	for _, v := range r.Validity {
		ew.printf("> **Warning:** %s\n\n", md(v.Message))
	}
	ew.printf("| requests | throughput | errors | p50 | p95 | p99 | max |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	ew.printf("| %s | %s/s | %s (%.2f%%) | %s ms | %s ms | %s ms | %s ms |\n\n",
		count(s.Requests), rate(s.ThroughputRPS), count(s.Errors.Total), 100*s.ErrorRate, ms(s.Latency.P50), ms(s.Latency.P95), ms(s.Latency.P99), ms(s.Latency.Max))
	if d := DrainNote(s); d != "" {
		ew.printf("%s.\n\n", md(strings.ToUpper(d[:1])+d[1:]))
	}
	if m := r.Machine; m != nil {
		ew.printf("The machine during the load: %s.\n\n", md(MachineText(m)))
	}
	if len(r.Thresholds) > 0 {
		ew.printf("| threshold | verdict | measured |\n|---|---|---|\n")
		for _, t := range r.Thresholds {
			verdict := "pass"
			if !t.Pass {
				verdict = "**FAIL**"
			}
			ew.printf("| %s | %s | %s |\n", md(t.Text), verdict, md(t.Detail))
		}
		ew.printf("\n")
	}
	if len(r.Steps) > 1 || s.Checks.Passed+s.Checks.Failed > 0 {
		ew.printf("| step | requests | errors | checks | p50 ms | p95 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, st := range r.Steps {
			name := st.Name
			if st.Scenario != "default" {
				name = st.Scenario + " / " + name
			}
			c := st.Summary.Checks
			ew.printf("| %s | %s | %s | %s/%s | %s | %s | %s |\n", md(name), count(st.Summary.Requests), count(st.Summary.Errors.Total),
				count(c.Passed), count(c.Passed+c.Failed), ms(st.Summary.Latency.P50), ms(st.Summary.Latency.P95), ms(st.Summary.Latency.P99))
		}
		ew.printf("\n")
		if loads := scenarioLoads(r); len(loads) > 0 {
			ew.printf("| scenario | load | throughput | VUs busy | journeys | dropped | late | unsent | p95 ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, l := range loads {
				ew.printf("| %s | %s | %s/s | %s of %s | %s | %s | %s | %s | %s |\n", md(l.Name), md(l.Load), rate(l.Throughput), count(int64(l.Peak)), count(int64(l.VUs)),
					count(l.Iterations), count(l.Dropped), count(l.Late), count(l.Unsent), ms(l.Latency.P95))
			}
			ew.printf("\n")
		}
		for _, st := range r.Steps {
			if f := st.FailedCheck; f != nil {
				ew.printf("- First failed check of **%s**: %s; %s", md(stepName(st)), md(f.Check), md(failedAnswer(f, 160)))
				if f.File != "" {
					ew.printf(" (the whole response: `%s`)", f.File)
				}
				ew.printf("\n")
			}
		}
	}
	if sv := r.Server; sv != nil {
		ew.printf("**Server** %s: CPU %.0f%% of one core on average (peak %.0f%%); RSS average %s, peak %s; PSS peak %s; swap peak %s",
			md(sv.Command), sv.CPUAvg, sv.CPUPeak, bytesText(sv.RSSAvg), bytesText(sv.RSSPeak), bytesText(sv.PSSPeak), bytesText(sv.SwapPeak))
		if q := sv.Quota; q != nil {
			ew.printf("; quota %s: ", bytesText(q.Bytes))
			if q.PeakExceeded {
				ew.printf("**exceeded** at peak by %s", bytesText(q.PeakOver))
			} else {
				ew.printf("under it")
			}
		}
		ew.printf(".\n\n")
		if l := sv.Limits; l != nil {
			ew.printf("**Limits** %s; measured: %s.\n\n", md(limitsInForce(l)), md(limitsMeasured(l)))
		}
	}
	if dir != "" && ew.err == nil {
		names, err := writePNGs(dir, "report", runFigures(r))
		if err != nil {
			return err
		}
		for _, n := range names {
			ew.printf("![%s](%s)\n", strings.TrimSuffix(strings.TrimPrefix(n, "report-"), ".png"), link(dir, from, n))
		}
	}
	return ew.err
}

// ExperimentMarkdown writes an experiment's report in markdown, with its
// charts as PNG files in dir (none when dir is empty).
func ExperimentMarkdown(w io.Writer, dir string, o *experiment.Outcome) error {
	return ExperimentMarkdownFrom(w, dir, dir, o)
}

// ExperimentMarkdownFrom is ExperimentMarkdown read from the directory from
// (see MarkdownFrom).
func ExperimentMarkdownFrom(w io.Writer, dir, from string, o *experiment.Outcome) error {
	ew := &errWriter{w: w}
	ew.printf("## %s\n\n%s × %s · %s · seed %d\n\n", md(o.Name), plural(len(o.Points), "point"), plural(o.Repeat, "repeat"), md(o.Vary), o.Seed)
	v := Describe(o.Verdict)
	if v == nil {
		return ew.err
	}
	if v.Factor != "" {
		ew.printf("**Factor:** %s\n\n", md(v.Factor))
	}
	if !anyRunDone(o) {
		ew.printf("No runs done: no figures to show.\n")
		for _, r := range o.Runs {
			if r.Status == "failed" {
				ew.printf("- **Run %d (%s #%d) failed:** %s\n", r.Index, md(r.Point), r.Rep, md(firstLine(r.Error)))
			}
		}
		return ew.err
	}
	if v.Recommendation != "" {
		for _, line := range strings.Split(v.Recommendation, "\n") {
			ew.printf("> **%s**\n", md(line))
		}
		ew.printf("\n")
	}
	for _, s := range v.Sweeps {
		for _, line := range memoryLines(s) {
			ew.printf("- Memory against %s: %s\n", md(s.Param), md(line))
		}
	}
	if b := v.Boxes; b != nil {
		ew.printf("\n**Which box** (%s, by price; rate is %s):\n\n| box | best point | rate (req/s) | price per hour | per million requests |\n| --- | --- | --- | --- | --- |\n", md(b.Param), b.Basis)
		for _, f := range b.Boxes {
			ew.printf("| %s | %s | %s | %s | %s |\n", md(f.Box), md(f.Point), cost.Rate(f.Rate), md(cost.Money(f.PricePerHour)), md(cost.Money(f.PerMillion)))
		}
		ew.printf("\n")
		for _, line := range boxLines(b) {
			ew.printf("- %s\n", md(line))
		}
		ew.printf("\n")
	}
	for _, line := range v.Noise {
		ew.printf("- %s\n", md(line))
	}
	if len(v.Noise) > 0 {
		ew.printf("\n")
	}
	for _, t := range v.Thresholds {
		ew.printf("- **Threshold failed:** %s\n", md(t))
	}
	for _, t := range v.Passed {
		ew.printf("- Threshold passed: %s\n", md(t))
	}
	for _, w := range v.Validity {
		ew.printf("- **Suspect runs:** %s\n", md(w))
	}
	for _, w := range v.Warnings {
		ew.printf("- %s\n", md(w))
	}
	if len(v.Warnings)+len(v.Thresholds)+len(v.Passed)+len(v.Validity) > 0 {
		ew.printf("\n")
	}
	if dir != "" && ew.err == nil {
		names, err := writePNGs(dir, "report", sweepFigures(o))
		if err != nil {
			return err
		}
		for _, n := range names {
			ew.printf("![%s](%s)\n", strings.TrimSuffix(strings.TrimPrefix(n, "report-"), ".png"), link(dir, from, n))
		}
		if len(names) > 0 {
			ew.printf("\n")
		}
	}
	mdFigureTables(ew, v.Figures, "", v.Against)
	for _, parts := range []struct {
		kind, heading string
		parts         []experiment.PartVerdict
	}{{"step", "By step", v.Steps}, {"scenario", "By scenario", v.Scenarios}} {
		if len(parts.parts) == 0 {
			continue
		}
		ew.printf("### %s\n\nEach %s's own figures in every run, compared as the whole run's are.\n\n", parts.heading, parts.kind)
		for _, p := range parts.parts {
			mdFigureTables(ew, p.Figures, parts.kind+" "+p.Name+": ", v.Against)
		}
	}
	return ew.err
}

// mdFigureTables writes one table a figure, its heading after prefix.
func mdFigureTables(ew *errWriter, tables []experiment.FigureTable, prefix, against string) {
	for _, t := range tables {
		ew.printf("| %s%s (%s) | %s | vs %s |\n|---|---:|---|\n", md(prefix), md(t.Name), md(t.Unit), cellHeading(t), md(against))
		for _, row := range t.Rows {
			name := md(row.Point)
			if row.Baseline {
				name += " (baseline)"
			}
			versus := md(row.Versus)
			if row.Significant {
				versus = "**" + versus + "**"
			}
			ew.printf("| %s | %s | %s |\n", name, md(strings.TrimSpace(row.Cell)), versus)
		}
		ew.printf("\n")
	}
}

func bytesText(n int64) string { return md(formatBytes(n)) }

var formatBytes = quantity.FormatBytes

// link is the path of file name in dir as seen from the directory from.
func link(dir, from, name string) string {
	if from == dir {
		return name
	}
	absFrom, err1 := filepath.Abs(from)
	absFile, err2 := filepath.Abs(filepath.Join(dir, name))
	if rel, err := filepath.Rel(absFrom, absFile); err == nil && err1 == nil && err2 == nil {
		return filepath.ToSlash(rel)
	}
	return name
}

// anyRunDone reports whether some run of o is done: without one a verdict
// has no figures to show.
func anyRunDone(o *experiment.Outcome) bool {
	for _, r := range o.Runs {
		if r.Status == "done" {
			return true
		}
	}
	return false
}
