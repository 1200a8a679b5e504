// Package runner runs one test: it starts the server under test if the plan
// has one, checks once that the target answers, sends the load with the
// engine while sampling the server and loadlab itself, stops the server, and
// builds the run's result in one place (figures, the server's and loadlab's
// use, thresholds, validity warnings), keeping everything measured even when
// something fails. Quick mode, plan mode and every run of an experiment go
// through it; internal/experiment only chooses which runs to make.
package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/secret"
	execseg "github.com/loadlab/loadlab/internal/segment"
	"github.com/loadlab/loadlab/internal/server"
)

// Options tune one run.
type Options struct {
	// Dir receives server.log (and the caller's result.json); empty keeps
	// the server log in a temporary file.
	Dir     string
	Workers int
	// Params are an experiment point's parameter values; nil for a plain run.
	Params map[string]any
	// Point is the experiment point's key ("threads=4"), recorded in the
	// result's settings; empty for a plain run.
	Point string
	// Warmup is left out of every figure but the time series.
	Warmup time.Duration
	// Seed seeds randomInt, randomString, uuid and pick: random (see
	// plan.ProgramOptions); zero takes the plan's seed:, or a random one.
	// An experiment gives every run its seed.
	Seed uint64
	// OnProgress, if set, hears about the run once a second.
	OnProgress func(Progress)
	// OnInterval, if set, hears every interval of the series with its
	// figures per step (steps names them, by step ID), on the collector's
	// goroutine: it must return quickly and not keep iv (see
	// metrics.Collector.PerStep). The live metrics listen here.
	OnInterval func(steps []engine.StepInfo, iv *metrics.Interval)
	// Stop, if set, ends the load early when it is closed, as the end of
	// the workload would: the run is not Interrupted (Ctrl-C is), and
	// Result.Stopped says it was ended early. The capacity search ends a
	// step this way once its figures are steady. Requests in flight then
	// are left out of the figures (Summary.Abandoned counts them), as at an
	// interruption.
	Stop    <-chan struct{}
	Version string
	// Segment runs only that execution segment of the plan (--segment
	// K/N; see package segment); the zero value runs the whole.
	Segment execseg.Segment
	// StartAt, when set, is the wall-clock instant the schedule starts
	// (--start-at).
	StartAt time.Time
	// BeforeLoad, if set, is called once the server under test (if any) is
	// ready and the load is built, just before the load starts; a non-zero
	// instant it returns is when the schedule starts, as StartAt. A plan
	// duet's two runs meet here, so that neither side's load begins before
	// both servers are ready, and both begin at the same instant. An error
	// ends the run before any load (the server is stopped).
	BeforeLoad func(ctx context.Context) (time.Time, error)
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

// Plan runs the plan once. The returned error is a *ServerError when the
// server under test failed (the result then holds what was measured until
// then, or is nil if no load was sent), or another error when nothing could
// be measured. An interrupted run (ctx done) returns its partial result and
// no error; Result.Summary.Interrupted says so.
func Plan(ctx context.Context, p *plan.Plan, opts Options) (res *result.Result, err error) {
	wl, settings, err := Workload(p)
	if err != nil {
		return nil, err
	}
	t := &test{name: p.Name, settings: settings, plan: p, fingerprint: planFingerprint(p, nil)}
	var learned *secret.Learned // the credentials VUs capture, for server.log
	if p.Server != nil {
		// No := in this block: the deferred after_each_run sets Plan's err.
		var spec server.Spec
		var before, after *server.Spec
		if spec, err = p.ServerSpec(opts.Params); err != nil {
			return nil, err
		}
		t.fingerprint = planFingerprint(p, &spec)
		if before, after, err = p.EachRunSpecs(opts.Params); err != nil {
			return nil, err
		}
		if err := eachRun(ctx, before, p.Server.BeforeEachRun, p.Server.EachRunTimeout, opts.Dir); err != nil {
			return nil, &ServerError{Err: fmt.Errorf("the server was not started: %w", err)}
		}
		if after != nil {
			// After the server has stopped, whatever became of the run;
			// not after an interrupt, which stops the command too.
			defer func() {
				t.stopServer()
				if ctx.Err() != nil {
					return
				}
				if aerr := eachRun(ctx, after, p.Server.AfterEachRun, p.Server.EachRunTimeout, opts.Dir); aerr != nil {
					var se *ServerError
					switch {
					case errors.As(err, &se):
						err = &ServerError{Err: errors.Join(se.Err, aerr)}
					case err == nil:
						err = &ServerError{Err: aerr}
					default:
						err = errors.Join(err, aerr)
					}
				}
			}()
		}
		if opts.Dir != "" {
			spec.LogPath = filepath.Join(opts.Dir, "server.log")
		}
		if p.LearnsSecrets() {
			learned = secret.NewLearned()
			spec.Learned = learned
		}
		t.proc, err = server.Start(ctx, spec)
		if err != nil {
			return nil, &ServerError{Err: err}
		}
		defer t.proc.Stop()
	}
	resolve := resolver(p)
	prog, err := p.Program(ctx, plan.ProgramOptions{Params: opts.Params, Seed: opts.Seed, Segment: opts.Segment, Learned: learned}, func(ctx context.Context, u *url.URL) (*httpx.Origin, error) {
		o, err := resolve(ctx, u)
		if err == nil && o.Addr.Addr().IsLoopback() {
			t.local = true
			t.listeners = append(t.listeners, o.Addr)
		}
		return o, err
	})
	if err != nil {
		return nil, err
	}
	scenarios, err := ScenarioWorkloads(p)
	if err != nil {
		return nil, err
	}
	t.cfg = engine.Config{
		Program:   prog,
		Workload:  wl,
		Scenarios: scenarios,
		HTTP:      httpx.Options{Timeout: p.HTTP.Timeout, MaxBodyBytes: p.HTTP.MaxBody, MaxHeaderBytes: int(p.HTTP.MaxHeader)},
		Workers:   opts.Workers,
		Warmup:    opts.Warmup,
		Segment:   opts.Segment,
		StartAt:   opts.StartAt,
	}
	if opts.BeforeLoad != nil {
		at, err := opts.BeforeLoad(ctx)
		if err != nil {
			return nil, err
		}
		if !at.IsZero() {
			t.cfg.StartAt = at
		}
	}
	return t.run(ctx, opts)
}

// QuickRun is quick mode's test: one request to one URL, again and again.
type QuickRun struct {
	URL      *url.URL
	Insecure bool // do not verify the server's TLS certificate
	// TLS are the --tls-* flags' settings (nil: the defaults).
	TLS *httpx.TLSSettings
	// Request is the request's bytes on the wire; Method its method.
	Request []byte
	// Body, when set, is the body sent after Request (its head only) from
	// a file, chunk by chunk: --body-file over what is held in memory.
	Body   *httpx.BodyFile
	Method string
	Close  bool // a new connection for every request
	// Decode keeps each body and undoes its content codings, for the
	// decoded size (--compressed).
	Decode bool
	// Streams, when above zero, makes the connections HTTP/2 (--http2),
	// each shared by that many VUs (--streams).
	Streams int
	// Settings describe the run in its result.
	Settings result.Settings
	// Engine is the load to send; its Program is built here, once the
	// target has answered.
	Engine engine.Config
	// Thresholds judge the run (--threshold); none: DefaultQuickErrors.
	Thresholds []plan.Threshold
}

// Quick runs quick mode's test once: it resolves the URL and connects once
// (so that a wrong address fails with one line before any load), then
// sends the load. An interrupted run returns its partial result and no
// error.
func Quick(ctx context.Context, q QuickRun, opts Options) (*result.Result, error) {
	target, err := httpx.ResolveOrigin(ctx, q.URL, q.Insecure)
	if err != nil {
		return nil, err
	}
	target.ConfigureTLS(q.TLS)
	if q.Streams > 0 {
		target.UseHTTP2(q.Streams)
	}
	if err := preflight(ctx, target, q.Engine.HTTP.Timeout); err != nil {
		return nil, err
	}
	if err := preflightH2(ctx, target, q.Engine.HTTP.Timeout); err != nil {
		return nil, err
	}
	name := q.Method + " " + q.URL.Path
	t := &test{name: name, settings: q.Settings, cfg: q.Engine, local: target.Addr.Addr().IsLoopback(), fingerprint: quickFingerprint(q), quickThresholds: q.Thresholds, quick: true}
	if t.local {
		t.listeners = []netip.AddrPort{target.Addr}
	}
	t.cfg.Program = engine.QuickProgram(name, target, q.Request, q.Method, q.Close, q.Decode)
	t.cfg.Program.Scenarios[0].Steps[0].Request.StaticBody = q.Body
	return t.run(ctx, opts)
}

// test is one run ready to go: the load, what describes it, the server
// under test if one was started, and the plan if there is one.
type test struct {
	name     string
	cfg      engine.Config
	settings result.Settings
	proc     *server.Process // nil: no server under test
	plan     *plan.Plan      // nil in quick mode
	// local is set when a target is on a loopback address: a server there
	// that loadlab did not start counts among the machine's other processes.
	local bool
	// listeners are the loopback addresses the load goes to: without a
	// server of its own, loadlab looks for the process listening there.
	listeners []netip.AddrPort
	// fingerprint is what the run measures, for compare.
	fingerprint *result.Fingerprint
	// quick is set for quick mode, whose thresholds are quickThresholds
	// (--threshold), or DefaultQuickErrors when none is given.
	quick           bool
	quickThresholds []plan.Threshold
}

// run sends the load while sampling loadlab itself and the server (if
// any), and builds the result. A *ServerError reports a server that exited
// mid-run or could not be stopped; the result then holds what was measured.
func (t *test) run(ctx context.Context, opts Options) (*result.Result, error) {
	self, err := server.SampleSelf()
	if err != nil {
		return nil, err
	}
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{}, 2)
	go func() { self.Run(sampleCtx, server.DefaultSampleInterval); sampled <- struct{}{} }()
	machine := server.NewMachineSampler()
	go func() { machine.Run(sampleCtx, server.DefaultSampleInterval); sampled <- struct{}{} }()
	found := t.findServers()
	for _, f := range found {
		go func() { f.sampler.Run(sampleCtx, server.DefaultSampleInterval); sampled <- struct{}{} }()
	}

	cfg := t.cfg
	if opts.OnProgress != nil {
		cfg.OnPoint = func(pt result.Point) {
			pr := Progress{Point: pt}
			if t.proc != nil {
				if samples := t.proc.Samples(); len(samples) > 0 {
					last := samples[len(samples)-1]
					pr.Server, pr.ServerCPU, pr.ServerRSS = true, last.CPU, last.RSS
				}
			}
			opts.OnProgress(pr)
		}
	}
	if opts.OnInterval != nil {
		steps := cfg.Program.Steps
		cfg.OnInterval = func(iv *metrics.Interval) { opts.OnInterval(steps, iv) }
	}
	// The load stops early if the server exits by itself.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.proc != nil {
		go func() {
			select {
			case <-t.proc.Done():
				cancel()
			case <-runCtx.Done():
			}
		}()
	}
	if opts.Stop != nil {
		go func() {
			select {
			case <-opts.Stop:
				cancel()
			case <-runCtx.Done():
			}
		}()
	}
	out, err := engine.Run(runCtx, cfg)
	stopSampling()
	<-sampled
	<-sampled
	for range found {
		<-sampled
	}
	if err != nil {
		return nil, err
	}
	stoppedEarly := false
	if opts.Stop != nil && out.Interrupted && ctx.Err() == nil {
		select {
		case <-opts.Stop:
			stoppedEarly = true
		default:
		}
	}
	// Stopped because the user interrupted the run is no crash.
	crashed := false
	if t.proc != nil {
		select {
		case <-t.proc.Done():
			crashed = ctx.Err() == nil
		default:
		}
	}
	res, err := t.result(out, self, machine, found, crashed, opts)
	if err != nil {
		return nil, err
	}
	if stoppedEarly && !crashed {
		// Validity saw an interruption, so it does not call the requests
		// in flight at the stop abandoned by the grace period; the run
		// itself was not interrupted.
		res.Summary.Interrupted = false
		res.Stopped = fmt.Sprintf("ended early by its caller after %.1fs", out.Elapsed.Seconds())
	}
	var serverErr error
	if t.proc != nil {
		if crashed {
			serverErr = &ServerError{Err: fmt.Errorf("the server under test exited mid-run after %.1fs of load: %w", out.Elapsed.Seconds(), t.exitErr())}
		}
		if err := t.proc.Stop(); err != nil && serverErr == nil {
			serverErr = &ServerError{Err: fmt.Errorf("stopping the server: %w", err)}
		}
	}
	return res, serverErr
}

