// Package experiment runs plans: one run (start the server under test if the
// plan has one, send the load, watch both, stop the server, keep everything
// measured even when something fails), and experiments, which sweep the
// plan's params over many such runs.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/server"
	"github.com/loadlab/loadlab/internal/threshold"
)

// RunOptions tune one run.
type RunOptions struct {
	// Dir receives server.log (and the caller's result.json); empty keeps
	// the server log in a temporary file.
	Dir     string
	Workers int
	// Params are an experiment point's parameter values; nil for a plain run.
	Params map[string]any
	// Warmup is left out of every figure but the time series.
	Warmup time.Duration
	// OnProgress, if set, hears about the run once a second.
	OnProgress func(Progress)
	Version    string

	plan string // the masked plan of a plan's run, set by RunOnce
}

// Progress is how a run is going, once a second: for the live panel.
type Progress struct {
	Point     result.Point
	Server    bool // the server's figures are set
	ServerCPU float64
	ServerRSS int64
	// In an experiment: which run of how many, at which point.
	Run, Runs int
	PointKey  string
}

// ServerError is a run that failed because of the server under test: it did
// not start, was not ready, or exited mid-run. The result measured until
// then, if any, comes with it.
type ServerError struct {
	Err error
}

func (e *ServerError) Error() string { return e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

// RunOnce runs the plan once. The returned error is a *ServerError when the
// server under test failed (the result then holds what was measured until
// then, or is nil if no load was sent), or another error when nothing could
// be measured. An interrupted run (ctx done) returns its partial result and
// no error; Result.Summary.Interrupted says so.
func RunOnce(ctx context.Context, p *plan.Plan, opts RunOptions) (*result.Result, error) {
	wl, settings, err := Workload(p)
	if err != nil {
		return nil, err
	}
	var proc *server.Process
	if p.Server != nil {
		spec, err := p.ServerSpec(opts.Params)
		if err != nil {
			return nil, err
		}
		if opts.Dir != "" {
			spec.LogPath = filepath.Join(opts.Dir, "server.log")
		}
		proc, err = server.Start(ctx, spec)
		if err != nil {
			return nil, &ServerError{Err: err}
		}
		defer proc.Stop()
	}
	prog, err := p.Program(ctx, plan.ProgramOptions{Params: opts.Params}, resolver(p))
	if err != nil {
		return nil, err
	}

	opts.plan = p.Masked()
	res, serverErr, err := measure(ctx, engine.Config{
		Program:  prog,
		Workload: wl,
		HTTP:     httpx.Options{Timeout: p.HTTP.Timeout, MaxBodyBytes: p.HTTP.MaxBody, MaxHeaderBytes: int(p.HTTP.MaxHeader)},
		Workers:  opts.Workers,
		Warmup:   opts.Warmup,
	}, proc, opts)
	if err != nil {
		return nil, err
	}
	res.Name = p.Name
	res.Settings = mergeSettings(settings, res.Settings)
	res.PlanInputs = p.Inputs()
	for i := range res.Steps {
		if f := res.Steps[i].FailedCheck; f != nil {
			// Masked before it is cut, so that no part of a secret across
			// the cut is left.
			f.Body, f.Error = metrics.Snippet([]byte(p.MaskSecrets(f.Body)), metrics.ShownBytes), p.MaskSecrets(f.Error)
		}
	}
	EvaluateThresholds(p, res)
	return res, serverErr
}

// RunProgram runs an engine configuration without a plan: quick mode.
func RunProgram(ctx context.Context, cfg engine.Config, settings result.Settings, opts RunOptions) (*result.Result, error) {
	res, _, err := measure(ctx, cfg, nil, opts)
	if err != nil {
		return nil, err
	}
	res.Settings = mergeSettings(settings, res.Settings)
	return res, nil
}

func mergeSettings(s, measured result.Settings) result.Settings {
	s.Workers = measured.Workers
	return s
}

// measure runs the load while sampling loadlab itself and the server (if
// any), and builds the result with its validity warnings. serverErr reports
// a server that exited mid-run; the result then holds what was measured.
func measure(ctx context.Context, cfg engine.Config, proc *server.Process, opts RunOptions) (res *result.Result, serverErr, err error) {
	self, err := server.SampleSelf()
	if err != nil {
		return nil, nil, err
	}
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() { self.Run(sampleCtx, server.DefaultSampleInterval); close(sampled) }()

	if opts.OnProgress != nil {
		cfg.OnPoint = func(pt result.Point) {
			pr := Progress{Point: pt}
			if proc != nil {
				if samples := proc.Samples(); len(samples) > 0 {
					last := samples[len(samples)-1]
					pr.Server, pr.ServerCPU, pr.ServerRSS = true, last.CPU, last.RSS
				}
			}
			opts.OnProgress(pr)
		}
	}
	// The load stops early if the server exits by itself.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if proc != nil {
		go func() {
			select {
			case <-proc.Done():
				cancel()
			case <-runCtx.Done():
			}
		}()
	}
	out, err := engine.Run(runCtx, cfg)
	stopSampling()
	<-sampled
	if err != nil {
		return nil, nil, err
	}
	res, err = out.Result(cfg.Program)
	if err != nil {
		return nil, nil, err
	}
	res.Version = opts.Version
	res.Settings.Workers = out.Workers

	from := out.Started.Add(cfg.Warmup)
	to := out.Started.Add(cfg.Warmup + out.Elapsed)
	res.Generator = generator(self, from, to)

	if proc != nil {
		crashed := false
		select {
		case <-proc.Done():
			// Stopped because the user interrupted the run is no crash.
			crashed = ctx.Err() == nil
		default:
		}
		res.Server = serverFigures(proc, out.Started, from, to, opts.Dir)
		if crashed {
			perr := proc.Err()
			if perr == nil {
				perr = errors.New("the server exited")
			}
			var ee *server.ExitError
			if errors.As(perr, &ee) {
				res.Server.Exit = ee.Status.String()
				res.Server.LogTail = ee.LogTail
			} else {
				res.Server.Exit = perr.Error()
			}
			serverErr = &ServerError{Err: fmt.Errorf("the server under test exited mid-run after %.1fs of load: %w", out.Elapsed.Seconds(), perr)}
			// Not an interruption by the user: the failure says what happened.
			res.Summary.Interrupted = false
		}
		if err := proc.Stop(); err != nil && serverErr == nil {
			serverErr = &ServerError{Err: fmt.Errorf("stopping the server: %w", err)}
		}
	}
	res.Summary.Abandoned = out.InFlight
	res.Plan = opts.plan // before Validity, whose advice differs for plans
	res.Validity = Validity(res, out)
	return res, serverErr, nil
}

