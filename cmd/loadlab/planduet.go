package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loadlab/loadlab/internal/drive"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
)

// runPlanDuet is loadlab ab --duet of two plans (or one plan's two
// variants): each run starts both plans' servers, each on its own port and
// both on the same CPUs, and sends both loads at once from this process
// (drive.Duet); the verdict is on each run's ratio B/A.
func runPlanDuet(ctx context.Context, io *stdio, args []string, f *abFlags, e *plan.Experiment, rules []experiment.Rule) error {
	a, b, err := abSides(args, f)
	if err != nil {
		return usageError(err)
	}
	env, err := parseEnv(f.env)
	if err != nil {
		return usageError(fmt.Errorf("ab: %w", err))
	}
	popts := plan.Options{Env: env, LookupEnv: os.LookupEnv}
	pa, pb, err := loadDuetSides(a, b, popts)
	if err != nil {
		return err
	}
	if pa.Server != nil && pb.Server != nil && !pinsCPUs(pa) && !pinsCPUs(pb) {
		if n, cpus := duetCPUs(); n > 0 {
			popts.Set = []string{fmt.Sprintf("server.limits.cpus=%d", n)}
			if pa, pb, err = loadDuetSides(a, b, popts); err != nil {
				return err
			}
			fmt.Fprintf(io.err, "duet: both servers on CPU %s (server.limits.cpus; set it in the plans to choose)\n", cpus)
		}
	}
	runs, err := duetRunCount(e, rules)
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = "results/duet"
	}
	if err := freshDuetDir(out, f.fresh); err != nil {
		return err
	}
	nameA, nameB := a.name, b.name
	if nameA == nameB { // one plan's two variants
		nameA += duetSets(" --set-a", f.setA)
		nameB += duetSets(" --set-b", f.setB)
	}
	fmt.Fprintf(io.err, "duet: %s against %s, %d runs at once, results in %s\n", nameA, nameB, runs, out)
	got, err := drive.Duet(ctx, pa, pb, drive.DuetOptions{
		Runs: runs, Dir: out, Workers: f.workers, Warmup: f.warmup, Version: version(),
		OnRun: func(i int, ra, rb *result.Result, errA, errB error) {
			fmt.Fprintf(io.err, "duet: run %d of %d: %s\n", i, runs, duetRunLine(ra, rb, errA, errB))
		},
	})
	if got == nil {
		return failedError(fmt.Errorf("ab: %w", err))
	}
	v := experiment.DuetOfSides(got.A, got.B, f.warmup)
	fmt.Fprintln(io.out, report.DuetLine(v))
	for _, l := range report.DuetSides(v) {
		fmt.Fprintln(io.out, l)
	}
	for _, u := range v.Unlike {
		fmt.Fprintf(io.out, "  not alike: %s\n", u)
	}
	fmt.Fprintf(io.out, "  runs: %s/run-N/A and /B (result.json, server.log); seed %d\n", out, got.Seed)
	data, jerr := json.MarshalIndent(v, "", "  ")
	if jerr == nil {
		jerr = os.WriteFile(filepath.Join(out, DuetFile), append(data, '\n'), 0o644)
	}
	switch {
	case jerr != nil:
		return failedError(fmt.Errorf("ab: writing %s: %w", DuetFile, jerr))
	case got.Interrupted:
		return failedError(fmt.Errorf("ab: interrupted; the runs so far are in %s, and %s judges the %d whole runs", out, DuetFile, v.Runs))
	case err != nil:
		return failedError(fmt.Errorf("ab: %w", err))
	}
	return duetCheck(v, rules)
}

// loadDuetSides loads both plans of a plan duet and refuses what a duet
// cannot run: an experiment or a capacity search, and two servers that
// would listen on one port (run at once, the second would fail to start,
// or its ready check would be answered by the first).
func loadDuetSides(a, b abSide, popts plan.Options) (*plan.Plan, *plan.Plan, error) {
	pa, err := a.load(popts)
	if err != nil {
		return nil, nil, usageError(err)
	}
	pb, err := b.load(popts)
	if err != nil {
		return nil, nil, usageError(err)
	}
	for _, p := range []*plan.Plan{pa, pb} {
		if p.Experiment != nil {
			return nil, nil, usageError(fmt.Errorf("ab: %s: this plan is an experiment (params or repeat); a duet runs two single plans, and does the repeating itself", p.Experiment.Pos))
		}
		if p.Capacity != nil {
			return nil, nil, usageError(fmt.Errorf("ab: %s: a capacity: section is for loadlab capacity; a duet compares runs of a fixed load", p.Capacity.Pos))
		}
	}
	if pa.Server != nil && pb.Server != nil {
		sa, errA := pa.ServerSpec(nil)
		sb, errB := pb.ServerSpec(nil)
		if err := errors.Join(errA, errB); err != nil {
			return nil, nil, usageError(err)
		}
		at := ""
		switch {
		case pa.Target != nil && pb.Target != nil && pa.Target.Host == pb.Target.Host:
			at = pa.Target.Host
		case sa.Ready != "" && sa.Ready == sb.Ready:
			at = sa.Ready
		}
		if at != "" {
			return nil, nil, usageError(fmt.Errorf("ab: --duet runs both servers at once, and both would listen at %s: give side B a port of its own (--set-b target=http://127.0.0.1:PORT, and the port in server.run and server.ready, or a plan variable they all use: --set-b vars.port=PORT)", at))
		}
	}
	return pa, pb, nil
}

// pinsCPUs reports whether a plan sets its server's CPUs.
func pinsCPUs(p *plan.Plan) bool {
	return p.Server != nil && p.Server.Limits != nil && p.Server.Limits.CPUs.Src != ""
}

// freshDuetDir makes sure a plan duet does not mix its runs with an
// earlier duet's in dir: refused unless fresh, which removes them.
func freshDuetDir(dir string, fresh bool) error {
	old, _ := filepath.Glob(filepath.Join(dir, "run-*"))
	if _, err := os.Stat(filepath.Join(dir, DuetFile)); err == nil {
		old = append(old, filepath.Join(dir, DuetFile))
	}
	if len(old) == 0 {
		return nil
	}
	if !fresh {
		return usageError(fmt.Errorf("ab: %s holds an earlier duet's runs: --fresh drops them, or give another --out", dir))
	}
	for _, p := range old {
		if err := os.RemoveAll(p); err != nil {
			return failedError(fmt.Errorf("ab: --fresh: %w", err))
		}
	}
	return nil
}

// duetRunLine is one run of a plan duet, for the progress on stderr.
func duetRunLine(a, b *result.Result, errA, errB error) string {
	switch {
	case errA != nil || errB != nil:
		return fmt.Sprintf("left out: %v", errors.Join(errA, errB))
	case a == nil || b == nil:
		return "not measured"
	}
	line := fmt.Sprintf("A %.1f req/s, B %.1f req/s", a.Summary.ThroughputRPS, b.Summary.ThroughputRPS)
	if a.Summary.ThroughputRPS > 0 {
		line += fmt.Sprintf(" (B/A %.3f)", b.Summary.ThroughputRPS/a.Summary.ThroughputRPS)
	}
	return line
}

// duetSets is a side's own --set-a or --set-b values, to name one plan's
// variant by.
func duetSets(flag string, set []string) string {
	var b strings.Builder
	for _, kv := range set {
		b.WriteString(flag + " " + kv)
	}
	return b.String()
}
