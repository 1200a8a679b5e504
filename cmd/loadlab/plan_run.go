package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// parseEnv reads -e KEY=VALUE flags.
func parseEnv(kvs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-e %q: want KEY=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

func runPlan(ctx context.Context, io *stdio, path string, f *quickFlags) error {
	env, err := parseEnv(f.env)
	if err != nil {
		return usageError(fmt.Errorf("run: %w", err))
	}
	p, err := plan.Load(path, plan.Options{Set: f.set, Env: env, LookupEnv: os.LookupEnv})
	if err != nil {
		return usageError(err)
	}
	if p.Experiment != nil {
		return usageError(fmt.Errorf("%s: params and other experiment keys are not supported yet", p.Experiment.Pos))
	}
	if f.out != "" {
		if err := store.CheckWritable(f.out); err != nil {
			return usageError(fmt.Errorf("run: --out: %w", err))
		}
	}
	_, settings, err := experiment.Workload(p)
	if err != nil {
		return usageError(err)
	}
	prog := newProgress(io, settings)
	res, err := experiment.RunOnce(ctx, p, experiment.RunOptions{Dir: f.out, Workers: f.workers, OnPoint: prog.point, Version: version()})
	prog.done()
	var serverErr *experiment.ServerError
	if res == nil {
		var perr plan.Errors
		if errors.As(err, &perr) {
			return usageError(err)
		}
		return failedError(fmt.Errorf("run: %w", err))
	}
	failed := 0
	for _, t := range res.Thresholds {
		if !t.Pass {
			failed++
		}
	}
	if errors.As(err, &serverErr) {
		// The server died mid-run: keep and show what was measured, then fail.
		if ferr := finish(io, f, res, 0); ferr != nil {
			return ferr
		}
		return failedError(fmt.Errorf("run: %w", serverErr))
	}
	return finish(io, f, res, failed)
}

// finish writes the result and the summary, and picks the exit code.
func finish(io *stdio, f *quickFlags, res *result.Result, thresholdsFailed int) error {
	var writeErr error
	if f.out != "" {
		writeErr = store.WriteResult(f.out, res)
	}
	var err error
	if f.json {
		err = report.JSON(io.out, res)
	} else {
		err = report.Text(io.out, res)
	}
	switch {
	case writeErr != nil:
		return failedError(fmt.Errorf("run: %w", writeErr))
	case err != nil:
		return failedError(fmt.Errorf("run: writing the summary: %w", err))
	case res.Summary.Interrupted:
		where := ""
		if f.out != "" {
			where = "; results so far are in " + f.out
		}
		return failedError(fmt.Errorf("run: interrupted after %.1fs%s", res.Summary.DurationS, where))
	case thresholdsFailed > 0:
		return thresholdError(fmt.Errorf("run: %d of %d thresholds failed", thresholdsFailed, len(res.Thresholds)))
	}
	return nil
}
