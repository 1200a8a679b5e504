package drive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/store"
)

// SweepOptions tune an experiment.
type SweepOptions struct {
	Dir     string // results directory: experiment.db, runs/, experiment.json
	Fresh   bool   // start over even if Dir holds runs of a different plan
	Workers int
	Version string
	// Log receives one line per run (started, done, skipped) and the seed.
	Log func(format string, args ...any)
	// OnProgress hears about the run in progress once a second.
	OnProgress func(runner.Progress)
	// OnInterval hears the series of the run in progress, per step (see
	// runner.Options.OnInterval).
	OnInterval func(steps []engine.StepInfo, iv *metrics.Interval)
	// WriteRun, if set, writes a finished run's own reports into its
	// directory, beside its result.json.
	WriteRun func(dir string, r *result.Result) error
	// CheckPoint, if set, checks the plan at each point before the first
	// run, beside its own validation (the open-file limit against the
	// point's VUs, say); an error stops the sweep as a PointError.
	CheckPoint func(*plan.Plan) error
	// RunPoint, if set, makes each run instead of runner.Plan: a capacity
	// search at the point (a plan with capacity:), whose result carries
	// its answer (result.Capacity). It gets the point's plan, the run's
	// directory and the runner's options.
	RunPoint func(ctx context.Context, p *plan.Plan, o runner.Options) (*result.Result, error)
	// OnOrder, if set, hears the experiment's planned order once, before
	// its first run (and after a resume has read experiment.db): every run
	// in the order they run, those done before with their result.
	OnOrder func([]Planned)
}

// Planned is a run in an experiment's planned order, as OnOrder hears it.
type Planned struct {
	Run   int    // from 1, its place in the order (runs/NNN)
	Point string // its point's key
	Rep   int    // from 1
	// Before is the run's result when it was done before: a resume skips
	// it. nil for a run to come.
	Before *result.Result
}

// ErrPlanChanged is returned when a results directory holds runs of another plan.
var ErrPlanChanged = errors.New("the results directory holds runs of a different plan")

