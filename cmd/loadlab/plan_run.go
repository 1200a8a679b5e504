package main

import (
	"context"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/loadlab/loadlab/internal/drive"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/history"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
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
	set := f.set
	if f.noServer {
		// Last, so that it wins over any --set server.x: the server is
		// already running, whatever the plan or the flags say about it.
		set = append(slices.Clone(set), "server=null")
	}
	popts := plan.Options{Set: set, Env: env, LookupEnv: os.LookupEnv, Thresholds: f.thresholds}
	load := func(o plan.Options) (*plan.Plan, error) { return plan.Load(path, o) }
	if path == "-" {
		// A plan on stdin: relative paths in it are relative to the working
		// directory, and errors name it "stdin".
		data, err := goio.ReadAll(goio.LimitReader(io.in, plan.MaxPlanBytes+4)) // enough for Parse to refuse a larger one
		if err != nil {
			return usageError(fmt.Errorf("run: reading the plan from stdin: %w", err))
		}
		load = func(o plan.Options) (*plan.Plan, error) { return plan.Parse("stdin", data, o) }
	}
	p, err := load(popts)
	if err != nil {
		return usageError(err)
	}
	for _, n := range p.Notices {
		fmt.Fprintf(io.err, "loadlab: notice: %s\n", n)
	}
	if err := fitsOpenFiles(p.MostVUs(), fmt.Sprintf("the load (%d VUs at most)", p.MostVUs())); err != nil {
		return usageError(fmt.Errorf("run: %s: %w", path, err))
	}
	if p.Experiment != nil {
		if f.repeat > 0 && f.quiet {
			return usageError(fmt.Errorf("run: %s is an experiment, whose runs repeat by its repeat: (--set repeat=5), not by --repeat", path))
		}
		if f.segment != "" || f.startAt != "" {
			return usageError(fmt.Errorf("run: %s is an experiment (params or repeat): --segment and --start-at run one plan's load, not an experiment's runs", path))
		}
		return runExperiment(ctx, io, load, p, popts, f)
	}
	if p.Capacity != nil {
		return usageError(fmt.Errorf("run: %s: a capacity: section is for loadlab capacity %s, or for an experiment (params), which then makes a capacity search at every point", p.Capacity.Pos, path))
	}
	if f.fresh {
		return usageError(errors.New("run: --fresh restarts an experiment; this plan has no params or repeat"))
	}
	if f.out != "" {
		if err := store.CheckWritable(f.out); err != nil {
			return usageError(fmt.Errorf("run: --out: %w", err))
		}
	}
	_, settings, err := runner.Workload(p)
	if err != nil {
		return usageError(err)
	}
	ropts := runner.Options{Dir: f.out, Workers: f.workers, Version: version()}
	if err := segmentOptions(p, f, &ropts); err != nil {
		return usageError(err)
	}
	live, err := startLive(ctx, io, f)
	if err != nil {
		return err
	}
	if p.Server != nil {
		live.setQuota(p.Server.MemoryQuota)
	}
	prog := newProgress(io, settings)
	live.runStarted()
	ropts.OnProgress, ropts.OnInterval = live.progress(prog.update), live.onInterval()
	res, err := runner.Plan(ctx, p, ropts)
	prog.done()
	live.result(res, err)
	defer live.close()
	var serverErr *runner.ServerError
	if res == nil {
		var perr plan.Errors
		if errors.As(err, &perr) {
			return usageError(err)
		}
		return failedError(fmt.Errorf("run: %w", err))
	}
	if errors.As(err, &serverErr) {
		// The server died mid-run: keep and show what was measured, then fail.
		ferr := finish(io, f, res, 0)
		record(io, f, runRecord(history.KindRun, p.Name, p.Fingerprint(), f.out, res, true))
		if ferr == nil {
			ferr = failedError(fmt.Errorf("run: %w", serverErr))
		}
		return ciRun(io, f, ferr, res)
	}
	err = finish(io, f, res, runner.ThresholdsFailed(res))
	record(io, f, runRecord(history.KindRun, p.Name, p.Fingerprint(), f.out, res, false))
	return ciRun(io, f, err, res)
}

// onlyDefaultFailed reports whether every threshold that failed is the
// default one (runner.DefaultChecks), none of the plan's.
func onlyDefaultFailed(ts []result.ThresholdResult) bool {
	for _, t := range ts {
		if !t.Pass && !t.Default {
			return false
		}
	}
	return true
}

