package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/store"
)

func newReportCommand(io *stdio) *cobra.Command {
	var format, table, pointA, pointB string
	c := &cobra.Command{
		Use:   "report RESULT [OTHER]",
		Short: "Render a stored result or experiment again, or compare two",
		Long: `Render a stored run (its directory or result.json) or an experiment (its
results directory) again, on stdout, as text, json, html, md or csv. Markdown
writes its PNG charts into the result's directory and links them. CSV gives
one table: a run's steps or its per-second series, an experiment's runs or
its points (--table).

With two arguments, compare them (as loadlab compare does, without rules),
in any of the formats.`,
		Example: `  loadlab report results/run1
  loadlab report results/sweep --format html > sweep.html
  loadlab report results/sweep --format csv --table points > points.csv
  loadlab report results/main results/branch --format md >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
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
				switch format {
				case "text":
					return report.Comparison(io.out, cmp)
				case "json":
					return report.ComparisonJSON(io.out, cmp)
				case "html":
					return report.ComparisonHTML(io.out, cmp)
				case "md":
					return report.ComparisonMarkdown(io.out, cmp)
				case "csv":
					return report.ComparisonCSV(io.out, cmp)
				}
				return usageError(fmt.Errorf("report: unknown --format %q: want text, json, html, md or csv", format))
			}
			dir := args[0]
			if experiment.IsExperiment(dir) {
				o, err := experiment.LoadOutcome(dir)
				if err != nil {
					return usageError(fmt.Errorf("report: %w", err))
				}
				switch format {
				case "text":
					return report.Verdict(io.out, o)
				case "json":
					enc := json.NewEncoder(io.out)
					enc.SetIndent("", "  ")
					return enc.Encode(o)
				case "html":
					return report.ExperimentHTML(io.out, o)
				case "md":
					return report.ExperimentMarkdown(io.out, dir, o)
				case "csv":
					switch table {
					case "", "runs":
						return report.RunsCSV(io.out, o)
					case "points":
						return report.PointsCSV(io.out, o)
					}
					return usageError(fmt.Errorf("report: an experiment's --table is runs or points, not %q", table))
				}
				return usageError(fmt.Errorf("report: unknown --format %q: want text, json, html, md or csv", format))
			}
			r, err := store.ReadResult(dir)
			if err != nil {
				return usageError(fmt.Errorf("report: %w", err))
			}
			if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
				dir = filepath.Dir(dir)
			}
			switch format {
			case "text":
				return report.Text(io.out, r)
			case "json":
				return report.JSON(io.out, r)
			case "html":
				return report.HTML(io.out, r)
			case "md":
				return report.Markdown(io.out, dir, r)
			case "csv":
				switch table {
				case "", "steps":
					return report.StepsCSV(io.out, r)
				case "series":
					return report.SeriesCSV(io.out, r)
				}
				return usageError(fmt.Errorf("report: a run's --table is steps or series, not %q", table))
			}
			return usageError(fmt.Errorf("report: unknown --format %q: want text, json, html, md or csv", format))
		},
	}
	c.Flags().StringVar(&format, "format", "text", "text, json, html, md or csv")
	c.Flags().StringVar(&table, "table", "", "with --format csv: steps (default) or series of a run; runs (default) or points of an experiment")
	c.Flags().StringVar(&pointA, "point-a", "", "with two experiments: the point of the first (default: its baseline)")
	c.Flags().StringVar(&pointB, "point-b", "", "with two experiments: the point of the second (default: its baseline)")
	return c
}
