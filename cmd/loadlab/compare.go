package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/report"
)

func newCompareCommand(io *stdio) *cobra.Command {
	var (
		failOn         []string
		pointA, pointB string
		baseline, hist string
		last           int
		allowDifferent allowFlag
		asJSON         bool
	)
	c := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two results or experiments, and fail on a regression",
		Long: `Compare two results (result directories or result.json files) or experiments
(their results directories), figure by figure: medians with 95% confidence
intervals, and the change from A to B with a Mann-Whitney U p-value; "~" means
the difference is not significant (benchstat's rules). Of an experiment, the
runs of its baseline point are compared, or of --point-a / --point-b.

With --fail-on, the exit code is 3 when B is worse than A beyond a rule:
'p95 +10%' fails on a significant rise of p95 latency over 10%, 'throughput
-5%' on a significant fall of throughput over 5%. With too few runs for any
test to call a difference significant (the smallest p-value n1 runs against
n2 can give, 2/C(n1+n2, n1), is above 0.05: 3 against 3 or 4; 3 against 5
is tested), the change of the medians decides, and the message says so. Changes are relative, but the error
rate's are in percentage points: 'error_rate +1%' fails when it rises by
more than one point (0% to 1.5%, or 2% to 3.5%).

With --baseline history[:BRANCH], side A is the last --last runs (default 5)
of B's plan (and B's point, for an experiment) in the history (see loadlab
history), on BRANCH when given; B's own runs are left out.

Like with like: every result keeps a fingerprint of what it measured (the
load's kind and shape, the requests, the target, the server command). When A
and B differ in any of these, compare lists each difference, A against B,
and refuses (exit 2): pass --allow-different to compare them anyway, the
differences then heading the output. Two points of one experiment differ
where its params do: their differences are listed, and do not refuse.
Results written before fingerprints existed are compared with a note.

Figures: throughput, p50, p95, p99, error_rate, elapsed, cpu, rss_peak,
rss_avg, pss_peak, pss_avg.`,
		Example: `  loadlab compare results/main results/branch --fail-on 'p95 +10%' --fail-on 'throughput -5%'
  loadlab compare results/sweep results/sweep --point-a threads=5 --point-b threads=8
  loadlab compare --baseline history:main results/branch --last 10 --fail-on 'p95 +10%'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			if (baseline != "") != (len(args) == 1) {
				return usageError(errors.New("compare: give A and B, or --baseline history[:BRANCH] and B"))
			}
			var rules []experiment.Rule
			for _, s := range failOn {
				r, err := experiment.ParseRule(s)
				if err != nil {
					return usageError(fmt.Errorf("compare: --fail-on: %w", err))
				}
				rules = append(rules, r)
			}
			if baseline != "" {
				b, err := experiment.LoadSide(args[0], pointB)
				if err != nil {
					return usageError(fmt.Errorf("compare: %w", err))
				}
				a, err := historySide(baseline, b, args[0], last, hist)
				if err != nil {
					return usageError(fmt.Errorf("compare: %w", err))
				}
				return compareSides(io, a, b, rules, allowDifferent, asJSON)
			}
			a, err := experiment.LoadSide(args[0], pointA)
			if err != nil {
				return usageError(fmt.Errorf("compare: %w", err))
			}
			b, err := experiment.LoadSide(args[1], pointB)
			if err != nil {
				return usageError(fmt.Errorf("compare: %w", err))
			}
			return compareSides(io, a, b, rules, allowDifferent, asJSON)
		},
	}
	c.Flags().StringArrayVar(&failOn, "fail-on", nil, "exit 3 when B is worse than A beyond this: 'FIGURE +N%' or 'FIGURE -N%' (repeatable)")
	allowDifferent.register(c.Flags(), "compare A and B even when they measured different things (load, requests, target, server): the differences head the output; =port (or another field, comma-separated) allows only those")
	c.Flags().StringVar(&pointA, "point-a", "", "the point of experiment A to compare (default: its baseline)")
	c.Flags().StringVar(&pointB, "point-b", "", "the point of experiment B to compare (default: its baseline)")
	c.Flags().StringVar(&baseline, "baseline", "", "compare B with the history instead of A: history (any branch) or history:BRANCH")
	c.Flags().IntVar(&last, "last", 5, "with --baseline history: how many of the latest runs of B's plan make side A")
	c.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON, as loadlab report A B --format json does")
	c.Flags().StringVar(&hist, "history", "", "the history database (default $LOADLAB_HISTORY, else history.db in the user's data directory)")
	return c
}

// compareSides prints the comparison of a and b and applies the rules.
func compareSides(io *stdio, a, b experiment.Side, rules []experiment.Rule, allowDifferent allowFlag, asJSON bool) error {
	cmp := experiment.Compare(a, b)
	if err := refuseUnlike(cmp, allowDifferent, "compare"); err != nil {
		return err
	}
	render := report.Comparison
	if asJSON {
		render = report.ComparisonJSON
	}
	if err := render(io.out, cmp); err != nil {
		return failedError(err)
	}
	failures, err := cmp.Check(rules)
	if err != nil {
		if errors.Is(err, experiment.ErrNoFigure) {
			return usageError(fmt.Errorf("compare: %w", err))
		}
		return failedError(err)
	}
	if len(failures) > 0 {
		var why []string
		for _, f := range failures {
			why = append(why, report.FailureText(f))
		}
		return thresholdError(fmt.Errorf("compare: regression: %s", strings.Join(why, "; ")))
	}
	return nil
}

// refuseUnlike refuses, as invalid input (exit 2), to compare two sides
// that measured different things, unless allowed; the error lists each
// difference, A against B.
func refuseUnlike(cmp *experiment.Comparison, allowed allowFlag, command string) error {
	if !cmp.Unlike() || allowed.all {
		return nil
	}
	var lines, fields []string
	for _, d := range cmp.Differences {
		if allowed.fields[d.Field] {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s: A %s · B %s", d.Field, d.A, d.B))
		if !slices.Contains(fields, d.Field) {
			fields = append(fields, d.Field)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	hint := "pass --allow-different to compare them anyway"
	if len(fields) == 1 && fields[0] == "port" {
		// Two servers on two free ports: the one difference that does not
		// change what was measured.
		hint = "they differ only in the port: pass --allow-different=port to compare them"
	}
	return usageError(fmt.Errorf("%s: A and B measured different things, so their figures would differ for these reasons too, not only for the change under test:\n%s\n%s", command, strings.Join(lines, "\n"), hint))
}

// allowFlag is --allow-different: alone, every difference is allowed;
// =port,shape allows those fields of the fingerprint only.
type allowFlag struct {
	all    bool
	fields map[string]bool
	text   string
}

// allowFields are the names Differences gives.
var allowFields = []string{"workload", "shape", "steps", "steps (order)", "target", "port", "server", "segments"}

func (f *allowFlag) register(fl *pflag.FlagSet, usage string) {
	fl.Var(f, "allow-different", usage)
	fl.Lookup("allow-different").NoOptDefVal = "all"
}

func (f *allowFlag) Set(s string) error {
	f.text = s
	if s == "all" || s == "true" {
		f.all = true
		return nil
	}
	if s == "false" {
		f.all, f.fields = false, nil
		return nil
	}
	if f.fields == nil {
		f.fields = map[string]bool{}
	}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(allowFields, name) {
			return &flagValueError{fmt.Errorf("--allow-different=%s: %q is not a field of what a run measured; want one of %s, or --allow-different alone for all", s, name, strings.Join(allowFields, ", "))}
		}
		f.fields[name] = true
		if name == "steps" {
			f.fields["steps (order)"] = true
		}
	}
	return nil
}

func (f *allowFlag) String() string { return f.text }
func (f *allowFlag) Type() string   { return "fields" }
