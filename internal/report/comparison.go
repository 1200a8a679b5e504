package report

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
)

// comparisonJSON is a comparison as JSON: the two sides and each figure.
type comparisonJSON struct {
	A sideJSON `json:"a"`
	B sideJSON `json:"b"`
	// Likeness is the header's text on whether A and B measured the same
	// thing (Likeness); Differences the same as data, and SamePlan whether
	// they are points of one plan; Unchecked the sides without a
	// fingerprint.
	Likeness    []string                `json:"likeness,omitempty"`
	Differences []experiment.Difference `json:"differences,omitempty"`
	SamePlan    bool                    `json:"same_plan,omitempty"`
	Unchecked   []string                `json:"unchecked,omitempty"`

	Rows  []rowJSON `json:"figures"`
	Notes []string  `json:"notes,omitempty"`
}

type sideJSON struct {
	Label string `json:"label"`
	Runs  int    `json:"runs"`
}

type rowJSON struct {
	Figure      string  `json:"figure"`
	Key         string  `json:"key"` // the figure's ID, the name --fail-on uses
	Unit        string  `json:"unit"`
	Higher      bool    `json:"higher_is_better"`
	A           string  `json:"a"`
	B           string  `json:"b"`
	MedianA     float64 `json:"median_a"`
	MedianB     float64 `json:"median_b"`
	Delta       float64 `json:"delta"`
	P           float64 `json:"p"`
	Significant bool    `json:"significant"`
	Testable    bool    `json:"testable"`
	Versus      string  `json:"versus"`
	// Change is the comparison as data: its status, why it is untested,
	// p, the smallest p the numbers of runs can give, n1, n2, delta.
	Change experiment.Change `json:"change"`
}

func comparisonView(c *experiment.Comparison) comparisonJSON {
	out := comparisonJSON{
		A:        sideJSON{c.A.Label, len(c.A.Results)},
		B:        sideJSON{c.B.Label, len(c.B.Results)},
		Notes:    comparisonNotes(c),
		Likeness: Likeness(c), Differences: c.Differences, SamePlan: c.SamePlan, Unchecked: c.Unchecked,
	}
	for _, r := range c.Rows {
		ch := r.Change
		out.Rows = append(out.Rows, rowJSON{r.Figure, string(r.ID), r.Unit, r.Higher, cell(r.A), cell(r.B), r.A.Median, r.B.Median, ch.Delta, ch.P,
			ch.Significant(), ch.Reason != experiment.TooFewRuns, versus(&ch), ch})
	}
	return out
}

// ComparisonJSON writes a comparison as JSON.
func ComparisonJSON(w io.Writer, c *experiment.Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(comparisonView(c))
}

// ComparisonMarkdown writes a comparison as a markdown table, for a pull
// request or a CI job summary.
func ComparisonMarkdown(w io.Writer, c *experiment.Comparison) error {
	ew := &errWriter{w: w}
	ew.printf("**A:** %s (%s)  \n**B:** %s (%s)\n\n", md(c.A.Label), plural(len(c.A.Results), "run"), md(c.B.Label), plural(len(c.B.Results), "run"))
	view := comparisonView(c)
	if len(view.Likeness) > 0 {
		for i, l := range view.Likeness {
			if item, ok := strings.CutPrefix(l, "  "); ok {
				ew.printf("- %s\n", md(item)) // a field that differs
				continue
			}
			if i > 0 {
				ew.printf("\n")
			}
			ew.printf("%s\n\n", md(l))
		}
		ew.printf("\n")
	}
	ew.printf("| figure | A | B | B vs A |\n|---|---:|---:|---|\n")
	for _, r := range view.Rows {
		versus := md(r.Versus)
		if r.Significant {
			versus = "**" + versus + "**"
		}
		ew.printf("| %s (%s) | %s | %s | %s |\n", md(r.Figure), md(r.Unit), md(r.A), md(r.B), versus)
	}
	if len(view.Notes) > 0 {
		ew.printf("\n")
		for _, n := range view.Notes {
			ew.printf("- %s\n", md(n))
		}
	}
	return ew.err
}

// ComparisonHTML writes a comparison as a self-contained page.
func ComparisonHTML(w io.Writer, c *experiment.Comparison) error {
	return pages().ExecuteTemplate(w, "comparison.html", struct {
		C comparisonJSON
	}{comparisonView(c)})
}

// ComparisonCSV writes a comparison's figures as CSV.
func ComparisonCSV(w io.Writer, c *experiment.Comparison) error {
	cw := newCSV(w)
	cw.Write([]string{"figure", "unit", "runs_a", "runs_b", "median_a", "median_b", "delta", "p", "significant", "testable", "id", "status", "reason", "min_p"})
	for _, r := range c.Rows {
		ch := r.Change
		cw.Write([]string{r.Figure, r.Unit, strconv.Itoa(r.A.N), strconv.Itoa(r.B.N), f(r.A.Median), f(r.B.Median), f(ch.Delta), f(ch.P), strconv.FormatBool(ch.Significant()),
			strconv.FormatBool(ch.Reason != experiment.TooFewRuns), string(r.ID), string(ch.Status), string(ch.Reason), f(ch.MinP)})
	}
	cw.Flush()
	return cw.Error()
}
