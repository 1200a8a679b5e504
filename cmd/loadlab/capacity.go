package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/capacity"
	"github.com/loadlab/loadlab/internal/dashboard"
	"github.com/loadlab/loadlab/internal/drive"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/threshold"
)

// capacityFile is the search's record in its directory.
const capacityFile = capacity.File

type capacityFlags struct {
	slo       []string
	by        string
	precision string
	confirm   int
	stepMax   time.Duration
	out       string
	json      bool
	fresh     bool
	set, env  []string
	workers   int
	changed   map[string]bool // the flags given on the command line
	// --dashboard, --dashboard-linger, --metrics-addr, --metrics-linger:
	// as run's, over every step.
	dashboard       string
	dashboardLinger time.Duration
	open            bool
	metricsAddr     string
	metricsLinger   time.Duration
	// --url and its request flags: a search without a plan file.
	quick capacityURLFlags
	// --threshold: SLO clauses one a flag, as run's.
	thresholds []string
}

func newCapacityCommand(io *stdio) *cobra.Command {
	var f capacityFlags
	var refused refusals
	c := &cobra.Command{
		Use:   "capacity [PLAN.yaml | --url URL] --slo 'p95(latency) < 300ms, error_rate < 1%'",
		Short: "Find the highest arrival rate at which every SLO clause holds",
		Long: `Find the highest arrival rate of the plan's open load at which every clause
of the SLO holds. Each step is a run at one rate, kept under DIR/steps/NNN/;
it ends once its per-second figures are steady (or its queue is seen to
grow), at most --step-max. From the plan's rate the search doubles the rate
until a step breaks, bisects until the bracket is within --precision, then
repeats the answer --confirm times. With --by vus the plan's load is closed
and the search varies its VU count the same way, in whole VUs. The SLO is the threshold grammar of plan
files, clauses separated by commas; without --slo, the plan's thresholds.
--threshold adds one clause, as on run.

Without a plan, --url URL searches one request's capacity: an open load
from --rate (default 10/s) with at most --max-vus requests in flight, with
-X, -H and --body as in run's quick mode.

Ctrl-C keeps every finished step; the same command resumes the search.
Exit codes: 0 an answer; 1 the search failed (server crashed, interrupted);
2 invalid input, no load sent; 3 even the first rate broke the SLO.`,
		Example: `  loadlab capacity api.yaml --slo 'p95(latency) < 300ms, error_rate < 1%'
  loadlab capacity --url http://127.0.0.1:8080/api --rate 50/s --slo 'p99(latency) < 100ms, error_rate < 0.1%'
  loadlab capacity shop.yaml --slo 'p99(latency, step=login) < 1s' --precision 5% --out results/cap --json`,
		Args: dashboardArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkOutDir("capacity", f.out); err != nil {
				return err
			}
			if len(args) == 1 && looksLikeURL(args[0]) && f.quick.url.url == nil && !refused.refused("url") {
				if err := f.quick.url.Set(args[0]); err != nil {
					return usageError(fmt.Errorf("capacity: %w", err))
				}
				args = nil
			}
			if err := refused.err(); err != nil {
				return usageError(fmt.Errorf("capacity: %w", err))
			}
			quick := f.quick.url.url != nil
			switch {
			case quick && len(args) == 1:
				return usageError(errors.New("capacity: give a plan file or --url, not both"))
			case !quick && len(args) == 0:
				return usageError(errors.New("capacity: give a plan file (loadlab capacity plan.yaml) or --url URL"))
			}
			if !quick {
				for _, name := range []string{"rate", "method", "header", "body", "max-vus"} {
					if c.Flags().Changed(name) {
						return usageError(fmt.Errorf("capacity: --%s goes with --url; a plan sets it in its load and steps", name))
					}
				}
				f.quick.url.shown = ""
			} else {
				args = []string{capacityURLSource}
			}
			f.changed = map[string]bool{}
			for _, name := range []string{"by", "precision", "confirm", "step-max"} {
				f.changed[name] = c.Flags().Changed(name)
			}
			return runCapacity(c.Context(), io, args[0], &f)
		},
	}
	fl := c.Flags()
	f.by, f.precision, f.confirm, f.stepMax = "rate", "2%", capacity.DefaultConfirm, capacity.DefaultStepMax
	fl.StringArrayVar(&f.slo, "slo", nil, "the objective: threshold clauses separated by commas (repeatable; default: the plan's thresholds)")
	fl.StringVar(&f.by, "by", f.by, "what the search varies: rate (an open load's arrival rate) or vus (a closed load's VU count)")
	fl.StringVar(&f.precision, "precision", f.precision, "stop bisecting when the bracket is this close, relative")
	fl.Var(refused.hold("confirm", &countFlag[int]{value: &f.confirm, shown: "--confirm", zeroOK: true}), "confirm", "repeats at the answer")
	fl.Var(refused.hold("step-max", &durationFlag{value: &f.stepMax, shown: "--step-max"}), "step-max", "the longest a step runs when its figures do not settle")
	fl.StringVar(&f.out, "out", "", "the search's directory: capacity.json and steps/NNN/ (default results/NAME-capacity)")
	fl.BoolVar(&f.json, "json", false, "print the answer as JSON (schema "+capacity.Schema+")")
	fl.BoolVar(&f.fresh, "fresh", false, "forget the steps kept in the directory and start over")
	fl.StringArrayVar(&f.set, "set", nil, "override a plan field: key.path=value (repeatable)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set {{ env.KEY }}: KEY=VALUE (repeatable)")
	fl.Var(refused.hold("event-loops", &countFlag[int]{value: &f.workers, shown: "--event-loops", zeroOK: true}), "event-loops", "event loops (threads) sending load (default: the CPUs loadlab may use)")
	alias(fl, "workers", "event-loops")
	fl.StringVar(&f.dashboard, "dashboard", "", "serve a live page of the search on this address: the rate-latency curve step by step, each step's verdict, the current step's figures (--dashboard alone: "+dashboard.DefaultAddr+"; elsewhere than loopback the page asks for a token printed here)")
	fl.Lookup("dashboard").NoOptDefVal = dashboard.DefaultAddr
	fl.DurationVar(&f.dashboardLinger, "dashboard-linger", 0, "after the search, keep the dashboard (and the search's report) served this long")
	fl.BoolVar(&f.open, "open", false, "open the dashboard in a browser ($BROWSER, else the system's); implies --dashboard")
	f.quick.method.method, f.quick.maxVUs = "GET", 1000
	fl.Var(refused.hold("url", &f.quick.url), "url", "search the capacity of this URL, without a plan (http or https)")
	fl.Var(refused.hold("rate", &f.quick.rate), "rate", "with --url: the rate the search starts from, such as 50/s (default 10/s)")
	fl.VarP(refused.hold("method", &f.quick.method), "method", "X", "with --url: the request method")
	fl.VarP(refused.hold("header", &f.quick.headers), "header", "H", "with --url: a request header 'Name: value' (repeatable)")
	fl.StringVar(&f.quick.body, "body", "", "with --url: the request body")
	fl.Var(refused.hold("max-vus", &countFlag[int]{value: &f.quick.maxVUs, shown: "--max-vus"}), "max-vus", "with --url: the most requests in flight at once (an open load's max_vus)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "an SLO clause, such as 'p95(latency) < 300ms' (repeatable; with --slo, both)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the current step's live figures at /metrics in the Prometheus text format on this address (a port alone, such as :9464, is on loopback)")
	fl.DurationVar(&f.metricsLinger, "metrics-linger", 0, "after the search, keep /metrics up until it is scraped once more, for at most this long")
	return c
}