// foundServer is a loopback target's server that loadlab did not start,
// found by its listening socket, and sampled as its tree.
type foundServer struct {
	pid     int
	command string
	sampler *server.Sampler
}

// findServers looks for the processes listening on the run's loopback
// targets when loadlab starts no server, one for each process however many
// of its ports the load goes to (a duet's two servers are two); none when
// none is found (or the platform cannot tell, or it is loadlab itself: a
// test's own server).
func (t *test) findServers() []*foundServer {
	if t.proc != nil {
		return nil
	}
	var out []*foundServer
	for _, addr := range t.listeners {
		pid, ok := server.ListenerPID(addr)
		if !ok || slices.ContainsFunc(out, func(f *foundServer) bool { return f.pid == pid }) {
			continue
		}
		s, err := server.NewSampler(pid, server.ProcessTree)
		if err != nil {
			continue
		}
		out = append(out, &foundServer{pid: pid, command: server.CommandLine(pid), sampler: s})
	}
	return out
}

// stopServer stops the server under test, if one was started.
func (t *test) stopServer() {
	if t.proc != nil {
		t.proc.Stop()
	}
}

// exitErr is why the server under test exited.
func (t *test) exitErr() error {
	if err := t.proc.Err(); err != nil {
		return err
	}
	return errors.New("the server exited")
}