// resolver resolves each target once and connects to it once, so that a
// wrong address fails with one clear line before any load.
func resolver(p *plan.Plan) plan.Resolver {
	return func(ctx context.Context, u *url.URL) (*httpx.Target, error) {
		t, err := httpx.ResolveTarget(ctx, u, p.HTTP.Insecure)
		if err != nil {
			return nil, err
		}
		return t, Preflight(ctx, t, p.HTTP.Timeout)
	}
}

// generator is loadlab's own use over the measured window; nil for a run
// too short to have two samples in it (its figures would be zeros).
func generator(self *server.Sampler, from, to time.Time) *result.Generator {
	s := self.Summary(from, to)
	if s.Samples < 2 {
		return nil
	}
	g := &result.Generator{CPUAvg: s.CPUAverage, CPUPeak: s.CPUPeak, RSSPeak: s.RSSPeak, Cores: float64(runtime.GOMAXPROCS(0))}
	if procs, err := usableCPUs(); err == nil {
		g.Cores = procs
	}
	return g
}

func serverFigures(proc *server.Process, start, from, to time.Time, dir string) *result.Server {
	s := proc.Summary(from, to)
	out := &result.Server{
		Command:       proc.Command(),
		PID:           proc.PID(),
		CPUAvg:        s.CPUAverage,
		CPUPeak:       s.CPUPeak,
		MachineAvg:    s.MachineAverage,
		MachinePeak:   s.MachinePeak,
		Cores:         s.Capacity,
		CPUUser:       s.User.Seconds(),
		CPUSystem:     s.System.Seconds(),
		RSSAvg:        s.RSSAverage,
		RSSPeak:       s.RSSPeak,
		PSSAvg:        s.PSSAverage,
		PSSPeak:       s.PSSPeak,
		SwapPeak:      s.SwapPeak,
		MajorFaults:   s.MajorFaults,
		ThreadsPeak:   s.ThreadsPeak,
		FDsPeak:       s.FDsPeak,
		ProcessesPeak: s.ProcessesPeak,
		Unmeasured:    s.Unmeasured.Names(),
	}
	if dir != "" {
		out.Log = "server.log"
	} else {
		out.Log = proc.LogPath()
	}
	if q := s.Quota; q.Quota > 0 {
		out.Quota = &result.Quota{Bytes: q.Quota, Peak: q.Peak, Average: q.Average, PeakExceeded: q.PeakExceeded, PeakOver: q.PeakOver, AverageExceeded: q.AverageExceeded, AverageOver: q.AverageOver}
	}
	out.Series = serverSeries(proc.Samples(), start)
	return out
}