// capacitySearch is a search ready to go: everything checked.
type capacitySearch struct {
	*drive.Search // its directory, document, options, SLO; Results once done
	plan          *plan.Plan
	stepper       *drive.Stepper
	live          *liveOutputs // --dashboard, --metrics-addr; nil without
	// inExperiment: the search is a run of an experiment, whose options
	// feed live its figures and runs; s.live only draws the search.
	inExperiment bool
}

// prepareCapacity checks the command line and the plan, before any load.
func prepareCapacity(path string, f *capacityFlags) (*capacitySearch, error) {
	env, err := parseEnv(f.env)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	opts := plan.Options{Set: f.set, Env: env, LookupEnv: os.LookupEnv}
	var p *plan.Plan
	if f.quick.url.url != nil {
		p, err = loadURLPlan(&f.quick, opts)
	} else {
		p, err = plan.Load(path, opts)
	}
	if err != nil {
		return nil, err
	}
	if p.Experiment != nil {
		return nil, fmt.Errorf("capacity: %s: %s: the plan has params or repeat: run it with loadlab run, which makes a capacity search at every point when the plan has a capacity: section", path, p.Experiment.Pos)
	}
	return newCapacitySearch(p, f, path)
}

// fromSection takes the plan's capacity: section for each flag not given.
func (f *capacityFlags) fromSection(c *plan.Capacity) capacityFlags {
	g := *f
	if c == nil {
		return g
	}
	if !f.changed["by"] {
		g.by = c.By
	}
	if !f.changed["precision"] && c.Precision > 0 {
		g.precision = fmt.Sprintf("%g%%", 100*c.Precision)
	}
	if !f.changed["confirm"] && c.ConfirmSet {
		g.confirm = c.Confirm
	}
	if !f.changed["step-max"] && c.StepMax > 0 {
		g.stepMax = c.StepMax
	}
	return g
}