// defaultFailed names the default checks threshold when it failed: the plan
// does not say it, so the error must.
func defaultFailed(ts []result.ThresholdResult) string {
	for _, t := range ts {
		if t.Default && !t.Pass && t.Text == runner.DefaultQuickErrors {
			return fmt.Sprintf(" (the default %s of a quick run: %.2f%% of the requests got an error status or no response; --threshold replaces it)", t.Text, 100*t.Measured)
		}
		if t.Default && !t.Pass {
			return fmt.Sprintf(" (the default %s among them: %.2f%% passed; a checks threshold in the plan replaces it)", t.Text, 100*t.Measured)
		}
	}
	return ""
}

// finish writes the result and the summary, and picks the exit code.
func finish(io *stdio, f *quickFlags, res *result.Result, thresholdsFailed int) error {
	var writeErr error
	if f.out != "" {
		writeErr = store.WriteResult(f.out, res)
		if writeErr == nil {
			if err := report.WriteRunFiles(f.out, res); err != nil {
				writeErr = fmt.Errorf("%s is written, but %w", filepath.Join(f.out, store.ResultFile), err)
			}
		}
	}
	if f.collect != nil {
		f.collect(res)
	}
	if f.out == "" {
		// Nothing was written: the summary must not point to a failures/
		// file that is not there.
		for i := range res.Steps {
			if fc := res.Steps[i].FailedCheck; fc != nil {
				fc.File = ""
			}
		}
	}
	noJourney := res.Plan != "" && res.Summary.Iterations == 0 && res.Summary.Aborted > 0
	var err error
	switch {
	case f.quiet:
	case f.json:
		err = report.JSON(io.out, res)
	default:
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
	case res.Summary.Requests+res.Summary.Abandoned > 0 && res.Summary.Responses == 0:
		return failedError(fmt.Errorf("run: none of the %d requests got a response%s", res.Summary.Requests+res.Summary.Abandoned, noResponseWhy(res)))
	case thresholdsFailed > 0 && !(noJourney && onlyDefaultFailed(res.Thresholds)):
		return thresholdError(fmt.Errorf("run: %d of %d thresholds failed%s", thresholdsFailed, len(res.Thresholds), defaultFailed(res.Thresholds)))
	case noJourney:
		// The server answered, but no journey could be completed: thresholds
		// of the plan that judge it come first; without a failing one (the
		// default checks threshold fails too, but says less), the run failed.
		return failedError(fmt.Errorf("run: no journey completed: %d could not go on%s", res.Summary.Aborted, firstAbort(res.Aborts)))
	}
	return nil
}