// result builds the run's result from what the engine measured, the
// samples of loadlab itself and of the server, and the plan: every field of
// result.json is set here.
func (t *test) result(out *engine.Outcome, self *server.Sampler, machine *server.MachineSampler, found []*foundServer, crashed bool, opts Options) (*result.Result, error) {
	res, err := out.Result(t.cfg.Program)
	if err != nil {
		return nil, err
	}
	res.Name = t.name
	res.Version = opts.Version
	res.Settings = t.settings
	res.Settings.Workers = out.Workers
	if e, err := httpx.EngineFromEnv(); err == nil {
		res.Settings.Engine = e.String()
	}
	if opts.Point != "" {
		// A copy: the settings may be the caller's (quick mode's, whose
		// Extra may be nil).
		res.Settings.Extra = maps.Clone(res.Settings.Extra)
		if res.Settings.Extra == nil {
			res.Settings.Extra = map[string]string{}
		}
		res.Settings.Extra["point"] = opts.Point
	}
	res.Summary.Abandoned = out.InFlight
	res.Fingerprint = t.fingerprint
	if t.plan != nil && t.plan.PerScenario() {
		for i := range res.Scenarios {
			for _, sc := range t.plan.Scenarios {
				if sc.Name == res.Scenarios[i].Scenario {
					res.Scenarios[i].Load = string(sc.Load.Kind)
				}
			}
		}
	}

	from := out.Started.Add(t.cfg.Warmup)
	to := out.Started.Add(t.cfg.Warmup + out.Elapsed)
	res.Generator = generator(self, from, to)
	if t.proc != nil {
		res.Server = serverFigures(t.proc, out.Started, from, to, opts.Dir)
		if crashed {
			var ee *server.ExitError
			if perr := t.exitErr(); errors.As(perr, &ee) {
				res.Server.Exit = ee.Status.String()
				if ee.OOM != nil {
					res.Server.Exit = ee.Reason()
				}
				res.Server.LogTail = ee.LogTail
			} else {
				res.Server.Exit = perr.Error()
			}
			// Not an interruption by the user: the failure says what happened.
			res.Summary.Interrupted = false
		}
	}
	res.Machine = machineFigures(machine, from, to, res.Generator, res.Server, t.local)
	if m := res.Machine; m != nil && len(found) > 0 && res.Server == nil {
		// The targets' servers, found by their sockets: their CPU is the
		// server's, not the others'.
		var sum float64
		var first float64
		for i, f := range found {
			fs := f.sampler.Summary(from, to)
			pct := fs.CPUAverage / float64(m.CPUs)
			sum += pct
			if i == 0 {
				first = 100 * fs.WaitShare()
			}
			if len(found) > 1 {
				m.ServersFound = append(m.ServersFound, result.FoundServer{PID: f.pid, Command: f.command, CPUPct: pct, CPUWaitPct: 100 * fs.WaitShare()})
			}
		}
		m.ServerPct = min(sum, m.BusyPct-m.LoadlabPct)
		m.OthersPct = max(0, m.BusyPct-m.LoadlabPct-m.ServerPct)
		m.ServerUnwatched = false
		m.ServerFound = &result.FoundServer{PID: found[0].pid, Command: found[0].command, CPUWaitPct: first}
	}
	if p := t.plan; p != nil {
		res.Plan = p.Masked() // before Validity, whose advice differs for plans
		res.PlanInputs = p.Inputs()
		res.Aborts = maskAborts(res.Aborts, p.Secrets()) // before Validity, which quotes them
		explainFailures(res, out.Totals, p.Secrets())
		res.Thresholds = thresholds(p.Thresholds, res, out.Totals)
	} else {
		explainFailures(res, out.Totals, nil)
		if t.quick {
			res.Thresholds = quickThresholds(t.quickThresholds, res, out.Totals)
		}
	}
	res.Validity = Validity(res, out)
	if !opts.Segment.Whole() || !opts.StartAt.IsZero() {
		res.Part = partOf(opts, out)
		if w, ok := startWarning(res.Part); ok {
			res.Validity = append(res.Validity, w)
		}
	}
	return res, nil
}