// newCapacitySearch checks a search of the plan p (read from path) with
// the flags f, the plan's capacity: section giving what they do not.
func newCapacitySearch(p *plan.Plan, f0 *capacityFlags, path string) (*capacitySearch, error) {
	f := f0.fromSection(p.Capacity)
	if f.by != "rate" && f.by != "vus" {
		return nil, fmt.Errorf("capacity: --by %q: want rate or vus", f.by)
	}
	precision, err := quantity.ParsePercent(f.precision)
	if err != nil {
		return nil, fmt.Errorf("capacity: --precision: %w", err)
	}
	if precision <= 0 {
		return nil, fmt.Errorf("capacity: --precision must be over 0%%, got %s", f.precision)
	}
	var slo []*threshold.Threshold
	for _, text := range f.thresholds {
		t, err := threshold.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("capacity: --threshold %q: %w", text, err)
		}
		slo = append(slo, t)
	}
	for _, text := range f.slo {
		ts, err := capacity.ParseSLO(text)
		if err != nil {
			return nil, fmt.Errorf("capacity: --slo %q: %w", text, err)
		}
		slo = append(slo, ts...)
	}
	byVUs := f.by == "vus"
	if p.PerScenario() {
		// One rate split by the scenarios' shares is not what their loads
		// say; a search of one of them is a plan of its own.
		sc := p.Scenarios[0]
		return nil, fmt.Errorf("capacity: %s: scenario %s has a load of its own, as every scenario here does: capacity searches one load, the plan's; give the scenarios weights under one top-level load, or search each scenario in a plan of its own", sc.Load.Pos, sc.Name)
	}
	switch {
	case !byVUs && p.Load.Kind != plan.LoadOpen:
		return nil, fmt.Errorf("capacity: %s: %s: --by rate needs an open load to start from, such as load: {open: {rate: 50/s, max_vus: 200}}; this one is %s (--by vus searches a closed load's VUs)", path, p.Load.Pos, p.Load.Kind)
	case byVUs && p.Load.Kind != plan.LoadClosed:
		return nil, fmt.Errorf("capacity: %s: %s: --by vus needs a closed load to start from, such as load: {closed: {vus: 10}}; this one is %s (--by rate searches an open load's arrival rate)", path, p.Load.Pos, p.Load.Kind)
	}
	if len(slo) == 0 && p.Capacity != nil {
		for _, t := range p.Capacity.SLO {
			slo = append(slo, t.T)
		}
	}
	if len(slo) == 0 {
		for _, t := range p.Thresholds {
			slo = append(slo, t.T)
		}
	}
	if len(slo) == 0 {
		return nil, errors.New("capacity: no SLO: give --slo 'p95(latency) < 300ms, error_rate < 1%', or thresholds in the plan")
	}
	st := capacity.Steadiness{}
	for _, t := range slo {
		if t.Aggregate == threshold.Percentile {
			st.MinResponses = max(st.MinResponses, capacity.ResponsesFor(t.Quantile))
		}
	}
	if f.stepMax < st.MinDuration() {
		if !f0.changed["step-max"] && p.Capacity != nil && p.Capacity.StepMax > 0 {
			return nil, fmt.Errorf("capacity: %s: capacity step_max %v is shorter than a step's least, %v", p.Capacity.StepMaxPos, f.stepMax, st.MinDuration())
		}
		return nil, fmt.Errorf("capacity: --step-max %v is shorter than a step's least, %v", f.stepMax, st.MinDuration())
	}
	start := p.Load.Rate.PerSecond()
	if byVUs {
		start = float64(p.Load.VUs)
	}
	opts, err := capacity.Options{Start: start, Precision: precision, Confirm: f.confirm, VUs: byVUs}.WithDefaults()
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	if err := fitsOpenFiles(p.Load.MostVUs(), fmt.Sprintf("the load (%d VUs at most)", p.Load.MostVUs())); err != nil {
		return nil, fmt.Errorf("capacity: %s: %w", path, err)
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join("results", safeName(p.Name)+"-capacity")
	}
	texts := make([]string, len(slo))
	for i, t := range slo {
		texts[i] = t.Text
	}
	doc := &capacity.Document{
		Schema: capacity.Schema, Name: p.Name, Plan: p.File, SLO: texts,
		Search: capacity.Settings{By: f.by, Start: opts.Start, Factor: opts.Factor, Precision: opts.Precision, Confirm: opts.Confirm,
			StepMaxS: f.stepMax.Seconds(), MaxSteps: opts.MaxSteps(), Fingerprint: p.Fingerprint()},
		Steps: []capacity.StepRecord{},
	}
	if byVUs {
		doc.Search.Start, doc.Search.StartVUs = 0, int(opts.Start)
	}
	stepper := &drive.Stepper{Plan: p, SLO: slo, StepMax: f.stepMax, Steadiness: st, Workers: f.workers, Version: version(), VUs: byVUs}
	search := &drive.Search{Dir: dir, Doc: doc, Opts: opts, SLO: slo, Steps: stepper, MinStep: st.MinDuration()}
	if byVUs {
		search.Check = func(index int, level float64) error {
			return fitsOpenFiles(int(level), fmt.Sprintf("step %d (%s)", index, opts.Unit(level)))
		}
	}
	return &capacitySearch{Search: search, plan: p, stepper: stepper}, nil
}

