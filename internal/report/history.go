package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/loadlab/loadlab/internal/chart"
	"github.com/loadlab/loadlab/internal/history"
)

// historyRow is one commit's line in every history format.
type historyRow struct {
	I                          int
	Commit, Branch, When, Note string
	N                          int
	Median, Range              string
}

func shortCommit(c history.CommitRuns) string {
	s := c.Commit
	if len(s) > 10 {
		s = s[:10]
	}
	if s == "" {
		s = "(no git)"
	}
	if c.Dirty {
		s += "+dirty"
	}
	return s
}

// changeText is a change point in words: "p95 latency +31% (20.1 → 26.3 ms) at c0ffee1234, p=0.005: worse".
func changeText(t *history.Trend, c history.Change) string {
	way := "better"
	if c.Worse {
		way = "worse"
	}
	return fmt.Sprintf("%s %+.0f%% (%s → %s %s) from commit %s, p=%.3f: %s", t.Name, 100*c.Delta,
		number(c.Before), number(c.After), t.Unit, shortCommit(t.Commits[c.At]), c.P, way)
}

func historyRows(t *history.Trend) []historyRow {
	notes := map[int][]string{}
	for _, c := range t.Changes {
		notes[c.At] = append(notes[c.At], fmt.Sprintf("◀ change %+.0f%%", 100*c.Delta))
	}
	rows := make([]historyRow, len(t.Commits))
	for i, c := range t.Commits {
		if c.PlanChanged {
			notes[i] = append(notes[i], "plan changed")
		}
		rows[i] = historyRow{I: i + 1, Commit: shortCommit(c), Branch: c.Branch, When: c.Time.UTC().Format("2006-01-02 15:04"),
			N: len(c.Values), Median: number(c.Median), Range: number(c.Min) + " – " + number(c.Max), Note: strings.Join(notes[i], ", ")}
	}
	return rows
}

func runsIn(t *history.Trend) int {
	n := 0
	for _, c := range t.Commits {
		n += len(c.Values)
	}
	return n
}

// HistoryText writes a figure's trend across commits for the terminal.
func HistoryText(w io.Writer, t *history.Trend) error {
	ew := &errWriter{w: w}
	ew.printf("%s%s: %s (%s), %d runs at %d commits", t.Plan, pointText(t.Point), t.Name, t.Unit, runsIn(t), len(t.Commits))
	if t.Skipped > 0 {
		ew.printf(" (%d without the figure left out)", t.Skipped)
	}
	ew.printf("\n\n")
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tcommit\tbranch\tended\truns\tmedian\tmin – max\t")
	for _, r := range historyRows(t) {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.I, r.Commit, r.Branch, r.When, r.N, r.Median, r.Range, r.Note)
	}
	tw.Flush()
	for _, line := range strings.Split(strings.TrimRight(tb.String(), "\n"), "\n") {
		ew.printf("%s\n", strings.TrimRight(line, " "))
	}
	ew.printf("\n")
	if len(t.Changes) == 0 {
		ew.printf("No change point: the runs are one distribution as far as %s can tell.\n", "E-divisive means")
	}
	for _, c := range t.Changes {
		ew.printf("Change: %s\n", changeText(t, c))
	}
	ew.printf("Method: %s.\n", t.Method)
	return ew.err
}

func pointText(p string) string {
	if p == "" {
		return ""
	}
	return " at " + p
}

// HistoryJSON writes the trend as JSON (schema loadlab.history/v1).
func HistoryJSON(w io.Writer, t *history.Trend) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// HistoryPlansJSON lists the plans of a history database (schema
// loadlab.history-plans/v1), the latest run first.
func HistoryPlansJSON(w io.Writer, path string, plans []history.PlanCount) error {
	if plans == nil {
		plans = []history.PlanCount{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema string              `json:"schema"`
		Path   string              `json:"path"`
		Plans  []history.PlanCount `json:"plans"`
	}{"loadlab.history-plans/v1", path, plans})
}

// Counted writes a count of things: "1 run", "5 runs".
func Counted(n int, thing string) string { return counted(int64(n), thing) }

