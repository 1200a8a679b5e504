package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
)

// abParam is the param of the two-point experiment loadlab ab builds: its
// values A and B are the two sides.
const abParam = "side"

// abFlags are loadlab ab's flags.
type abFlags struct {
	connections int
	duration    time.Duration
	rate        rateFlag
	warmup      time.Duration
	repeat      string
	maxRepeat   int
	minEffect   string
	failOn      []string
	out         string
	fresh       bool
	set         []string
	setA, setB  []string
	env         []string
	aa          bool
	duet        bool
	summary     summaryFlag
	workers     int
	json        bool
}

func newABCommand(io *stdio) *cobra.Command {
	f := abFlags{summary: summaryFlag{form: report.SummaryCompact}}
	c := &cobra.Command{
		Use:   "ab A B | ab PLAN.yaml --set-a K=V --set-b K=V",
		Short: "A quick A/B: two URLs, two plans or two variants of one plan, in paired rounds",
		Long: `Compare A with B on this machine, as it is. loadlab ab builds an experiment of
two points, A and B, and runs them in rounds: each round runs A and B once, in
a shuffled order, and the verdict compares B with A within each round (the
Wilcoxon signed-rank test on the per-round ratios, with a Hodges-Lehmann
interval), so that a slow phase of the machine that hits a whole round
cancels out. Its first line is the answer:

  B is 7.4% slower (paired, p=0.002, 8 rounds; noise floor 1.9%)

then the experiment's compact summary; experiment.json, report.html and the
runs are in --out (default results/ab).

A and B are each a URL (GET, closed load of -c connections for -d, or open
load at --rate) or a plan file without params; or one plan and --set-a /
--set-b, the two variants of it (--set applies to both). Two URLs differ
in their port or host: that is what is under test, not a mismatch.

--rounds auto (the default) adds rounds until throughput's change is decided,
from 6 rounds up to --max-rounds (20), with the alpha spent over the looks
(Lan-DeMets O'Brien-Fleming); --rounds N runs N rounds. --min-effect 2% stops,
too, when the change's interval lies inside ±2%.

--duet runs A and B at the same time instead, under one load generator
with identical schedules (the same load, each side its own VUs): the same
interference hits both, and the verdict is on each run's ratio B/A, with a
Hodges-Lehmann interval and the Wilcoxon signed-rank test (Bulej et al., Duet
Benchmarking, ICPE 2020); --rounds auto is 10 runs. The line says NOT ALIKE
when the two sides were not treated alike: the load generator saturated, or
one side had errors, timeouts, dropped or late arrivals the other did not.
duet.json holds it. On a noisy machine, servers on split CPU sets, or left
to the scheduler, gave ratios far noisier than on one (docs/benchmarks.md,
bench/noise.sh), so the servers should share one CPU set.

A duet takes two URLs (servers already running: start them on one CPU set,
taskset -c 0 ...), or two plans, or one plan and --set-a/--set-b. With plans,
every run starts both plans' servers afresh (server:, each on a port of its
own), waits until both are ready, and starts both loads at one instant with
one seed; the servers are stopped after each run. Unless a plan sets
server.limits.cpus, both servers get the first half of the CPUs loadlab may
use. --warmup is then the start of every run, not measured (each run's
servers are new). Each run's results and server logs are in
--out/run-N/A and /B.

--aa runs A against itself: the noise floor of this machine, and a check that
the verdict finds no change where there is none. With --duet, --aa sends
both sides to the one server, which then shares its CPU between them: that
is the noise of the load generator, not of two server processes. For the
noise floor of two, start a second copy of A and give both URLs
(bench/noise.sh does).

--fail-on, as in loadlab compare, exits 3 when B is worse than A beyond a
rule: 'throughput -5%', 'p95 +10%'. It judges the verdict's change (paired
when there are 6 complete rounds or more).`,
		Example: `  loadlab ab http://127.0.0.1:8080/ http://127.0.0.1:8081/ -c 10 -d 5s
  loadlab ab main.yaml branch.yaml --rounds 10 --fail-on 'throughput -5%'
  loadlab ab plan.yaml --set-a server.env.WEB_CONCURRENCY=2 --set-b server.env.WEB_CONCURRENCY=4
  loadlab ab --aa http://127.0.0.1:8080/ --rounds 8
  loadlab ab --duet plan.yaml --set-b vars.port=8081 --set-b server.env.WEB_CONCURRENCY=4`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			return runAB(c.Context(), io, args, &f)
		},
	}
	fl := c.Flags()
	fl.IntVarP(&f.connections, "connections", "c", 10, "with URLs: connections (closed load), or the most with --rate")
	fl.DurationVarP(&f.duration, "duration", "d", 5*time.Second, "with URLs: each run's length")
	fl.Var(&f.rate, "rate", "with URLs: open load at this rate (100/s) instead of closed load")
	fl.DurationVar(&f.warmup, "warmup", 0, "a run of each side before the rounds, not measured")
	fl.StringVar(&f.repeat, "rounds", "auto", "rounds: auto (until decided) or a number")
	fl.IntVar(&f.maxRepeat, "max-rounds", plan.DefaultMaxRepeat, "with --rounds auto: the most rounds")
	fl.StringVar(&f.minEffect, "min-effect", "", "with --rounds auto: stop, too, when the change's interval lies inside ±this (2%)")
	fl.StringArrayVar(&f.failOn, "fail-on", nil, "exit 3 when B is worse than A beyond this: 'FIGURE +N%' or 'FIGURE -N%' (repeatable)")
	fl.StringVar(&f.out, "out", "", "the experiment's results directory (default results/ab)")
	fl.BoolVar(&f.fresh, "fresh", false, "start over in --out, dropping its runs")
	fl.StringArrayVar(&f.set, "set", nil, "with plans: override a plan value on both sides (key.path=value)")
	fl.StringArrayVar(&f.setA, "set-a", nil, "override a plan value on side A only")
	fl.StringArrayVar(&f.setB, "set-b", nil, "override a plan value on side B only")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "with plans: a plan variable or env value, KEY=VALUE")
	fl.BoolVar(&f.aa, "aa", false, "run A against A: the noise floor; give one side")
	fl.BoolVar(&f.duet, "duet", false, "run A and B at the same time under one load generator, with identical schedules (two URLs, or two plans' servers started each run); the verdict is on the ratio B/A of each run")
	fl.Var(&f.summary, "summary", summaryUsage)
	fl.BoolVar(&f.json, "json", false, "print the experiment's outcome as JSON (as loadlab report DIR --json), instead of the answer and the summary")
	fl.IntVar(&f.workers, "event-loops", 0, "event loops (threads) sending load (default: the CPUs loadlab may use)")
	return c
}