func runCapacity(ctx context.Context, io *stdio, path string, f *capacityFlags) error {
	s, err := prepareCapacity(path, f)
	if err != nil {
		return usageError(err)
	}
	if err := store.CheckWritable(s.Dir); err != nil {
		return usageError(fmt.Errorf("capacity: --out: %w", err))
	}
	if err := s.Resume(f.fresh); err != nil {
		return searchError(err)
	}
	live, err := startLiveAs(ctx, io, &quickFlags{dashboard: f.dashboard, dashboardLinger: f.dashboardLinger, open: f.open,
		metricsAddr: f.metricsAddr, metricsLinger: f.metricsLinger, out: s.Dir, json: f.json}, "capacity")
	if err != nil {
		return err
	}
	s.live = live
	prog := newProgress(io, result.Settings{})
	logf := func(format string, args ...any) {
		prog.clear()
		fmt.Fprintf(io.err, format+"\n", args...)
	}
	answer, err := s.search(ctx, logf, prog.update, prog.done)
	live.result(nil, err)
	defer live.close()
	if err != nil {
		return err
	}
	if f.json {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s.Doc); err != nil {
			return failedError(err)
		}
		if _, err := io.out.Write(buf.Bytes()); err != nil {
			return failedError(err)
		}
	} else if err := s.Doc.WriteText(io.out); err != nil {
		return failedError(err)
	}
	var crashed bool
	for _, r := range s.Doc.Steps {
		crashed = crashed || r.Stop == capacity.ServerCrashed
	}
	switch {
	case crashed:
		return failedError(fmt.Errorf("capacity: %s; the steps are in %s", answer.Note, s.Dir))
	case answer.Rate == 0 && !answer.AtLeast: // a rate, or VUs
		return thresholdError(fmt.Errorf("capacity: %s", answer.Note))
	}
	return nil
}