// HistoryCSV writes one line per run: the commit group, the commit, and the value.
func HistoryCSV(w io.Writer, t *history.Trend) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"group", "commit", "branch", "dirty", "ended", "plan_hash", t.Figure, "change"})
	changed := map[int]string{}
	for _, c := range t.Changes {
		changed[c.At] = strconv.FormatFloat(c.Delta, 'g', 4, 64)
	}
	for i, c := range t.Commits {
		for j, v := range c.Values {
			ch := ""
			if j == 0 {
				ch = changed[i]
			}
			cw.Write([]string{strconv.Itoa(i + 1), csvCell(c.Commit), csvCell(c.Branch), strconv.FormatBool(c.Dirty),
				c.Time.UTC().Format("2006-01-02T15:04:05Z"), c.PlanHash, strconv.FormatFloat(v, 'g', -1, 64), ch})
		}
	}
	cw.Flush()
	return cw.Error()
}

// HistoryMarkdown writes the trend as markdown, with a Mermaid xychart-beta
// chart, which GitHub renders (in job summaries too, where local PNGs do
// not show).
func HistoryMarkdown(w io.Writer, t *history.Trend) error {
	ew := &errWriter{w: w}
	ew.printf("## History of %s%s: %s (%s)\n\n", md(t.Plan), md(pointText(t.Point)), md(t.Name), md(t.Unit))
	if len(t.Commits) > 1 {
		var labels, medians []string
		for i := range t.Commits {
			labels = append(labels, strconv.Quote(strconv.Itoa(i+1)))
			medians = append(medians, number(t.Commits[i].Median))
		}
		ew.printf("```mermaid\nxychart-beta\n    title \"%s (%s), median per commit\"\n    x-axis [%s]\n    y-axis \"%s\"\n    line [%s]\n```\n\n",
			mermaidText(t.Name), mermaidText(t.Unit), strings.Join(labels, ", "), mermaidText(t.Unit), strings.Join(medians, ", "))
	}
	for _, c := range t.Changes {
		ew.printf("- **Change:** %s\n", md(changeText(t, c)))
	}
	if len(t.Changes) > 0 {
		ew.printf("\n")
	}
	ew.printf("| # | commit | branch | ended | runs | median | min – max | |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range historyRows(t) {
		ew.printf("| %d | `%s` | %s | %s | %d | %s | %s | %s |\n", r.I, r.Commit, md(r.Branch), r.When, r.N, r.Median, r.Range, md(r.Note))
	}
	ew.printf("\nChange points: %s.\n", md(t.Method))
	return ew.err
}

// mermaidText keeps a label inside Mermaid's double quotes.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "'", "\n", " ").Replace(s)
}

// HistoryHTML writes the trend as one self-contained page: the chart of the
// medians per commit with the runs' spread and the change points marked,
// and the table.
func HistoryHTML(w io.Writer, t *history.Trend) error {
	c := &chart.Chart{Title: fmt.Sprintf("%s across commits", t.Name), XLabel: "commit", YLabel: t.Unit, YMin0: true}
	s := chart.Series{Name: "median of the runs"}
	for i, cr := range t.Commits {
		c.XLabels = append(c.XLabels, strconv.Itoa(i+1))
		s.X, s.Y = append(s.X, float64(i)), append(s.Y, cr.Median)
		s.Lo, s.Hi = append(s.Lo, cr.Min), append(s.Hi, cr.Max)
	}
	c.Series = []chart.Series{s}
	for _, ch := range t.Changes {
		c.Marks = append(c.Marks, chart.Mark{X: float64(ch.At), Label: fmt.Sprintf("%+.0f%%", 100*ch.Delta)})
	}
	var svgBuf bytes.Buffer
	view := struct {
		T       *history.Trend
		Runs    int
		Chart   template.HTML
		Changes []string
		Rows    []historyRow
	}{T: t, Runs: runsIn(t), Rows: historyRows(t)}
	if len(t.Commits) > 1 {
		if err := c.SVG(&svgBuf, 720, 300); err != nil {
			view.Chart = template.HTML(`<p class="note">` + template.HTMLEscapeString(c.Title+": "+err.Error()) + `</p>`)
		} else {
			view.Chart = template.HTML(svgBuf.String())
		}
	}
	for _, ch := range t.Changes {
		view.Changes = append(view.Changes, "Change: "+changeText(t, ch))
	}
	return pages().ExecuteTemplate(w, "history.html", view)
}
