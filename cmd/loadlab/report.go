package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/store"
)

// formats are what `loadlab report` renders.
var formats = []string{"text", "json", "html", "md", "csv"}

// render runs the renderer chosen by name; an unknown name is bad input,
// and want says what is known.
func render(name string, by map[string]func() error, want string) error {
	if f, ok := by[name]; ok {
		return f()
	}
	return usageError(fmt.Errorf("report: %s, not %q", want, name))
}

func newReportCommand(io *stdio) *cobra.Command {
	var format, table, pointA, pointB string
	var allowDifferent bool
	c := &cobra.Command{
		Use:   "report RESULT [OTHER]",
		Short: "Render a stored result or experiment again, or compare two",
		Long: `Render a stored run (its directory or result.json) or an experiment (its
results directory) again, on stdout, as text, json, html, md or csv. Markdown
writes its PNG charts into the result's directory and links them. CSV gives
one table: a run's steps or its per-second series, an experiment's runs or
its points (--table).

With two arguments, compare them (as loadlab compare does, without rules),
in any of the formats. Two inputs that measured different things (load,
requests, target, server) are refused, each difference listed, unless
--allow-different: then the differences head the output (on stderr with
--format csv).`,
		Example: `  loadlab report results/run1
  loadlab report results/sweep --format html > sweep.html
  loadlab report results/sweep --format csv --table points > points.csv
  loadlab report results/main results/branch --format md >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			if !slices.Contains(formats, format) {
				return usageError(fmt.Errorf("report: unknown --format %q: want %s", format, strings.Join(formats, ", ")))
			}
			switch {
			case table != "" && format != "csv":
				return usageError(errors.New("report: --table picks one of the CSV tables; add --format csv"))
			case table != "" && len(args) == 2:
				return usageError(errors.New("report: a comparison has one CSV table; drop --table"))
			case (pointA != "" || pointB != "") && len(args) != 2:
				return usageError(errors.New("report: --point-a and --point-b pick the points of two experiments compared (loadlab report A B)"))
			}
			out := io.out
			if len(args) == 2 {
				a, err := experiment.LoadSide(args[0], pointA)
				if err != nil {
					return usageError(fmt.Errorf("report: %w", err))
				}
				b, err := experiment.LoadSide(args[1], pointB)
				if err != nil {
					return usageError(fmt.Errorf("report: %w", err))
				}
				cmp := experiment.Compare(a, b)
				if err := refuseUnlike(cmp, allowDifferent, "report"); err != nil {
					return err
				}
				if format == "csv" {
					// A CSV file has one table: the header goes to stderr.
					for _, l := range report.Likeness(cmp) {
						fmt.Fprintln(io.err, l)
					}
				}
				return render(format, map[string]func() error{
					"text": func() error { return report.Comparison(out, cmp) },
					"json": func() error { return report.ComparisonJSON(out, cmp) },
					"html": func() error { return report.ComparisonHTML(out, cmp) },
					"md":   func() error { return report.ComparisonMarkdown(out, cmp) },
					"csv":  func() error { return report.ComparisonCSV(out, cmp) },
				}, "--format")
			}
			dir := args[0]
			if experiment.IsExperiment(dir) {
				o, err := experiment.LoadOutcome(dir)
				if err != nil {
					return usageError(fmt.Errorf("report: %w", err))
				}
				return render(format, map[string]func() error{
					"text": func() error { return report.Verdict(out, o) },
					"json": func() error {
						enc := json.NewEncoder(out)
						enc.SetIndent("", "  ")
						described := *o
						described.Verdict = report.Describe(o.Verdict)
						return enc.Encode(&described)
					},
					"html": func() error { return report.ExperimentHTML(out, o) },
					"md":   func() error { return report.ExperimentMarkdownFrom(out, dir, ".", o) },
					"csv": func() error {
						return render(table, map[string]func() error{
							"":       func() error { return report.RunsCSV(out, o) },
							"runs":   func() error { return report.RunsCSV(out, o) },
							"points": func() error { return report.PointsCSV(out, o) },
						}, "an experiment's --table is runs or points")
					},
				}, "--format")
			}
			r, err := store.ReadResult(dir)
			if err != nil {
				return usageError(fmt.Errorf("report: %w", err))
			}
			if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
				dir = filepath.Dir(dir)
			}
			return render(format, map[string]func() error{
				"text": func() error { return report.Text(out, r) },
				"json": func() error { return report.JSON(out, r) },
				"html": func() error { return report.HTML(out, r) },
				"md":   func() error { return report.MarkdownFrom(out, dir, ".", r) },
				"csv": func() error {
					return render(table, map[string]func() error{
						"":       func() error { return report.StepsCSV(out, r) },
						"steps":  func() error { return report.StepsCSV(out, r) },
						"series": func() error { return report.SeriesCSV(out, r) },
					}, "a run's --table is steps or series")
				},
			}, "--format")
		},
	}
	c.Flags().StringVar(&format, "format", "text", "text, json, html, md or csv")
	c.Flags().StringVar(&table, "table", "", "with --format csv: steps (default) or series of a run; runs (default) or points of an experiment")
	c.Flags().BoolVar(&allowDifferent, "allow-different", false, "with two inputs: compare them even when they measured different things; the differences head the output")
	c.Flags().StringVar(&pointA, "point-a", "", "with two experiments: the point of the first (default: its baseline)")
	c.Flags().StringVar(&pointB, "point-b", "", "with two experiments: the point of the second (default: its baseline)")
	return c
}