// search runs the search (drive.Search.Run) with the live outputs and the
// progress line as its observer. The error is a usageError or
// failedError, and wraps capacity.ErrInterrupted when ctx ended a step.
func (s *capacitySearch) search(ctx context.Context, logf func(string, ...any), onProgress func(runner.Progress), stepDone func()) (capacity.Answer, error) {
	if s.inExperiment {
		// The experiment's options already feed the live figures and
		// count its runs (a search is one); only the page's search part
		// is the search's.
		s.stepper.OnProgress = onProgress
	} else {
		s.stepper.OnProgress = s.live.progress(onProgress)
		if s.live != nil {
			s.stepper.OnInterval = s.live.onInterval()
		}
	}
	s.Log, s.Observer = logf, &searchObserver{s: s, stepDone: stepDone}
	answer, err := s.Run(ctx)
	if err != nil {
		return answer, searchError(err)
	}
	return answer, nil
}

// searchError is a usageError for a drive.InputError (exit 2), else a
// failedError.
func searchError(err error) error {
	if ie := (*drive.InputError)(nil); errors.As(err, &ie) {
		return usageError(err)
	}
	return failedError(err)
}

// searchObserver is a search's live outputs (the dashboard's search, the
// live figures' runs) and its progress line.
type searchObserver struct {
	s        *capacitySearch
	stepDone func()
}

func (o *searchObserver) SearchStarted() { o.s.liveStart() }

func (o *searchObserver) StepStarted(index int, level float64, phase capacity.Phase) {
	o.s.liveStepStarted(index, level, phase)
}

func (o *searchObserver) StepDone(r capacity.StepRecord, kept bool) { o.s.liveStep(r, kept) }

func (o *searchObserver) StepEnded() {
	if o.s.live != nil && !o.s.inExperiment {
		o.s.live.live.RunEnded()
	}
	if o.stepDone != nil {
		o.stepDone()
	}
}

func (o *searchObserver) SearchEnded() {
	s := o.s
	if s.live != nil && s.live.board != nil {
		s.live.board.SearchEnded(dashboard.SearchEnd{Headline: s.Doc.Headline(), Answer: s.Doc.Answer(), AtLeast: s.Doc.Capacity.AtLeast,
			Note: s.Doc.Note, Steps: len(s.Doc.Steps), Dir: s.Dir})
	}
}

// liveStart tells the dashboard what the search is: its SLO, with a line
// for each latency clause, and its most steps.
func (s *capacitySearch) liveStart() {
	if s.live == nil || s.live.board == nil {
		return
	}
	ds := dashboard.Search{Name: s.Doc.Name, By: s.Doc.Search.By, SLO: s.Doc.SLO, MaxSteps: s.Doc.Search.MaxSteps,
		Plan: s.Doc.Search.Plan(s.stepper.Steadiness.MinDuration().Seconds())}
	for _, t := range s.SLO {
		if t.Metric.Unit() != threshold.Milliseconds {
			continue
		}
		l := dashboard.SLOLine{Clause: t.Text, Ms: t.Value}
		if t.Aggregate == threshold.Percentile {
			l.Quantile = t.Quantile
		}
		ds.Lines = append(ds.Lines, l)
	}
	s.live.board.SearchStarted(ds)
}