// Sweep runs an experiment, resuming from what Dir holds. load reloads the
// plan with a point's params (the plan is rendered anew for each point).
func Sweep(ctx context.Context, p *plan.Plan, load func(params map[string]any) (*plan.Plan, error), fingerprint string, opts SweepOptions) (*experiment.Outcome, error) {
	e := p.Experiment
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	points := experiment.Points(e)
	if err := checkPoints(points, load, opts.CheckPoint); err != nil {
		return nil, err
	}
	h, err := store.OpenHistory(opts.Dir)
	if err != nil {
		return nil, err
	}
	defer h.Close()

	prev, had, err := h.Meta("fingerprint")
	if err != nil {
		return nil, err
	}
	if had && prev != fingerprint {
		if !opts.Fresh {
			return nil, fmt.Errorf("%w (%s); run with --fresh to start over, or use another --out", ErrPlanChanged, h.Path())
		}
	}
	if opts.Fresh {
		if err := h.Reset(); err != nil {
			return nil, err
		}
		os.RemoveAll(filepath.Join(opts.Dir, "runs"))
		had = false
	}
	// A loadlab killed while it wrote a file left its temporary file.
	if err := store.RemoveTemp(opts.Dir); err != nil {
		logf("could not remove the temporary files of an earlier run: %v", err)
	}
	seed := e.Seed
	if s, ok, _ := h.Meta("seed"); ok && had {
		fmt.Sscan(s, &seed)
	}
	if seed == 0 {
		seed = rand.Uint64()%1_000_000_000 + 1
	}
	h.SetMeta("fingerprint", fingerprint)
	h.SetMeta("seed", fmt.Sprint(seed))

	order := experiment.Order(len(points), e.Repeat, seed)
	out := experiment.NewOutcome(p.Head(), e, seed, points, len(order))
	records, err := h.Runs()
	if err != nil {
		return nil, err
	}
	// Each run's record keeps its status; the results of the runs done are
	// decoded once, and the encoded bytes dropped, so that memory holds
	// one copy of each result and one of the plan they all carry.
	done := map[int]store.RunRecord{}
	before := map[int]*result.Result{}
	for i := range records {
		r := records[i]
		if r.Status == store.StatusDone {
			if res, err := result.Decode(bytes.NewReader(r.Result)); err == nil {
				before[r.Index] = out.Share(res)
			}
		}
		r.Result, records[i].Result = nil, nil
		done[r.Index] = r
	}
	records = nil
	logf("experiment %s: %s × %s = %s, in an order shuffled with seed %d", p.Name, plural(len(points), "point"), plural(e.Repeat, "repeat"), plural(len(order), "run"), seed)
	if factor, why := experiment.Factor(e); factor != "" {
		logf("factor: %s, compared at each combination of the other params (%s)", factor, chosen(why))
	}

	if opts.OnOrder != nil {
		planned := make([]Planned, len(order))
		for i, slot := range order {
			planned[i] = Planned{Run: slot.Index + 1, Point: points[slot.Point].Key, Rep: slot.Rep}
			if r, ok := done[slot.Index]; ok && r.Status == store.StatusDone {
				planned[i].Before = before[slot.Index]
			}
		}
		opts.OnOrder(planned)
	}

	var seq *experiment.SequentialTest
	if e.Auto {
		seq = experiment.NewSequentialTest(experiment.FigureThroughput, e.Repeat, e.MinEffect)
	}
	stopAt := len(order) // repeat: auto ends the order early
	for _, slot := range order {
		if slot.Index >= stopAt {
			break
		}
		if seq != nil && slot.Index > 0 && order[slot.Index-1].Rep != slot.Rep && !out.Interrupted {
			// A round ended: look at the primary figure.
			if seq.LookAtRounds(e, points, order[:slot.Index], out.Results()) {
				stopAt = slot.Index
				r := seq.Result()
				logf("repeat: auto: decided after %s (%s, %s)", plural(r.Rounds, "round"), r.Decision, experiment.SpendingRule)
				break
			}
		}
		pt := points[slot.Point]
		runDir := filepath.Join(opts.Dir, "runs", fmt.Sprintf("%03d", slot.Index+1))
		if r, ok := done[slot.Index]; ok && r.Status == store.StatusDone {
			if res := before[slot.Index]; res != nil {
				out.SetResult(slot.Index, res)
				logf("run %d/%d  %s #%d: done before, skipped", slot.Index+1, len(order), pt.Key, slot.Rep)
				continue
			}
		}
		if err := ctx.Err(); err != nil {
			out.Interrupted = true
			break
		}
		if slot.Index > 0 && e.Cooldown > 0 {
			select {
			case <-time.After(e.Cooldown):
			case <-ctx.Done():
				out.Interrupted = true
			}
			if out.Interrupted {
				break
			}
		}
		// One line a run, when it ends: a terminal's live line shows the
		// run under way, and a CI log gets its figures at its end.
		started := time.Now()
		res, err := runPoint(ctx, load, pt, runDir, e.Warmup, slot.Index+1, len(order), seed, opts)
		rec := store.RunRecord{Index: slot.Index, Point: pt.Key, Rep: slot.Rep, Started: started, Ended: time.Now()}
		var se *runner.ServerError
		switch {
		case res != nil && res.Summary.Interrupted:
			// A run cut short by the user is not recorded: resuming runs it again.
			out.Interrupted = true
		case err != nil && !errors.As(err, &se):
			return nil, fmt.Errorf("run %d (%s): %w", slot.Index+1, pt.Key, err)
		case err != nil:
			rec.Status, rec.Error = store.StatusFailed, err.Error()
			if res != nil {
				var buf bytes.Buffer
				result.Encode(&buf, res)
				rec.Result = buf.Bytes()
			}
			logf("run %d/%d  %s #%d FAILED: %s", slot.Index+1, len(order), pt.Key, slot.Rep, firstLine(err.Error()))
		default:
			var buf bytes.Buffer
			if err := result.Encode(&buf, res); err != nil {
				return nil, err
			}
			rec.Status, rec.Result = store.StatusDone, buf.Bytes()
			out.Results()[slot.Index] = out.Share(res)
			logf("run %d/%d  %s #%d: %.1f req/s, p95 %.2f ms, %d errors", slot.Index+1, len(order), pt.Key, slot.Rep, experiment.Throughput(res), res.Summary.Latency.P95, res.Summary.Errors.Total)
		}
		if out.Interrupted {
			break
		}
		if err := h.Save(rec); err != nil {
			return nil, err
		}
		rec.Result = nil // stored; the result itself is in out.Results()
		done[slot.Index] = rec
	}

	if seq != nil && stopAt == len(order) && !out.Interrupted {
		seq.LookAtRounds(e, points, order, out.Results())
	}
	finished := e
	if seq != nil {
		out.Sequential = seq.Result()
		if stopAt < len(order) {
			// The rounds run are the experiment's: the rest never will be.
			short := *e
			short.Repeat = order[stopAt-1].Rep
			finished, order, out.Repeat = &short, order[:stopAt], short.Repeat
		}
	}
	out.Finish(finished, order, func(i int) (string, string, bool) {
		r, ok := done[i]
		return r.Status, r.Error, ok
	})
	stored := *out
	// experiment.json keeps the verdict in words too, for readers other
	// than loadlab; report writes them. The verdict returned keeps only its
	// data.
	stored.Verdict = report.Describe(out.Verdict)
	data, err := json.MarshalIndent(&stored, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := store.WriteFile(filepath.Join(opts.Dir, "experiment.json"), append(data, '\n')); err != nil {
		return nil, err
	}
	return out, nil
}

// PointError is a point of an experiment whose plan is invalid: found
// before any run, so no load was sent.
type PointError struct {
	Point  string // its key, "threads=5 allocator=glibc"
	Index  int    // from 1, in experiment.Points order
	Points int
	Err    error // the plan's errors (plan.Errors), or the workload's
	// Limits: the plan is valid, but this machine cannot enforce its
	// server.limits.
	Limits bool
}

func (e *PointError) Error() string {
	key := e.Point
	if strings.ContainsFunc(key, unicode.IsControl) {
		key = strconv.Quote(key) // a param with a line break does not break the message
	}
	if e.Limits {
		return fmt.Sprintf("point %s (%d of %d): %v", key, e.Index, e.Points, e.Err)
	}
	return fmt.Sprintf("point %s (%d of %d) is not a valid plan:\n%v", key, e.Index, e.Points, e.Err)
}

func (e *PointError) Unwrap() error { return e.Err }

// checkPoints renders and validates the plan at every point, so that a
// param value that breaks it at a later point is found before the first
// run instead of after the load of the runs before it.
func checkPoints(points []experiment.Point, load func(map[string]any) (*plan.Plan, error), check func(*plan.Plan) error) error {
	for i, pt := range points {
		p, err := load(pt.Params)
		if err == nil {
			_, _, err = runner.Workload(p)
		}
		if err == nil && check != nil {
			err = check(p)
		}
		if err != nil {
			return &PointError{Point: pt.Key, Index: i + 1, Points: len(points), Err: err}
		}
		// Its server.limits are made and removed once, so that a limit this
		// machine cannot enforce stops the experiment before any load
		// rather than failing each of its runs.
		if err := runner.CheckLimits(p, pt.Params); err != nil {
			return &PointError{Point: pt.Key, Index: i + 1, Points: len(points), Err: err, Limits: true}
		}
	}
	return nil
}

// runPoint runs the plan at one point, writing its result and server log
// into dir.
// Every run gets the experiment's seed, the one printed and kept: each
// point is sent the same random values, and the seed reproduces them all.
func runPoint(ctx context.Context, load func(map[string]any) (*plan.Plan, error), pt experiment.Point, dir string, warmup time.Duration, run, runs int, seed uint64, opts SweepOptions) (*result.Result, error) {
	p, err := load(pt.Params)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var progress func(runner.Progress)
	if opts.OnProgress != nil {
		progress = func(pr runner.Progress) {
			pr.Run, pr.Runs, pr.PointKey = run, runs, pt.Key
			opts.OnProgress(pr)
		}
	}
	ro := runner.Options{Dir: dir, Workers: opts.Workers, Params: pt.Params, Point: pt.Key, Warmup: warmup, Seed: seed, OnProgress: progress, OnInterval: opts.OnInterval, Version: opts.Version}
	run1 := runner.Plan
	if opts.RunPoint != nil {
		run1 = opts.RunPoint
	}
	res, err := run1(ctx, p, ro)
	if res != nil {
		if werr := store.WriteResult(dir, res); werr != nil && err == nil {
			err = werr
		}
		if opts.WriteRun != nil {
			if werr := opts.WriteRun(dir, res); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return res, err
}

// chosen says in words how a matrix's factor was chosen.
func chosen(why plan.CompareReason) string {
	switch why {
	case plan.CompareNamed:
		return "the plan's compare:"
	case plan.CompareBaseline:
		return "the only param the baseline names"
	case plan.CompareOlder:
		return "the last param, as loadlab compared before compare:"
	}
	return "the last param in the file; compare: PARAM names another"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// plural writes a count of things: "1 run", "24 runs".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