// LateStart is the start lateness past which a run with --start-at warns:
// its segment's schedule began that much after the others' may have.
const LateStart = 50 * time.Millisecond

// partOf is what the result says of its segment and its start.
func partOf(opts Options, out *engine.Outcome) *result.Part {
	seg := opts.Segment
	if seg.Whole() {
		seg = execseg.Segment{K: 1, N: 1}
	}
	p := &result.Part{
		Segments:        []int{seg.K},
		N:               seg.N,
		StartLatenessMS: float64(out.StartLateness) / float64(time.Millisecond),
		ClockOffset:     result.NoClockOffset,
	}
	if !opts.StartAt.IsZero() {
		at := opts.StartAt.UTC()
		p.StartAt = &at
	}
	return p
}

// startWarning warns of a start at --start-at that was late by more than
// LateStart.
func startWarning(p *result.Part) (result.Warning, bool) {
	if p.StartAt == nil || p.StartLatenessMS < float64(LateStart/time.Millisecond) {
		return result.Warning{}, false
	}
	return result.Warning{Code: "late_start", Message: fmt.Sprintf("the load began %.0f ms after --start-at %s: other segments started on time may have run ahead of this one (its arrivals due meanwhile went out late, counted in late)", p.StartLatenessMS, p.StartAt.Format(time.RFC3339Nano))}, true
}

