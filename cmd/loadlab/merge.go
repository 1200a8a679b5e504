package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/merge"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/store"
)

func newMergeCommand(io *stdio) *cobra.Command {
	var out string
	var asJSON, partial bool
	c := &cobra.Command{
		Use:   "merge PART... [--out DIR]",
		Short: "Merge the results of a plan's execution segments into one",
		Long: `Merge the results of loadlab run PLAN --segment K/N, one for each K (each a
run directory or its result.json), into the one result a single machine
running the whole plan would have measured: histograms merged losslessly,
counters summed, the per-second series aligned on wall-clock seconds, the
plan's thresholds evaluated again on the merged figures, and each part's
validity warnings kept, said of its segment ("segment 3 of 8: ...").

Parts of different plans, parts that overlap or leave a segment out, and
runs of an experiment are refused (exit 2); --partial merges some of the
segments, to merge with the others later. Merged results merge again:
merging merges of parts equals merging all the parts. loadlab report and
loadlab compare read a merged result as any other.`,
		Example: `  loadlab merge part1 part2 part3 part4 --out results/merged
  loadlab report results/merged --format html > merged.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var parts []merge.Part
			for _, a := range args {
				if _, err := os.Stat(filepath.Join(a, "experiment.json")); err == nil {
					return usageError(fmt.Errorf("merge: %s is an experiment: merge takes the parts of one plan's run made with --segment", a))
				}
				r, err := store.ReadResult(a)
				if err != nil {
					return usageError(fmt.Errorf("merge: %w", err))
				}
				parts = append(parts, merge.Part{Name: a, Result: r})
			}
			res, err := merge.Results(parts, merge.Options{Partial: partial})
			if err != nil {
				return usageError(fmt.Errorf("merge: %w", err))
			}
			if out != "" {
				if err := store.CheckWritable(out); err != nil {
					return usageError(fmt.Errorf("merge: --out: %w", err))
				}
				if err := store.WriteResult(out, res); err != nil {
					return failedError(fmt.Errorf("merge: %w", err))
				}
				if err := report.WriteRunFiles(out, res); err != nil {
					return failedError(fmt.Errorf("merge: %s is written, but %w", filepath.Join(out, store.ResultFile), err))
				}
			}
			if asJSON {
				err = report.JSON(io.out, res)
			} else {
				err = report.Text(io.out, res)
			}
			if err != nil {
				return failedError(fmt.Errorf("merge: writing the summary: %w", err))
			}
			if n := runner.ThresholdsFailed(res); n > 0 {
				return thresholdError(fmt.Errorf("merge: %d of %d thresholds failed on the merged result", n, len(res.Thresholds)))
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "write the merged result.json and its reports into this directory")
	c.Flags().BoolVar(&partial, "partial", false, "merge only some of the segments, to merge the result with the others' later (it warns: partial_merge)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON (schema loadlab.summary/v1)")
	return c
}