// abSide loads one side's plan.
type abSide struct {
	name string // the URL or the plan file, for the messages
	load func(plan.Options) (*plan.Plan, error)
}

// abSides reads the arguments into sides A and B.
func abSides(args []string, f *abFlags) (a, b abSide, err error) {
	switch {
	case f.aa && len(args) != 1:
		return a, b, errors.New("ab: --aa runs A against itself: give one URL or plan")
	case !f.aa && len(args) == 1 && len(f.setA)+len(f.setB) == 0:
		return a, b, errors.New("ab: give A and B (two URLs or plans), one plan with --set-a and --set-b, or one side with --aa")
	}
	bArg := args[0]
	if len(args) == 2 {
		bArg = args[1]
	}
	if a, err = abSideOf(args[0], f, f.setA); err != nil {
		return a, b, err
	}
	setB := f.setB
	if f.aa {
		setB = f.setA
	}
	b, err = abSideOf(bArg, f, setB)
	return a, b, err
}

// abSideOf is one side: a URL becomes a plan of one GET under the flags'
// load; a plan file is loaded with --set and the side's own sets.
func abSideOf(arg string, f *abFlags, own []string) (abSide, error) {
	set := append(slices.Clone(f.set), own...)
	if looksLikeURL(arg) {
		if len(set) > 0 {
			return abSide{}, fmt.Errorf("ab: --set, --set-a and --set-b change plans; %s is a URL", arg)
		}
		data, err := abURLPlan(arg, f)
		if err != nil {
			return abSide{}, err
		}
		return abSide{name: arg, load: func(o plan.Options) (*plan.Plan, error) {
			o.Params = nil
			return plan.Parse("ab "+arg, data, o)
		}}, nil
	}
	if _, err := os.Stat(arg); err != nil {
		return abSide{}, fmt.Errorf("ab: %s is neither a URL (http:// or https://) nor a plan file: %w", arg, err)
	}
	return abSide{name: arg, load: func(o plan.Options) (*plan.Plan, error) {
		o.Params = nil
		o.Set = append(slices.Clone(o.Set), set...)
		return plan.Load(arg, o)
	}}, nil
}