// serverSeries turns the samples into the series of result.json, at most
// MaxServerPoints points.
func serverSeries(samples []server.Sample, start time.Time) []result.ServerPoint {
	every := max((len(samples)+MaxServerPoints-1)/MaxServerPoints, 1) // samples a point
	out := make([]result.ServerPoint, 0, (len(samples)+every-1)/every)
	for i := 0; i < len(samples); i += every {
		out = append(out, serverPoint(samples[i:min(i+every, len(samples))], start))
	}
	return out
}

// MaxServerPoints bounds the server's time series in result.json: two hours
// of 250 ms samples. A longer run's points each cover several samples.
const MaxServerPoints = 28800

// serverPoint is one point of the server's series for consecutive samples:
// the highest CPU and memory among them (a coarse point never hides a
// peak), the counts of the last.
func serverPoint(group []server.Sample, start time.Time) result.ServerPoint {
	last := group[len(group)-1]
	p := result.ServerPoint{
		T: last.Time.Sub(start).Seconds(), MajorFaults: last.MajorFaults,
		Threads: last.Threads, FDs: last.FDs, Processes: last.Processes,
	}
	for _, smp := range group {
		p.CPU, p.RSS, p.PSS, p.Swap = max(p.CPU, smp.CPU), max(p.RSS, smp.RSS), max(p.PSS, smp.PSS), max(p.Swap, smp.Swap)
	}
	return p
}

// EvaluateThresholds measures the plan's thresholds against the result and
// records them in it; it returns how many failed.
func EvaluateThresholds(p *plan.Plan, res *result.Result) (failed int) {
	res.Thresholds = nil
	figures := ServerFigures(res.Server)
	for _, t := range p.Thresholds {
		o := threshold.Evaluate(t.T, res, figures)
		res.Thresholds = append(res.Thresholds, result.ThresholdResult{Text: t.Text, Measured: o.Measured, Pass: o.Pass, Detail: o.Detail})
		if !o.Pass {
			failed++
		}
	}
	return failed
}

// ServerFigures gives thresholds the server's figures in their units: CPU
// as a fraction of one core, memory in bytes. Nil when no server was watched.
func ServerFigures(s *result.Server) threshold.ServerFigures {
	if s == nil {
		return nil
	}
	return threshold.ServerMap{
		threshold.ServerCPUAvg:      s.CPUAvg / 100,
		threshold.ServerCPUPeak:     s.CPUPeak / 100,
		threshold.ServerRSSAvg:      float64(s.RSSAvg),
		threshold.ServerRSSPeak:     float64(s.RSSPeak),
		threshold.ServerPSSAvg:      float64(s.PSSAvg),
		threshold.ServerPSSPeak:     float64(s.PSSPeak),
		threshold.ServerSwapPeak:    float64(s.SwapPeak),
		threshold.ServerMajorFaults: float64(s.MajorFaults),
	}
}