// explainFailures fills in each step's first failed check from the response
// its recorder kept: masked (the plan's secrets, those the VU had captured,
// credential headers and cookies, URL query secrets), the text around what
// the check looked for in Body, and the whole response in Response, which
// the result's directory keeps as failures/File.
func explainFailures(res *result.Result, totals *metrics.Recorder, secrets []string) {
	taken := map[string]bool{}
	for i := range res.Steps {
		f := res.Steps[i].FailedCheck
		if f == nil || i >= len(totals.Steps) || totals.Steps[i].FirstFailed == nil {
			continue
		}
		kept := totals.Steps[i].FirstFailed
		f.Error = secret.URL(secret.Replace(f.Error, secrets))
		if kept.Response == nil {
			continue
		}
		m := kept.Response.Mask(secrets)
		all := append(append([]string(nil), secrets...), kept.Response.Secrets...)
		f.Error = secret.Replace(f.Error, all)
		// What the check looked for is shown too (around "..."): a text
		// made from a secret ("{{ password }}") is looked for masked.
		sought := kept.Sought
		sought.Contains = secret.Replace(sought.Contains, all)
		f.Body, f.Shown = failure.Near(m.Body, m.ContentType, sought, metrics.ShownBytes)
		f.Response = m.Message
		f.File = result.FailuresDir + "/" + failure.FileName(res.Steps[i].Scenario, res.Steps[i].Name, taken)
	}
}

