package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
)

// duetRuns is the runs of a duet with --rounds auto.
const duetRuns = 10

// DuetFile is where loadlab ab --duet writes its verdict.
const DuetFile = "duet.json"

// duetPlan is one plan of two scenarios, A and B, each under the same load
// of its own, all at once: one load generator, identical schedules, each
// side its own VUs.
func duetPlan(urlA, urlB string, f *abFlags, runs int) []byte {
	load := fmt.Sprintf("closed: { vus: %d, duration: %s }", f.connections, f.duration)
	if f.rate.rate != nil {
		load = fmt.Sprintf("open: { rate: %s, duration: %s, max_vus: %d }", strconv.Quote(f.rate.String()), f.duration, f.connections)
	}
	warmup := ""
	if f.warmup > 0 {
		warmup = fmt.Sprintf("warmup: %s\n", f.warmup)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: duet\nrepeat: %d\n%sscenarios:\n", runs, warmup)
	for _, s := range []struct{ name, url string }{{"A", urlA}, {"B", urlB}} {
		fmt.Fprintf(&b, "  %s:\n    load: { %s }\n    steps:\n      - get: %s\n        name: %s\n", s.name, load, strconv.Quote(s.url), s.name)
	}
	return []byte(b.String())
}

func runDuet(ctx context.Context, io *stdio, args []string, f *abFlags, e *plan.Experiment, rules []experiment.Rule) error {
	urlA, urlB := args[0], args[0]
	if len(args) == 1 && !f.aa && !looksLikeURL(urlA) {
		return runPlanDuet(ctx, io, args, f, e, rules) // one plan, --set-a and --set-b
	}
	switch {
	case f.aa && len(args) != 1:
		return usageError(errors.New("ab: --aa runs A against itself: give one URL"))
	case !f.aa && len(args) != 2:
		return usageError(errors.New("ab: --duet takes two URLs, A and B (or one with --aa), two plans, or one plan with --set-a and --set-b"))
	case len(args) == 2:
		urlB = args[1]
	}
	if !looksLikeURL(urlA) && !looksLikeURL(urlB) {
		return runPlanDuet(ctx, io, args, f, e, rules)
	}
	for _, u := range []string{urlA, urlB} {
		if !looksLikeURL(u) {
			return usageError(fmt.Errorf("ab: --duet takes two URLs or two plans (or one plan and --set-a/--set-b), not one of each; %s is not a URL", u))
		}
	}
	if len(f.set)+len(f.setA)+len(f.setB) > 0 {
		return usageError(errors.New("ab: --set, --set-a and --set-b change plans; --duet takes two URLs"))
	}
	if f.connections < 1 || f.duration <= 0 {
		return usageError(fmt.Errorf("ab: -c %d -d %s: want at least 1 connection and a positive duration", f.connections, f.duration))
	}
	runs, err := duetRunCount(e, rules)
	if err != nil {
		return err
	}
	data := duetPlan(urlA, urlB, f, runs)
	env, err := parseEnv(f.env)
	if err != nil {
		return usageError(fmt.Errorf("ab: %w", err))
	}
	popts := plan.Options{Env: env, LookupEnv: os.LookupEnv}
	load := func(o plan.Options) (*plan.Plan, error) { return plan.Parse("ab --duet", data, o) }
	p, err := load(popts)
	if err != nil {
		return usageError(err)
	}
	out := f.out
	if out == "" {
		out = "results/duet"
	}
	qf := &quickFlags{out: out, fresh: f.fresh, workers: f.workers, summary: f.summary}
	var v *experiment.DuetVerdict
	return runExperimentWith(ctx, io, load, p, popts, qf, experimentHooks{
		head: func(o *experiment.Outcome) {
			v = experiment.Duet(o.Results(), "A", "B")
			fmt.Fprintln(io.out, report.DuetLine(v))
			for _, l := range report.DuetSides(v) {
				fmt.Fprintln(io.out, l)
			}
			for _, u := range v.Unlike {
				fmt.Fprintf(io.out, "  not alike: %s\n", u)
			}
			fmt.Fprintln(io.out)
			if data, err := json.MarshalIndent(v, "", "  "); err == nil {
				os.WriteFile(filepath.Join(out, DuetFile), append(data, '\n'), 0o644)
			}
		},
		check: func(*experiment.Outcome) error { return duetCheck(v, rules) },
	})
}

// duetRunCount is a duet's runs (--rounds auto: duetRuns), once its
// --fail-on rules are ones a duet judges.
func duetRunCount(e *plan.Experiment, rules []experiment.Rule) (int, error) {
	for _, r := range rules {
		if r.Figure != experiment.FigureThroughput && r.Figure != experiment.FigureP95 {
			return 0, usageError(fmt.Errorf("ab: --fail-on %q: a duet judges throughput and p95", r.Text))
		}
	}
	if !e.Auto {
		return e.Repeat, nil
	}
	if e.MinEffect > 0 {
		return 0, usageError(fmt.Errorf("ab: --min-effect is for paired rounds; a duet runs --rounds N runs (default %d)", duetRuns))
	}
	return duetRuns, nil
}

// duetCheck applies --fail-on to a duet's ratios: beyond a rule's limit and
// significant fails it.
func duetCheck(v *experiment.DuetVerdict, rules []experiment.Rule) error {
	var why []string
	for _, r := range rules {
		f := v.Throughput
		if r.Figure == experiment.FigureP95 {
			f = v.P95
		}
		if f == nil || f.Ratio == 0 {
			continue
		}
		change := f.Ratio - 1
		beyond := r.Limit >= 0 && change > r.Limit || r.Limit < 0 && change < r.Limit
		if beyond && f.Significant {
			why = append(why, fmt.Sprintf("%s: %+.2f%% (duet, p=%.3f)", r.Text, 100*change, f.P))
		}
	}
	if len(why) > 0 {
		return thresholdError(fmt.Errorf("ab: regression: %s", strings.Join(why, "; ")))
	}
	return nil
}
