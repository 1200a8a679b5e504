package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/schedule"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/threshold"
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
	opts := plan.Options{Set: f.set, Env: env, LookupEnv: os.LookupEnv}
	p, err := plan.Load(path, opts)
	if err != nil {
		return usageError(err)
	}
	if p.Server != nil {
		return usageError(fmt.Errorf("%s: server: is not supported yet", p.Server.Pos))
	}
	if p.Experiment != nil {
		return usageError(fmt.Errorf("%s: params and other experiment keys are not supported yet", p.Experiment.Pos))
	}
	if f.out != "" {
		if err := store.CheckWritable(f.out); err != nil {
			return usageError(fmt.Errorf("run: --out: %w", err))
		}
	}
	prog, err := p.Program(ctx, opts, func(ctx context.Context, u *url.URL) (*httpx.Target, error) {
		t, err := httpx.ResolveTarget(ctx, u, p.HTTP.Insecure)
		if err != nil {
			return nil, err
		}
		return t, preflight(ctx, t, p.HTTP.Timeout)
	})
	if err != nil {
		return failedError(fmt.Errorf("run: %w", err))
	}
	wl, settings, err := workload(p)
	if err != nil {
		return usageError(err)
	}
	cfg := engine.Config{
		Program:  prog,
		Workload: wl,
		HTTP:     httpx.Options{Timeout: p.HTTP.Timeout, MaxBodyBytes: p.HTTP.MaxBody, MaxHeaderBytes: int(p.HTTP.MaxHeader)},
		Workers:  f.workers,
	}
	prog2 := newProgress(io, settings)
	cfg.OnPoint = prog2.point
	out, err := engine.Run(ctx, cfg)
	prog2.done()
	if err != nil {
		return failedError(fmt.Errorf("run: %w", err))
	}
	res, err := out.Result(prog)
	if err != nil {
		return failedError(err)
	}
	res.Version = version()
	res.Name = p.Name
	res.Settings = settings
	res.Settings.Workers = out.Workers
	res.Plan = p.Masked()
	res.Validity = planValidity(res, out)
	failed := evaluateThresholds(p, res)
	return finish(io, f, res, out, failed)
}

// finish writes the result and the summary, and picks the exit code.
func finish(io *stdio, f *quickFlags, res *result.Result, out *engine.Outcome, thresholdsFailed int) error {
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
	case out.Interrupted:
		where := ""
		if f.out != "" {
			where = "; results so far are in " + f.out
		}
		return failedError(fmt.Errorf("run: interrupted after %.1fs%s", out.Elapsed.Seconds(), where))
	case thresholdsFailed > 0:
		return thresholdError(fmt.Errorf("run: %d of %d thresholds failed", thresholdsFailed, len(res.Thresholds)))
	}
	return nil
}

func evaluateThresholds(p *plan.Plan, res *result.Result) (failed int) {
	for _, t := range p.Thresholds {
		o := threshold.Evaluate(t.T, res, nil)
		res.Thresholds = append(res.Thresholds, result.ThresholdResult{Text: t.Text, Measured: o.Measured, Pass: o.Pass, Detail: o.Detail})
		if !o.Pass {
			failed++
		}
	}
	return failed
}

// workload turns a plan's load into the engine's.
func workload(p *plan.Plan) (engine.Workload, result.Settings, error) {
	l := p.Load
	st := result.Settings{Timeout: result.Duration(p.HTTP.Timeout), KeepAlive: p.HTTP.KeepAlive, Insecure: p.HTTP.Insecure, MaxBody: p.HTTP.MaxBody, MaxHeader: int(p.HTTP.MaxHeader)}
	st.Extra = map[string]string{"plan": p.File, "load": string(l.Kind)}
	switch l.Kind {
	case plan.LoadClosed:
		st.Mode, st.Connections, st.Duration = "closed", l.VUs, result.Duration(l.Duration)
		return engine.Workload{Kind: engine.Closed, VUs: l.VUs, IterationsPerVU: l.Iterations, Duration: l.Duration, Grace: l.Grace}, st, nil
	case plan.LoadOpen:
		arr, err := schedule.Constant(l.Rate, l.Duration)
		if err != nil {
			return engine.Workload{}, st, fmt.Errorf("%s: load.open: %w", l.Pos, err)
		}
		st.Mode, st.Connections, st.Duration, st.Rate = "open", l.MaxVUs, result.Duration(l.Duration), l.Rate.PerSecond()
		st.Extra["arrivals"] = fmt.Sprint(arr.Total())
		return engine.Workload{Kind: engine.Open, Arrivals: arr, MaxVUs: l.MaxVUs, Grace: l.Grace}, st, nil
	case plan.LoadRampRate:
		var stages []schedule.Stage
		for _, s := range l.RateStages {
			stages = append(stages, schedule.Stage{Target: s.Target, Over: s.Over})
		}
		arr, err := schedule.Stages(l.StartRate, stages)
		if err != nil {
			return engine.Workload{}, st, fmt.Errorf("%s: load.stages: %w", l.Pos, err)
		}
		st.Mode, st.Connections, st.Duration = "open", l.MaxVUs, result.Duration(arr.Duration())
		st.Extra["arrivals"] = fmt.Sprint(arr.Total())
		return engine.Workload{Kind: engine.Open, Arrivals: arr, MaxVUs: l.MaxVUs, Grace: l.Grace}, st, nil
	case plan.LoadRampVUs:
		var stages []schedule.VUStage
		for _, s := range l.VUStages {
			stages = append(stages, schedule.VUStage{Target: s.Target, Over: s.Over})
		}
		ramp, err := schedule.NewRamp(l.StartVUs, stages)
		if err != nil {
			return engine.Workload{}, st, fmt.Errorf("%s: load.stages: %w", l.Pos, err)
		}
		st.Mode, st.Connections, st.Duration = "closed", ramp.Max(), result.Duration(ramp.Duration())
		return engine.Workload{Kind: engine.Ramp, Ramp: ramp, Grace: l.Grace}, st, nil
	}
	return engine.Workload{}, st, errors.New("the plan has no load")
}

func planValidity(res *result.Result, out *engine.Outcome) []result.Warning {
	w := quickValidity(res, out)
	s := &res.Summary
	if s.Dropped > 0 {
		total := s.Dropped + s.Iterations + s.Aborted
		w = append(w, result.Warning{Code: "dropped", Message: fmt.Sprintf(
			"%d arrivals (%.1f%%) were dropped: every VU was busy when they were due. The server could not keep up, or max_vus is too low.",
			s.Dropped, 100*float64(s.Dropped)/float64(max(total, 1)))})
	}
	if s.Aborted > 0 {
		w = append(w, result.Warning{Code: "aborted", Message: fmt.Sprintf("%d journeys could not go on (see the reasons above)", s.Aborted)})
	}
	if out.Stopped != nil {
		w = append(w, result.Warning{Code: "stopped", Message: "the run stopped early: " + strings.TrimPrefix(out.Stopped.Error(), "stop: ")})
	}
	return w
}

var _ = time.Second
