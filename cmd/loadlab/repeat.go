package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// repeatOr runs one once, or --repeat times (runRepeated).
func repeatOr(ctx context.Context, io *stdio, f *quickFlags, one func(*quickFlags) error) error {
	if f.repeat > 1 {
		return runRepeated(ctx, io, f, one)
	}
	return one(f)
}

// runRepeated runs a quick run or a plan --repeat times, one after the
// other, each into DIR/runs/NNN/, and prints one line a run and the set's
// medians: a result set that compare reads as one side of N runs, as
// benchstat reads N runs a side. one runs once with the flags given; its
// summary is left out (f.quiet) and its result handed to f.collect.
func runRepeated(ctx context.Context, io *stdio, f *quickFlags, one func(*quickFlags) error) error {
	switch {
	case f.out == "":
		return usageError(fmt.Errorf("run: --repeat %d keeps %d results to compare: give --out DIR (each run goes to DIR/runs/NNN)", f.repeat, f.repeat))
	case f.dashboard != "" || f.open || f.metricsAddr != "" || len(f.outputs) > 0:
		return usageError(errors.New("run: --repeat makes several runs, and --dashboard, --metrics-addr and --push follow one: give them without --repeat"))
	case f.segment != "" || f.startAt != "":
		return usageError(errors.New("run: --repeat does not go with --segment or --start-at: a segment is one part of one run"))
	case f.junit != "":
		return usageError(errors.New("run: --repeat does not go with --junit: loadlab compare DIR OTHER --fail-on judges the set"))
	}
	if err := store.CheckWritable(f.out); err != nil {
		return usageError(fmt.Errorf("run: --out: %w", err))
	}
	var results []*result.Result
	var firstErr error
	for i := 1; i <= f.repeat; i++ {
		if ctx.Err() != nil {
			break
		}
		sub := *f
		sub.out = filepath.Join(f.out, "runs", fmt.Sprintf("%03d", i))
		sub.quiet, sub.repeat = true, 1
		var got *result.Result
		sub.collect = func(r *result.Result) { got = r }
		err := one(&sub)
		if got != nil {
			results = append(results, got)
			if !f.json {
				fmt.Fprintf(io.out, "run %d of %d  %s\n", i, f.repeat, report.RunLine(got))
			}
		}
		var ee *exitError
		if err != nil && (!errors.As(err, &ee) || ee.code != exitThreshold) {
			// The run failed (not only its thresholds): the next would too.
			firstErr = err
			break
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	var werr error
	if f.json {
		werr = report.ResultSetJSON(io.out, results)
	} else if len(results) > 0 {
		werr = report.ResultSet(io.out, f.out, results)
	}
	if werr != nil && firstErr == nil {
		firstErr = failedError(fmt.Errorf("run: writing the summary: %w", werr))
	}
	if len(results) < f.repeat && firstErr == nil {
		firstErr = failedError(fmt.Errorf("run: interrupted after %d of %d runs; they are in %s", len(results), f.repeat, f.out))
	}
	return firstErr
}
