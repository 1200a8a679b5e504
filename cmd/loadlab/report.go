package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
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
	var failures, asJSON bool
	var allowDifferent allowFlag
	var summary summaryFlag
	c := &cobra.Command{
		Use:   "report RESULT [OTHER]",
		Short: "Render a stored result or experiment again, or compare two",
		Long: `Render a stored run (its directory or result.json), an experiment (its
results directory) or a capacity search (its directory, with capacity.json)
again, on stdout, as text, json, html, md or csv. Markdown
writes its PNG charts into the result's directory and links them. CSV gives
one table: a run's steps or its per-second series, an experiment's runs or
its points (--table).

With two arguments, compare them (as loadlab compare does, without rules),
in any of the formats. Two inputs that measured different things (load,
requests, target, server) are refused, each difference listed, unless
--allow-different: then the differences head the output (on stderr with
--format csv).

With --failures, print the failing responses the run kept (the first of
each step: status line, headers, the body up to 256 KiB, secrets masked;
failures/STEP.http in the run's directory), or those of every run of an
experiment.`,
		Example: `  loadlab report results/run1
  loadlab report results/sweep --format html > sweep.html
  loadlab report results/sweep --format csv --table points > points.csv
  loadlab report results/main results/branch --format md >> "$GITHUB_STEP_SUMMARY"
  loadlab report results/run1 --failures`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				if c.Flags().Changed("format") && format != "json" {
					return usageError(errors.New("report: give --json or --format, not both"))
				}
				format = "json"
			}
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
			case failures && (len(args) == 2 || c.Flags().Changed("format") || asJSON || table != ""):
				return usageError(errors.New("report: --failures prints the failing responses of one run or experiment, as they are kept: no second argument, --format or --table"))
			}
			out := io.out
			if failures {
				return printFailures(out, args[0])
			}
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
			if report.IsCapacity(dir) {
				return renderCapacity(out, dir, format, table)
			}
			if experiment.IsExperiment(dir) {
				o, err := experiment.LoadOutcome(dir)
				if err != nil {
					return usageError(fmt.Errorf("report: %w", err))
				}
				return render(format, map[string]func() error{
					"text": func() error {
						if summary.full() {
							return report.Verdict(out, o)
						}
						return report.CompactVerdict(out, o, dir)
					},
					"json": func() error { return experimentJSON(out, o) },
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
	c.Flags().BoolVar(&asJSON, "json", false, "the same as --format json")
	c.Flags().StringVar(&table, "table", "", "with --format csv: steps (default) or series of a run; runs (default) or points of an experiment")
	c.Flags().BoolVar(&failures, "failures", false, "print the failing responses kept (failures/STEP.http), the first of each step, of the run or of every run of the experiment")
	c.Flags().Var(&summary, "summary", summaryUsage)
	allowDifferent.register(c.Flags(), "with two inputs: compare them even when they measured different things; the differences head the output; =port (or another field, comma-separated) allows only those")
	c.Flags().StringVar(&pointA, "point-a", "", "with two experiments: the point of the first (default: its baseline)")
	c.Flags().StringVar(&pointB, "point-b", "", "with two experiments: the point of the second (default: its baseline)")
	return c
}

// renderCapacity renders a capacity search's directory again: text as the
// search printed it, its capacity.json, report.html, report.md (PNG charts
// written into dir) or its steps as CSV.
func renderCapacity(out goio.Writer, dir, format, table string) error {
	c, err := report.ReadCapacity(dir)
	if err != nil {
		return usageError(fmt.Errorf("report: %w", err))
	}
	if table != "" && table != "steps" {
		return usageError(fmt.Errorf("report: a capacity search's --table is steps, not %q", table))
	}
	return render(format, map[string]func() error{
		"text": func() error { return c.Doc.WriteText(out) },
		"json": func() error {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(c.Doc)
		},
		"html": func() error { return report.CapacityHTML(out, c) },
		"md":   func() error { return report.CapacityMarkdown(out, dir, ".", c) },
		"csv":  func() error { return report.CapacityCSV(out, c) },
	}, "--format")
}

// printFailures prints the failing responses a run kept, or those of every
// run of an experiment, each after a line that says whose it is.
func printFailures(out goio.Writer, dir string) error {
	type run struct {
		dir, title string
		r          *result.Result
	}
	var runs []run
	if experiment.IsExperiment(dir) {
		o, err := experiment.LoadOutcome(dir)
		if err != nil {
			return usageError(fmt.Errorf("report: %w", err))
		}
		for i, r := range o.Results() {
			if r != nil && i < len(o.Runs) {
				info := o.Runs[i]
				runs = append(runs, run{filepath.Join(dir, info.Dir), fmt.Sprintf("run %d (%s)", info.Index, info.Point), r})
			}
		}
	} else {
		r, err := store.ReadResult(dir)
		if err != nil {
			return usageError(fmt.Errorf("report: %w", err))
		}
		if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
			dir = filepath.Dir(dir)
		}
		runs = append(runs, run{dir, "", r})
	}
	printed := 0
	for _, rn := range runs {
		for _, st := range rn.r.Steps {
			f := st.FailedCheck
			if f == nil {
				continue
			}
			title := "step " + stepTitle(st)
			if rn.title != "" {
				title = rn.title + ", " + title
			}
			if printed > 0 {
				fmt.Fprintln(out)
			}
			printed++
			if f.File == "" {
				what := "no response"
				if f.Status != 0 {
					what = fmt.Sprintf("status %d", f.Status)
				}
				if f.Error != "" {
					what += ": " + f.Error
				}
				fmt.Fprintf(out, "== %s: %s failed; %s, nothing kept\n", title, f.Check, what)
				continue
			}
			path := filepath.Join(rn.dir, filepath.FromSlash(f.File))
			data, err := os.ReadFile(path)
			if err != nil {
				return failedError(fmt.Errorf("report: %s: %w", title, err))
			}
			fmt.Fprintf(out, "== %s: %s failed; %s\n", title, f.Check, path)
			if _, err := out.Write(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))); err != nil {
				return failedError(fmt.Errorf("report: %w", err))
			}
			if len(data) > 0 && data[len(data)-1] != '\n' {
				fmt.Fprintln(out)
			}
		}
	}
	if printed == 0 {
		_, err := fmt.Fprintf(out, "no failed checks in %s\n", dir)
		return err
	}
	return nil
}

func stepTitle(st result.Step) string {
	if st.Scenario != "" && st.Scenario != "default" {
		return st.Scenario + " / " + st.Name
	}
	return st.Name
}

// experimentJSON writes an experiment's outcome as JSON, its verdict
// described as the summary says it: what report DIR --json and run PLAN
// --json print.
func experimentJSON(w goio.Writer, o *experiment.Outcome) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	described := *o
	described.Verdict = report.Describe(o.Verdict)
	return enc.Encode(&described)
}
