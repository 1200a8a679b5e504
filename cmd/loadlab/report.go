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
	var format, pointA, pointB string
	c := &cobra.Command{
		Use:   "report RESULT [OTHER]",
		Short: "Render a stored result or experiment again, or compare two",
		Long: `Render a stored run (its directory or result.json) or an experiment (its
results directory) again, on stdout, as text, json, html, md or csv. Markdown
writes its PNG charts into the result's directory and links them.

With two arguments, compare them (as loadlab compare does, without rules).`,
		Example: `  loadlab report results/run1
  loadlab report results/sweep --format html > sweep.html
  loadlab report results/main results/branch`,
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
				return report.Comparison(io.out, experiment.Compare(a, b))
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
					return report.RunsCSV(io.out, o)
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
				return report.StepsCSV(io.out, r)
			}
			return usageError(fmt.Errorf("report: unknown --format %q: want text, json, html, md or csv", format))
		},
	}
	c.Flags().StringVar(&format, "format", "text", "text, json, html, md or csv")
	c.Flags().StringVar(&pointA, "point-a", "", "with two experiments: the point of the first (default: its baseline)")
	c.Flags().StringVar(&pointB, "point-b", "", "with two experiments: the point of the second (default: its baseline)")
	return c
}