// abURLPlan is the plan of a URL side: one GET, the load of the flags.
func abURLPlan(raw string, f *abFlags) ([]byte, error) {
	if f.connections < 1 {
		return nil, fmt.Errorf("ab: -c %d: want at least 1 connection", f.connections)
	}
	if f.duration <= 0 {
		return nil, fmt.Errorf("ab: -d %s: want a positive duration", f.duration)
	}
	load := fmt.Sprintf("closed: { vus: %d, duration: %s }", f.connections, f.duration)
	if f.rate.rate != nil {
		load = fmt.Sprintf("open: { rate: %s, duration: %s, max_vus: %d }", strconv.Quote(f.rate.String()), f.duration, f.connections)
	}
	return []byte(fmt.Sprintf("name: ab\nsteps:\n  - get: %s\n    name: GET\nload:\n  %s\n", strconv.Quote(raw), load)), nil
}

func runAB(ctx context.Context, io *stdio, args []string, f *abFlags) error {
	var rules []experiment.Rule
	for _, s := range f.failOn {
		r, err := experiment.ParseRule(s)
		if err != nil {
			return usageError(fmt.Errorf("ab: --fail-on: %w", err))
		}
		rules = append(rules, r)
	}
	e := &plan.Experiment{Vary: plan.OneAtATime, Baseline: map[string]int{abParam: 0}, Warmup: f.warmup,
		Params: []plan.Param{{Name: abParam, Values: []plan.ParamValue{{Label: "A", Value: "A"}, {Label: "B", Value: "B"}}}}}
	switch {
	case f.repeat == "auto":
		if f.maxRepeat < plan.MinAutoRepeat || f.maxRepeat > plan.MaxRepeat {
			return usageError(fmt.Errorf("ab: --max-rounds %d: want %d to %d", f.maxRepeat, plan.MinAutoRepeat, plan.MaxRepeat))
		}
		e.Auto, e.Repeat = true, f.maxRepeat
		if f.minEffect != "" {
			v, err := strconv.ParseFloat(strings.TrimSuffix(f.minEffect, "%"), 64)
			if err != nil || !strings.HasSuffix(f.minEffect, "%") || v <= 0 || v >= 100 {
				return usageError(fmt.Errorf("ab: --min-effect %q: want a percentage such as 2%%", f.minEffect))
			}
			e.MinEffect = v / 100
		}
	default:
		n, err := strconv.Atoi(f.repeat)
		if err != nil || n < 2 || n > plan.MaxRepeat {
			return usageError(fmt.Errorf("ab: --rounds %q: want auto or a number of rounds from 2 to %d", f.repeat, plan.MaxRepeat))
		}
		if f.minEffect != "" {
			return usageError(errors.New("ab: --min-effect is for --rounds auto"))
		}
		e.Repeat = n
	}
	if f.duet {
		if f.json {
			return usageError(errors.New("ab: --json with --duet: the duet's verdict is in DIR/duet.json, and loadlab report DIR --json prints the experiment"))
		}
		return runDuet(ctx, io, args, f, e, rules)
	}
	a, b, err := abSides(args, f)
	if err != nil {
		return usageError(err)
	}
	env, err := parseEnv(f.env)
	if err != nil {
		return usageError(fmt.Errorf("ab: %w", err))
	}
	popts := plan.Options{Env: env, LookupEnv: os.LookupEnv}
	pa, err := a.load(popts)
	if err != nil {
		return usageError(err)
	}
	pb, err := b.load(popts)
	if err != nil {
		return usageError(err)
	}
	for _, p := range []*plan.Plan{pa, pb} {
		if p.Experiment != nil {
			return usageError(fmt.Errorf("ab: %s: this plan is an experiment (params or repeat); ab compares two single plans, and does the repeating itself", p.Experiment.Pos))
		}
		if p.Capacity != nil {
			return usageError(fmt.Errorf("ab: %s: a capacity: section is for loadlab capacity; ab compares runs of a fixed load", p.Capacity.Pos))
		}
	}
	// The experiment's own plan: A's, with the two points, and a source
	// that holds both sides', so that its fingerprint changes with either.
	wrapper := *pa
	wrapper.Experiment = e
	wrapper.Name = "ab"
	wrapper.Source = fmt.Appendf(nil, "# loadlab ab: side A\n%s\n# side B\n%s\n# --set-b %q\n# repeat %s max %d min-effect %s aa %t\n",
		pa.Source, pb.Source, b.name+" "+strings.Join(f.setB, " "), f.repeat, f.maxRepeat, f.minEffect, f.aa)
	load := func(o plan.Options) (*plan.Plan, error) {
		if v, _ := o.Params[abParam].(string); v == "B" {
			return b.load(o)
		}
		return a.load(o)
	}
	out := f.out
	if out == "" {
		out = "results/ab"
	}
	qf := &quickFlags{out: out, fresh: f.fresh, workers: f.workers, summary: f.summary, json: f.json}
	return runExperimentWith(ctx, io, load, &wrapper, popts, qf, experimentHooks{
		head: func(o *experiment.Outcome) {
			fmt.Fprintln(io.out, report.ABLine(o, abParam+"=B"))
			fmt.Fprintln(io.out)
		},
		check: func(o *experiment.Outcome) error { return abCheck(o, rules) },
	})
}