// firstAbort is ", the commonest: REASON" of a run's aborted journeys.
func firstAbort(aborts map[string]int64) string {
	best, n := "", int64(0)
	for r, c := range aborts {
		if c > n || c == n && r < best {
			best, n = r, c
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (%d: %s)", n, best)
}

// noResponseWhy names the most common failure of a run that got no response.
func noResponseWhy(res *result.Result) string {
	e := res.Summary.Errors
	class, n := "", int64(0)
	for _, c := range []struct {
		name string
		n    int64
	}{{"connect", e.Connect}, {"timeout", e.Timeout}, {"reset", e.Reset}, {"tls", e.TLS}, {"protocol", e.Protocol}, {"stream", e.Stream}, {"goaway", e.Goaway}} {
		if c.n > n {
			class, n = c.name, c.n
		}
	}
	if class == "" || res.Summary.Abandoned > n {
		if res.Summary.Abandoned > 0 {
			return fmt.Sprintf(": %d were still waiting for an answer when the grace period ended", res.Summary.Abandoned)
		}
		return ""
	}
	if ex := e.Examples[class]; ex != "" {
		return fmt.Sprintf(": %d %s errors, e.g. %s", n, class, ex)
	}
	return fmt.Sprintf(": %d %s errors", n, class)
}

func runExperiment(ctx context.Context, io *stdio, loadPlan func(plan.Options) (*plan.Plan, error), p *plan.Plan, popts plan.Options, f *quickFlags) error {
	return runExperimentWith(ctx, io, loadPlan, p, popts, f, experimentHooks{})
}

// experimentHooks are what a command built on an experiment (loadlab ab)
// adds to runExperiment: a head printed before the summary, and a check of
// the outcome whose error, when the experiment itself passed, is the exit.
type experimentHooks struct {
	head  func(*experiment.Outcome)
	check func(*experiment.Outcome) error
}

func runExperimentWith(ctx context.Context, io *stdio, loadPlan func(plan.Options) (*plan.Plan, error), p *plan.Plan, popts plan.Options, f *quickFlags, hooks experimentHooks) error {
	dir := f.out
	if dir == "" {
		dir = filepath.Join("results", safeName(p.Name))
	}
	if err := store.CheckWritable(dir); err != nil {
		return usageError(fmt.Errorf("run: results directory: %w", err))
	}
	_, settings, err := runner.Workload(p)
	if err != nil {
		return usageError(err)
	}
	prog := newProgress(io, settings)
	logf := func(format string, args ...any) {
		prog.clear()
		fmt.Fprintf(io.err, format+"\n", args...)
	}
	load := func(params map[string]any) (*plan.Plan, error) {
		o := popts
		o.Params = params
		return loadPlan(o)
	}
	ran := map[string]bool{} // the runs' directories, for the history
	var live *liveOutputs
	writeRun := func(runDir string, r *result.Result) error {
		ran[runDir] = true
		live.runEnded(r)
		if r.Capacity != nil {
			return nil // the search wrote its own report.html
		}
		return report.WriteRunPage(runDir, r)
	}
	live, err = startLive(ctx, io, f)
	if err != nil {
		return err
	}
	live.setReportDir(dir)
	if p.Server != nil {
		live.setQuota(p.Server.MemoryQuota)
	}
	defer live.close()
	var runPoint func(context.Context, *plan.Plan, runner.Options) (*result.Result, error)
	if p.Capacity != nil {
		runPoint = capacityRunPoint(logf, prog, live)
	}
	out, err := drive.Sweep(ctx, p, load, p.Fingerprint(), drive.SweepOptions{
		Dir: dir, Fresh: f.fresh, Workers: f.workers, Version: version(), Log: logf, OnProgress: live.progress(prog.update), OnInterval: live.onInterval(),
		WriteRun: writeRun, RunPoint: runPoint, OnOrder: live.schedule,
		CheckPoint: func(p *plan.Plan) error {
			if p.Capacity != nil {
				// The search at this point, checked as loadlab capacity
				// checks it: no load until every point's is sound.
				if _, err := newCapacitySearch(p, capacityDefaults(dir, f.workers), p.File); err != nil {
					return err
				}
			}
			return fitsOpenFiles(p.MostVUs(), fmt.Sprintf("the load (%d VUs at most)", p.MostVUs()))
		},
	})
	prog.done()
	if err != nil {
		var perr plan.Errors
		var invalidPoint *drive.PointError
		if errors.Is(err, drive.ErrPlanChanged) || errors.As(err, &perr) || errors.As(err, &invalidPoint) {
			return usageError(fmt.Errorf("run: %w", err))
		}
		if diskFull(err) {
			return failedError(fmt.Errorf("run: %w; the runs done before are kept in %s: free some space and run the same command again to resume", err, dir))
		}
		return failedError(fmt.Errorf("run: %w", err))
	}
	record(io, f, experimentRecords(p, dir, out, ran)...)
	summary := func() error { return report.CompactVerdict(io.out, out, dir) }
	if f.summary.full() {
		summary = func() error { return report.Verdict(io.out, out) }
	}
	if !f.json {
		if hooks.head != nil {
			hooks.head(out)
		}
		if err := summary(); err != nil {
			return failedError(err)
		}
	}
	if err := report.WriteExperimentFiles(dir, out); err != nil {
		return failedError(fmt.Errorf("run: writing the reports: %w", err))
	}
	if f.json {
		// The outcome as report DIR --json prints it, and nothing else on
		// stdout, for a program to read.
		if err := experimentJSON(io.out, out); err != nil {
			return failedError(err)
		}
	} else {
		fmt.Fprintf(io.out, "\nreport: %s\n", filepath.Join(dir, report.HTMLFile))
	}
	exit := experimentExit(dir, out)
	if exit == nil && hooks.check != nil {
		exit = hooks.check(out)
	}
	return ciExperiment(io, f, exit, out)
}

// experimentExit is the outcome of a finished experiment.
func experimentExit(dir string, out *experiment.Outcome) error {
	failed := 0
	for _, r := range out.Runs {
		if r.Status == "failed" {
			failed++
		}
	}
	switch {
	case out.Interrupted:
		return failedError(fmt.Errorf("run: interrupted; run the same command again to resume (%s)", dir))
	case failed > 0:
		return failedError(fmt.Errorf("run: %d of %d runs failed", failed, len(out.Runs)))
	case out.Verdict != nil && out.Verdict.FailedThresholds():
		return thresholdError(fmt.Errorf("run: thresholds failed: %s", strings.Join(report.FailedThresholds(out.Verdict), "; ")))
	}
	return nil
}

// safeName makes a plan name usable as a directory name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "experiment"
	}
	return b.String()
}

// diskFull reports whether err is a full disk or quota, from a file or from
// SQLite (which says "database or disk is full").
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || strings.Contains(err.Error(), "disk is full")
}