// resolver resolves each target once and connects to it once, so that a
// wrong address fails with one clear line before any load.
func resolver(p *plan.Plan) plan.Resolver {
	return func(ctx context.Context, u *url.URL) (*httpx.Origin, error) {
		t, err := httpx.ResolveOrigin(ctx, u, p.HTTP.Insecure)
		if err != nil {
			return nil, err
		}
		t.ConfigureTLS(p.HTTP.TLS)
		if p.HTTP.Version == 2 {
			t.UseHTTP2(1) // a VU's requests share its connection
		}
		if err := preflight(ctx, t, p.HTTP.Timeout); err != nil {
			return nil, err
		}
		return t, preflightH2(ctx, t, p.HTTP.Timeout)
	}
}

// generator is loadlab's own use over the measured window; nil for a run
// too short to have two samples in it (its figures would be zeros).
func generator(self *server.Sampler, from, to time.Time) *result.Generator {
	s := self.Summary(from, to)
	if s.Samples < 2 {
		return nil
	}
	g := &result.Generator{CPUAvg: s.CPUAverage, CPUPeak: s.CPUPeak, RSSPeak: s.RSSPeak, Cores: float64(runtime.GOMAXPROCS(0)), CPUWaitPct: 100 * s.WaitShare()}
	if procs, err := usableCPUs(); err == nil {
		g.Cores = procs
	}
	return g
}

// machineFigures is what ran on the whole machine over the measured window,
// as shares of its CPUs: everything, loadlab, the server's tree, and the
// rest; nil when the machine could not be read or the run was too short to
// measure loadlab itself.
func machineFigures(machine *server.MachineSampler, from, to time.Time, g *result.Generator, sv *result.Server, local bool) *result.Machine {
	sum, ok := machine.Summary(from, to)
	if !ok || g == nil || sum.CPUs <= 0 {
		return nil
	}
	share := func(cores float64) float64 { return 100 * cores / float64(sum.CPUs) }
	m := &result.Machine{
		CPUs:       sum.CPUs,
		BusyPct:    share(sum.BusyCores),
		LoadlabPct: share(g.CPUAvg / 100),
		StealPct:   100 * sum.StealShare,
	}
	if sv != nil {
		m.ServerPct = share(sv.CPUAvg / 100)
	}
	m.OthersPct = max(0, m.BusyPct-m.LoadlabPct-m.ServerPct)
	m.ServerUnwatched = sv == nil && local
	if sum.StealUnmeasured {
		m.Unmeasured = []string{"steal"}
	}
	return m
}