// liveStepStarted tells the dashboard that step index begins at level, and
// marks a run as going in the live figures.
func (s *capacitySearch) liveStepStarted(index int, level float64, phase capacity.Phase) {
	if s.live == nil {
		return
	}
	if !s.inExperiment {
		s.live.runStarted()
	}
	if s.live.board != nil {
		s.live.board.SearchStep(dashboard.SearchStep{Index: index, MaxSteps: s.Doc.Search.MaxSteps, Level: level, Unit: s.Opts.Unit(level), Phase: string(phase)})
	}
}

// liveStep gives the dashboard a finished step (kept: resumed from the
// directory).
func (s *capacitySearch) liveStep(r capacity.StepRecord, kept bool) {
	if s.live == nil || s.live.board == nil {
		return
	}
	level := r.Rate
	if r.VUs > 0 {
		level = float64(r.VUs)
	}
	s.live.board.SearchStep(dashboard.SearchStep{Index: r.Index, MaxSteps: s.Doc.Search.MaxSteps, Level: level, Unit: s.Opts.Unit(level),
		Phase: string(r.Phase), Done: true, Kept: kept, Holds: r.Holds, Clause: r.Clause, Throughput: r.Throughput,
		P: [3]float64{r.P50, r.P95, r.P99}, ErrorRate: r.ErrorRate, DurationS: r.DurationS})
}

// capacityRunPoint makes each run of an experiment whose plan has a
// capacity: section a capacity search, in the run's directory (its
// capacity.json, steps/NNN/ and reports; an interrupted one resumes). The
// result is that of the first step at the answer (of the first step, with
// none), with the answer in result.Capacity, which the experiment's verdict
// compares as its capacity figure.
func capacityRunPoint(logf func(string, ...any), prog *progress, live *liveOutputs) func(context.Context, *plan.Plan, runner.Options) (*result.Result, error) {
	return func(ctx context.Context, p *plan.Plan, ro runner.Options) (*result.Result, error) {
		s, err := newCapacitySearch(p, capacityDefaults(ro.Dir, ro.Workers), p.File)
		if err != nil {
			return nil, err
		}
		if err := s.Resume(false); err != nil {
			return nil, searchError(err)
		}
		// run --dashboard, --metrics-addr: the steps feed the live figures,
		// and the dashboard draws the search as loadlab capacity's does.
		s.stepper.OnInterval = ro.OnInterval
		s.live, s.inExperiment = live, true
		answer, err := s.search(ctx, func(format string, args ...any) { logf("  "+format, args...) }, ro.OnProgress, prog.done)
		if errors.Is(err, capacity.ErrInterrupted) {
			// Not recorded: resuming the experiment resumes the search.
			return &result.Result{Summary: result.Summary{Interrupted: true}}, nil
		}
		if err != nil {
			return nil, err
		}
		at := -1
		if len(answer.AtAnswer) > 0 {
			at = answer.AtAnswer[0]
		}
		var res *result.Result
		for _, i := range []int{at, 0} {
			if i >= 0 && i < len(s.Results) && s.Results[i] != nil {
				res = s.Results[i]
				break
			}
		}
		if res == nil {
			return nil, fmt.Errorf("capacity search in %s: no step kept a result", ro.Dir)
		}
		logf("  capacity: %s", s.Doc.Headline())
		if s.Doc.Bottleneck != "" {
			logf("  bottleneck: %s", s.Doc.Bottleneck)
		}
		c := s.Doc.Capacity
		res.Capacity = &result.Capacity{By: s.Doc.Search.By, RatePerS: c.RatePerS, VUs: c.VUs, AtLeast: c.AtLeast, Steps: len(s.Doc.Steps)}
		for _, st := range s.Doc.Steps {
			if st.Stop == capacity.ServerCrashed {
				return res, &runner.ServerError{Err: fmt.Errorf("capacity search: %s", answer.Note)}
			}
		}
		return res, nil
	}
}

// capacityDefaults are the flags of loadlab capacity as given none: the
// plan's capacity: section, or the command's defaults.
func capacityDefaults(dir string, workers int) *capacityFlags {
	return &capacityFlags{out: dir, workers: workers, by: "rate", precision: "2%", confirm: capacity.DefaultConfirm, stepMax: capacity.DefaultStepMax}
}