// abRow is side B's row of a figure, and the table; nil without one.
func abRow(v *experiment.Verdict, id experiment.FigureID) (*experiment.FigureTable, *experiment.FigureRow) {
	return v.Row(id, abParam+"=B")
}

// abCheck applies --fail-on to the verdict's change of B against A: a
// change beyond a rule's limit fails it when it is significant, or, with
// too few runs for any test, by the medians (as compare does).
func abCheck(o *experiment.Outcome, rules []experiment.Rule) error {
	var why []string
	for _, r := range rules {
		t, row := abRow(o.Verdict, r.Figure)
		if row == nil || row.Change == nil {
			return usageError(fmt.Errorf("ab: --fail-on %q: %w", r.Text, experiment.ErrNoFigure))
		}
		change := row.Change.Delta
		if r.Figure == experiment.FigureErrorRate {
			for _, base := range t.Rows {
				if base.Baseline {
					change = (row.Median - base.Median) / 100
				}
			}
		}
		beyond := r.Limit >= 0 && change > r.Limit || r.Limit < 0 && change < r.Limit
		switch {
		case !beyond:
		case row.Change.Significant():
			why = append(why, fmt.Sprintf("%s: %s", r.Text, row.Versus))
		case row.Change.Reason == experiment.TooFewRuns:
			why = append(why, fmt.Sprintf("%s: %s (too few runs for a test: the medians decided)", r.Text, row.Versus))
		}
	}
	if len(why) > 0 {
		return thresholdError(fmt.Errorf("ab: regression: %s", strings.Join(why, "; ")))
	}
	return nil
}
