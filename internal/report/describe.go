package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/spec"
	"github.com/loadlab/loadlab/internal/stats"
)

// Describe returns a copy of v with its text fields written from its data:
// each row's Cell and Versus, Against, each sweep's Recommendation and USL
// text, the box verdict's Text, and the verdict's Recommendation, Warnings, Thresholds, Passed,
// Quota and Validity. Every renderer of a verdict reads these, and
// experiment.json stores them for readers other than loadlab. A text field
// that is already written (a verdict stored by an older loadlab, without
// the data to write it again) is kept.
func Describe(v *experiment.Verdict) *experiment.Verdict {
	if v == nil {
		return nil
	}
	d := *v
	if d.Against == "" {
		d.Against = d.Baseline
		if d.ComparedParam != "" {
			d.Against = fmt.Sprintf("the same point with %s=%s", d.ComparedParam, d.ComparedValue)
		}
	}
	if d.Factor == "" {
		d.Factor = factor(v)
	}
	d.Figures = describeTables(v.Figures)
	d.Steps = describeParts(v.Steps)
	d.Scenarios = describeParts(v.Scenarios)
	if b := v.Boxes; b != nil && len(b.Text) == 0 {
		bv := *b
		bv.Text = BoxText(b)
		d.Boxes = &bv
	}
	d.Sweeps = slices.Clone(v.Sweeps)
	var recs []string
	// A step that changed on its own is the answer when there is one:
	// the whole-run figures moved because of it.
	for _, c := range d.StepChanges {
		recs = append(recs, stepChange(c))
	}
	for i := range d.Sweeps {
		s := &d.Sweeps[i]
		if s.USL != nil {
			u := *s.USL
			if u.Text == "" {
				u.Text = u.Fit().String()
			}
			s.USL = &u
		}
		if s.Recommendation == "" && len(s.Evidence) > 0 {
			s.Recommendation = recommendation(*s)
		}
		recs = append(recs, s.Recommendation)
	}
	for _, n := range d.Named {
		recs = append(recs, named(n))
	}
	if d.Recommendation == "" {
		switch {
		case len(recs) == 0:
		case d.Trust != nil:
			if line := trustLine(&d); line != "" {
				recs = append([]string{line}, recs...)
			}
		case d.Suspect.Untrusted():
			recs = append([]string{untrusted(d.Suspect)}, recs...)
		}
		d.Recommendation = strings.Join(recs, "\n")
	}
	if d.Noise == nil {
		if line := analysisLine(d.Pairing); line != "" && len(d.Figures) > 0 {
			d.Noise = append(d.Noise, line)
		}
		if line := sequentialLine(d.Sequential, d.NoiseFloor); line != "" {
			d.Noise = append(d.Noise, line)
		}
		if line := noiseFloorLine(d.NoiseFloor); line != "" {
			d.Noise = append(d.Noise, line)
		}
	}
	if d.Warnings == nil {
		d.Warnings = warnings(&d)
	}
	if d.Thresholds == nil && d.Passed == nil {
		for _, t := range d.ThresholdTallies {
			if t.Failed > 0 {
				d.Thresholds = append(d.Thresholds, fmt.Sprintf("%s failed in %d of %d runs (run %d, %s: %s)", t.Text, t.Failed, t.Runs, t.ExampleRun, t.ExamplePoint, t.ExampleDetail))
			} else {
				d.Passed = append(d.Passed, fmt.Sprintf("%s passed in all %d runs", t.Text, t.Runs))
			}
		}
	}
	if d.Quota == nil {
		for _, q := range d.QuotaTallies {
			d.Quota = append(d.Quota, fmt.Sprintf("%s: over the %s quota at peak in %d of %d runs, on average in %d", q.Point, quantity.FormatBytes(q.Bytes), q.Peak, q.Runs, q.Average))
		}
	}
	if d.Validity == nil {
		for _, t := range d.ValidityTallies {
			d.Validity = append(d.Validity, fmt.Sprintf("%s: %s in %d of %d runs (run %d: %s)", t.Point, t.Code, t.Runs, t.Of, t.ExampleRun, t.ExampleMessage))
		}
		for _, dr := range d.Drifts {
			d.Validity = append(d.Validity, driftText(dr))
		}
		if m := d.MachineDrift; m != nil {
			d.Validity = append(d.Validity, machineDriftText(m, figureName(&d, m.Figure)))
		}
	}
	return &d
}

// untrusted is the first line of a recommendation made from runs of which
// many were suspect: it says so before the pick, and what to do.
func untrusted(s *experiment.Suspect) string {
	var why []string
	for _, code := range experiment.SuspectCodes {
		if n := s.Codes[code]; n > 0 {
			why = append(why, fmt.Sprintf("%s in %d", code, n))
		}
	}
	return fmt.Sprintf("NOT TRUSTED YET: %d of %d runs were measured on a machine that could not measure them (%s; see validity below), so the differences below may be the machine's, not the settings'. Quiet the machine (or give loadlab and the server their own CPUs) and run the experiment again with --fresh.",
		s.Runs, s.Of, strings.Join(why, ", "))
}

// describeTables returns a copy of tables with each row's Cell and Versus
// written.
func describeTables(tables []experiment.FigureTable) []experiment.FigureTable {
	out := slices.Clone(tables)
	for i := range out {
		t := &out[i]
		t.Rows = slices.Clone(t.Rows)
		for j := range t.Rows {
			r := &t.Rows[j]
			if r.Cell == "" {
				r.Cell = cell(r.Spread)
			}
			if r.Versus == "" {
				r.Versus = versus(r.Change)
			}
		}
	}
	return out
}

// describeParts is describeTables for each step's or scenario's tables.
func describeParts(parts []experiment.PartVerdict) []experiment.PartVerdict {
	out := slices.Clone(parts)
	for i := range out {
		out[i].Figures = describeTables(out[i].Figures)
	}
	return out
}

// stepChange says that one step alone changed at a point: "mode=slow vs
// mode=fast: login p95 +80% (p=0.002); other steps unchanged".
func stepChange(c experiment.StepChange) string {
	return fmt.Sprintf("%s vs %s: %s %s %+.0f%% (p=%.3f); %s", c.Point, c.Reference, c.Step, c.Figure, 100*c.Change.Delta, c.Change.P, othersUnchanged(c.Figure))
}

// othersUnchanged says the rule by which the other steps did not change:
// a smaller significant change is not named (experiment.StepChangeShare).
func othersUnchanged(figure experiment.FigureID) string {
	return fmt.Sprintf("no other step's %s changed by %.0f%% or more", figure, 100*experiment.StepChangeShare)
}

// factor says which param a matrix compares (its factor), at which
// conditions, and why that one; "" when every point is compared with the
// baseline.
func factor(v *experiment.Verdict) string {
	if v.ComparedParam == "" {
		return ""
	}
	out := fmt.Sprintf("%s, each value against %s=%s", v.ComparedParam, v.ComparedParam, v.ComparedValue)
	if len(v.Conditions) > 0 {
		out += ", at each combination of " + strings.Join(v.Conditions, " and ")
	}
	switch spec.CompareReason(v.ComparedWhy) {
	case spec.CompareNamed:
		out += " (the plan's compare:)"
	case spec.CompareBaseline:
		out += " (the only param the baseline names; compare: PARAM names another)"
	case spec.CompareOlder:
		out += " (the last param in the file: the experiment was run by a loadlab before compare:, which compared along the last param)"
	default:
		out += " (the last param in the file: the plan has no compare:, and its baseline does not name one param alone; compare: PARAM names another)"
	}
	return out
}

// FailedThresholds lists each threshold that failed in some run of the
// experiment, with how often and an example.
func FailedThresholds(v *experiment.Verdict) []string {
	if v == nil {
		return nil
	}
	return Describe(v).Thresholds
}

// warnings are the verdict's warnings: unfinished points, the statistics'
// notes, what the numbers of runs allow, and what the USL fits do not say.
func warnings(v *experiment.Verdict) []string {
	var out []string
	for _, p := range v.Incomplete {
		out = append(out, fmt.Sprintf("%s: %d of %d runs done", p.Point, p.Done, p.Want))
	}
	out = append(out, v.Notes...)
	if s := v.Sampling; len(v.Figures) > 0 && s.FallsShort() {
		advice := fmt.Sprintf("set repeat: %d or more to tell differences from noise", s.RunsToTest)
		out = append(out, samplingSentence(s, runsPhrase(s, "a point"), advice))
	}
	for _, s := range v.Sweeps {
		if s.USL != nil {
			for _, w := range s.USL.Warnings {
				out = append(out, "USL fit of "+s.Param+": "+w)
			}
		}
	}
	return out
}

// runsPhrase is "3 runs a point", or "3 to 5 runs a point".
func runsPhrase(s experiment.Sampling, per string) string {
	if s.RunsMin == s.RunsMax {
		return runs(s.RunsMin) + " " + per
	}
	return fmt.Sprintf("%d to %d runs %s", s.RunsMin, s.RunsMax, per)
}

func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// samplingSentence says in one sentence what the numbers of runs allow, in
// place of benchmath's "need >= 6 samples for confidence interval at level
// 0.95" and "need >= 4 samples to detect a difference at alpha level 0.05":
// why the cells show the lowest and highest run, and why a change is
// untested, with the numbers that would do.
func samplingSentence(s experiment.Sampling, with, advice string) string {
	var parts []string
	if s.RunsMin > 1 && s.RunsMin < s.IntervalRuns {
		parts = append(parts, fmt.Sprintf("each cell shows the median and the lowest and highest run (a %.0f%% confidence interval takes %d)", 100*s.Confidence, s.IntervalRuns))
	}
	if u := s.Untested; u != nil {
		parts = append(parts, fmt.Sprintf("the changes are untested: %s against %d cannot give a p-value below %.3f, above α=%s; %s",
			runs(u.N1), u.N2, u.MinP, strconv.FormatFloat(s.Alpha, 'f', -1, 64), advice))
	}
	return "with " + with + ", " + strings.Join(parts, ", and ")
}

// cell renders a figure's runs: the median ± its 95% confidence interval
// as benchstat does; with too few runs for an interval (fewer than 6), the
// median with the lowest and highest run, which still shows the spread; one
// run alone. Numbers have four significant digits at most, in the figure's
// own unit: benchstat scales to SI prefixes, which reads oddly for MiB and
// percentages.
func cell(s experiment.Spread) string {
	switch {
	case s.N == 0:
		return ""
	case s.N == 1: // one run: no spread to show
		return number(s.Median)
	case s.Bounded:
		return number(s.Median) + " ± " + stats.Summary{N: s.N, Center: s.Median, Bounded: true, Lo: s.Lo, Hi: s.Hi}.RangeString()
	}
	return number(s.Median) + " (" + number(s.Min) + "–" + number(s.Max) + ")"
}

// cellHeading names what the cells of t hold: the median ± its confidence
// interval, or with too few runs for one, the median (lowest–highest run).
func cellHeading(t experiment.FigureTable) string {
	for _, r := range t.Rows {
		if r.Bounded || r.N < 2 {
			continue
		}
		return "median (min–max)"
	}
	return "median ± 95% CI"
}

func number(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// versus renders a change as benchstat does ("+12.00% (p=0.008 n=5)", "~
// (p=0.310 n=5)", "-8.91% (p=0.036 n=3+5)"); with too few runs for any
// test, where benchstat prints only "~", it gives the change of the medians
// and says it is untested.
func versus(c *experiment.Change) string {
	switch {
	case c == nil:
		return ""
	case c.Reason == experiment.TooFewRuns && !c.DeltaDefined:
		return fmt.Sprintf("from 0 (n=%s, untested)", sizes(c))
	case c.Reason == experiment.TooFewRuns:
		return fmt.Sprintf("%+.2f%% (n=%s, untested)", 100*c.Delta, sizes(c))
	case c.IsPaired() && c.Reason == experiment.NotPositive:
		return fmt.Sprintf("(%d rounds, a figure of 0: no ratio)", c.Rounds)
	case c.IsPaired():
		// benchstat's notation, the p and n of the paired test: "n=8
		// paired" is 8 rounds.
		return strings.TrimSuffix(benchstat(c).String(), ")") + " paired)"
	}
	return benchstat(c).String()
}

// benchstat is the change as package stats has it, to write it as
// benchstat does.
func benchstat(c *experiment.Change) stats.Comparison {
	return stats.Comparison{P: c.P, Alpha: c.Alpha, Base: stats.Summary{N: c.N1}, Test: stats.Summary{N: c.N2},
		Delta: c.Delta, DeltaDefined: c.DeltaDefined, Significant: c.Significant()}
}

// sizes is benchstat's "5", or "3+5" when the sides differ.
func sizes(c *experiment.Change) string {
	if c.N1 == c.N2 {
		return strconv.Itoa(c.N1)
	}
	return fmt.Sprintf("%d+%d", c.N1, c.N2)
}

// qualifier qualifies a claim of the recommendation that a figure differs
// between two levels, when the difference is not shown to be more than
// noise.
func qualifier(c *experiment.Change) string {
	switch {
	case c == nil || c.Significant():
		return ""
	case c.Reason == experiment.TooFewRuns:
		return fmt.Sprintf(" (untested: n=%d)", min(c.N1, c.N2))
	}
	return fmt.Sprintf(" (not significant, p=%.2f)", c.P)
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// recommendation is a numeric sweep's pick with its evidence, on one line.
func recommendation(s experiment.SweepVerdict) string {
	param := s.Param
	var parts []string
	for _, e := range s.Evidence {
		switch e.Kind {
		case experiment.BestThroughput:
			parts = append(parts, fmt.Sprintf("the best throughput (%.1f req/s)", e.Value))
		case experiment.WithinBestThroughput:
			// The rule, then how far under the best the pick is.
			parts = append(parts, fmt.Sprintf("the smallest %s within %s of the best throughput (%s=%s: %.1f req/s, %s more)", param, share(experiment.WithinBest), param, num(e.Against), e.Value, percent(e.Change/(1-e.Change))))
		case experiment.LowerP95:
			parts = append(parts, fmt.Sprintf("p95 %.0f%% lower than %s=%s%s", 100*e.Change, param, num(e.Against), qualifier(e.Test)))
		case experiment.KneeAt:
			rule := fmt.Sprintf("gains under %s a step after %s=%s", share(s.KneeShare), param, num(e.At))
			if e.Change > experiment.WithinBest && e.Test != nil && (e.Test.Significant() || e.Test.Reason == experiment.TooFewRuns) {
				// Small steps that add up to a real gain: "flatten"
				// would contradict the table.
				parts = append(parts, fmt.Sprintf("%s, yet throughput still rises %.0f%% to %s=%s%s", rule, 100*e.Change, param, num(e.Against), qualifier(e.Test)))
			} else {
				parts = append(parts, rule)
			}
		case experiment.ThroughputFalls:
			parts = append(parts, fmt.Sprintf("throughput falls %.0f%% from %s=%s to %s=%s%s", 100*e.Change, param, num(e.At), param, num(e.Against), qualifier(e.Test)))
		case experiment.USLPeak:
			extrapolated := ""
			if e.Extrapolated {
				extrapolated = ", outside the measured range"
			}
			u := s.USL
			parts = append(parts, fmt.Sprintf("USL peak at %s≈%.1f (σ=%.3f, κ=%.4f, R²=%s%s)", param, e.At, u.Sigma, u.Kappa, stats.FormatRSquared(u.R2), extrapolated))
		case experiment.TradeOff:
			parts = append(parts, fmt.Sprintf("its trade-off against the baseline %s=%s: %s", param, num(e.Against), costs(e.Costs)))
		case experiment.USLNoPeak:
			parts = append(parts, fmt.Sprintf("USL: no peak (σ=%.3f, κ=0, R²=%s)", s.USL.Sigma, stats.FormatRSquared(s.USL.R2)))
		}
	}
	if w := noKnee(s); w != "" {
		parts = append(parts, w)
	}
	if w := noUSL(s); w != "" {
		parts = append(parts, w)
	}
	line := fmt.Sprintf("%s=%s: %s", param, num(s.X[s.Pick]), strings.Join(parts, "; "))
	if len(s.At) > 0 {
		line = "at " + strings.Join(s.At, " ") + ", " + line
	}
	return line
}

// costs writes a trade-off's figures: "p50 +68% (4.10 ms against 2.44),
// PSS peak -9.1% (12.1 MiB against 13.4) (not significant, p=0.31)".
func costs(cs []experiment.Cost) string {
	var out []string
	for _, c := range cs {
		name := strings.TrimSuffix(c.Name, " latency")
		unit := c.Unit
		if unit != "" {
			unit = " " + unit
		}
		out = append(out, fmt.Sprintf("%s %s (%s%s against %s)%s", name, signedPercent(c.Change), number(c.To), unit, number(c.From), qualifier(c.Test)))
	}
	return strings.Join(out, ", ")
}

// percent is a fraction as a share, to two significant figures under 10%:
// "1.5%", "68%".
func percent(f float64) string {
	if math.Abs(f) < 0.1 {
		return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(100*f, 'f', 0, 64) + "%"
}

// signedPercent is percent with its sign: "+68%", "-9.1%".
func signedPercent(f float64) string {
	if f >= 0 {
		return "+" + percent(f)
	}
	return percent(f)
}

// share is a knee's share as the plan writes it: "5%".
func share(f float64) string {
	if f <= 0 {
		f = stats.DefaultKneeShare
	}
	return strconv.FormatFloat(math.Round(f*1e4)/100, 'f', -1, 64) + "%"
}

// kneeMark labels a sweep's knee on its charts with its rule.
func kneeMark(s *experiment.SweepVerdict) string {
	return "knee (<" + share(s.KneeShare) + "/step)"
}

// gain is the step from level j-1 to j, a fraction.
func gain(s experiment.SweepVerdict, j int) float64 {
	if s.Throughput[j-1] <= 0 {
		return math.Inf(1)
	}
	return s.Throughput[j]/s.Throughput[j-1] - 1
}

// noKnee says in words why a sweep has no knee at one level; "" when it
// has one (or an older loadlab stored no reason).
func noKnee(s experiment.SweepVerdict) string {
	p, last, sh := s.Param, len(s.X)-1, share(s.KneeShare)
	span := fmt.Sprintf("%s=%s to %s", p, num(s.X[0]), num(s.X[last]))
	switch s.KneeWhy {
	case stats.KneeTooFewLevels:
		return fmt.Sprintf("no knee: %d levels of %s, a knee takes 3", len(s.X), p)
	case stats.KneeFlat:
		w := fmt.Sprintf("no knee: throughput is flat, no step from %s adds %s or more", span, sh)
		if n := len(s.ServerCPU); n == len(s.X) {
			w += fmt.Sprintf(" (server CPU %.0f%% of a core at %s=%s: if that is not its limit, the server is bound elsewhere)", s.ServerCPU[last], p, num(s.X[last]))
		}
		return w
	case stats.KneeStillRising:
		lo, hi, all := math.Inf(1), math.Inf(-1), true
		for j := 1; j <= last; j++ {
			g := gain(s, j)
			lo, hi = math.Min(lo, g), math.Max(hi, g)
			all = all && g >= s.KneeShare
		}
		if all {
			return fmt.Sprintf("no knee at %s a step: every step from %s adds %.0f%% to %.0f%%", sh, span, 100*lo, 100*hi)
		}
		return fmt.Sprintf("no knee at %s a step within %s: the last step, to %s=%s, still adds %.0f%%", sh, span, p, num(s.X[last]), 100*gain(s, last))
	case stats.KneeUnplaced:
		if len(s.KneeRange) != 2 {
			return ""
		}
		from, to := s.KneeRange[0], s.KneeRange[1]
		beyond := ""
		if to == last {
			beyond = " or beyond"
		}
		return fmt.Sprintf("the knee at %s a step lies between %s=%s and %s=%s%s: the data cannot place it within one step, as a step in between adds %s or more by its medians while its runs overlap the level before and the test cannot tell it from noise",
			sh, p, num(s.X[from]), p, num(s.X[to]), beyond, sh)
	}
	return ""
}

// noUSL says in words why a sweep's recommendation cites no USL fit.
func noUSL(s experiment.SweepVerdict) string {
	switch s.USLWhy {
	case experiment.USLTooFewLevels:
		return fmt.Sprintf("no USL fit: %d levels of %s, a fit takes %d", len(s.X), s.Param, experiment.MinUSLPoints)
	case experiment.USLFitFailed:
		return "no USL fit: the fit did not converge"
	case experiment.USLAllEqual:
		return "no USL fit: every throughput is equal"
	case experiment.USLLowR2:
		if s.USL != nil {
			return fmt.Sprintf("USL fit not cited: R²=%s, at most %s", stats.FormatRSquared(s.USL.R2), num(experiment.MinUSLR2))
		}
	}
	return ""
}

// named sums up a value of a non-numeric param against its baseline value:
// what changed significantly, and what did not.
func named(n experiment.NamedComparison) string {
	var sig, same, untested []string
	runs := 0
	for _, f := range n.Figures {
		c := f.Change
		switch {
		case c.Significant():
			sig = append(sig, fmt.Sprintf("%s %+.1f%% (p=%.3f)", f.Name, 100*c.Delta, c.P))
		case c.Reason == experiment.TooFewRuns:
			// Too few runs for any test: the change of the medians,
			// said to be untested, never "no difference".
			if c.Delta != 0 {
				untested = append(untested, fmt.Sprintf("%s %+.1f%%", f.Name, 100*c.Delta))
			}
			runs = f.N
		default:
			same = append(same, f.Name)
		}
	}
	line := fmt.Sprintf("%s=%s vs %s:", n.Param, n.Value, n.Baseline)
	if len(n.At) > 0 {
		// A matrix's condition first: the recommendation speaks of the
		// factor at each condition, never of the condition.
		line = fmt.Sprintf("at %s, %s=%s vs %s:", strings.Join(n.At, " "), n.Param, n.Value, n.Baseline)
	}
	for _, f := range n.Figures {
		// A capacity search at each point: the answer first, in words.
		if c := f.Change; f.ID == experiment.FigureCapacity && c.Significant() {
			more := "more"
			if c.Delta < 0 {
				more = "less"
			}
			line += fmt.Sprintf(" %s holds %.0f%% %s than %s (capacity, p=%.3f);", n.Value, math.Abs(100*c.Delta), more, n.Baseline, c.P)
		}
	}
	switch {
	case len(sig) > 0:
		line += " " + strings.Join(sig, ", ")
		if len(same) > 0 {
			line += "; no significant change in " + strings.Join(same, ", ")
		}
	case len(untested) > 0:
		line += fmt.Sprintf(" untested, too few runs (n=%d) to tell from noise: %s", runs, strings.Join(untested, ", "))
	default:
		line += " no significant difference"
	}
	return line
}

// comparisonNotes are a comparison's notes: what the numbers of runs allow,
// the statistics' remarks on each figure, and the suspect runs.
func comparisonNotes(c *experiment.Comparison) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, r := range c.Rows {
		for _, w := range r.Notes {
			if strings.Contains(w, "equal") { // says something of this figure alone
				w = r.Figure + ": " + w
			}
			add(w)
		}
	}
	if s := c.Sampling; len(c.Rows) > 0 && s.FallsShort() {
		with := runsPhrase(s, "a side")
		if len(c.A.Results) != len(c.B.Results) {
			with = fmt.Sprintf("%s of A and %d of B", runs(len(c.A.Results)), len(c.B.Results))
		}
		add(samplingSentence(s, with, fmt.Sprintf("--fail-on compares the medians; %d runs a side are the fewest that can be tested", s.RunsToTest)))
	}
	for _, line := range suspectLines(c.Suspect) {
		add(line)
	}
	return out
}

// suspectLines are a comparison's suspect runs one line a validity code:
// the runs of each side that carry it, and one of their messages, once
// ("machine_busy in A runs 1, 3 of 5 and B run 2 of 5; e.g. A run 1: ...").
func suspectLines(suspect []experiment.SuspectRun) []string {
	var codes []string
	byCode := map[string][]experiment.SuspectRun{}
	for _, s := range suspect {
		if _, ok := byCode[s.Warning.Code]; !ok {
			codes = append(codes, s.Warning.Code)
		}
		byCode[s.Warning.Code] = append(byCode[s.Warning.Code], s)
	}
	var out []string
	for _, code := range codes {
		ss := byCode[code]
		var sides []string
		for _, side := range []string{"A", "B"} {
			var nums []string
			for _, s := range ss {
				if s.Side == side {
					nums = append(nums, strconv.Itoa(s.Run))
				}
			}
			switch len(nums) {
			case 0:
			case 1:
				sides = append(sides, fmt.Sprintf("%s run %s", side, nums[0]))
			default:
				sides = append(sides, fmt.Sprintf("%s runs %s", side, strings.Join(nums, ", ")))
			}
		}
		out = append(out, fmt.Sprintf("suspect, %s in %s; e.g. %s run %d: %s", code, strings.Join(sides, " and "), ss[0].Side, ss[0].Run, ss[0].Warning.Message))
	}
	return out
}

// Likeness is what a comparison's header says of whether A and B measured
// the same thing: a first line, then one line a differing field ("shape:
// A 10 VUs for 10s · B 1.5/s for 10s, at most 20 VUs"). Nothing when their
// fingerprints are equal.
func Likeness(c *experiment.Comparison) []string {
	var out []string
	switch {
	case len(c.Differences) == 0:
	case c.SamePlan:
		points := ""
		if c.PointA != "" || c.PointB != "" {
			points = fmt.Sprintf(" (A %s, B %s)", orBaseline(c.PointA), orBaseline(c.PointB))
		}
		out = append(out, fmt.Sprintf("A and B ran one plan at different points%s; they differ where its params do:", points))
	default:
		out = append(out, "A and B measured different things; their figures differ for these reasons too, not only for the change under test:")
	}
	for _, d := range c.Differences {
		out = append(out, fmt.Sprintf("  %s: A %s · B %s", d.Field, d.A, d.B))
	}
	for _, side := range c.Unchecked {
		out = append(out, fmt.Sprintf("%s has no plan fingerprint (written by an older loadlab): whether A and B measured the same load, requests, target and server is not checked", side))
	}
	return out
}

func orBaseline(point string) string {
	if point == "" {
		return "a single run"
	}
	return point
}

// FailureText says why a comparison broke a --fail-on rule.
func FailureText(f experiment.Failure) string {
	row := f.Row
	var changed string
	switch {
	case f.Rule.Figure == experiment.FigureErrorRate:
		changed = fmt.Sprintf("%+.2f points (%.2f%% to %.2f%%)", row.B.Median-row.A.Median, row.A.Median, row.B.Median)
	case row.A.Median == 0 && row.B.Median != 0:
		changed = fmt.Sprintf("from 0 to %.4g", row.B.Median)
	default:
		changed = fmt.Sprintf("%+.1f%%", 100*row.Change.Delta)
	}
	if f.ByMedians {
		return fmt.Sprintf("%s changed %s, beyond %s (median against median: with %d and %d runs no test can tell it from noise)", row.Figure, changed, f.Rule.Text, row.A.N, row.B.N)
	}
	return fmt.Sprintf("%s changed %s (p=%.3f), beyond %s", row.Figure, changed, row.Change.P, f.Rule.Text)
}

// driftText says that a point's throughput drifted between rounds.
func driftText(d experiment.Drift) string {
	way := "rose"
	if d.Change < 0 {
		way = "fell"
	}
	figures := make([]string, len(d.Throughput))
	for i, x := range d.Throughput {
		figures[i] = rate(x)
	}
	return fmt.Sprintf("%s: throughput drifted between rounds: it %s run after run (%s req/s in runs %s), %+.0f%% from the first to the last. Noise goes up and down; a trend says the machine changed during the experiment (see machine_busy and cpu_steal): repeat the point on a quiet machine",
		d.Point, way, strings.Join(figures, ", "), joinInts(d.Runs), 100*d.Change)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

// trustLine heads a recommendation with whether the machine let it be
// measured: NOT TRUSTED YET, naming the figures it applies to, when the
// suspect runs that move the figures it rests on are many; otherwise, when
// as many suspect runs were set aside (they move none of those figures, or
// the paired analysis absorbs them), a line that says so; "" when no
// suspect run weighs.
func trustLine(v *experiment.Verdict) string {
	t := v.Trust
	names := func(ids []experiment.FigureID) string {
		var out []string
		for _, id := range ids {
			out = append(out, figureName(v, id))
		}
		return strings.Join(out, ", ")
	}
	counts := func(m map[string]int) string {
		var out []string
		for _, code := range experiment.SuspectCodes {
			if n := m[code]; n > 0 {
				out = append(out, fmt.Sprintf("%s in %d", code, n))
			}
		}
		return strings.Join(out, ", ")
	}
	if t.Untrusted {
		return fmt.Sprintf("NOT TRUSTED YET for %s: %d of %d runs were measured on a machine that could not measure them (%s; see validity below), so the differences below in these figures may be the machine's, not the settings'. Quiet the machine (or give loadlab and the server their own CPUs) and run the experiment again with --fresh.",
			names(t.Moved), t.Runs, t.Of, counts(t.Codes))
	}
	if !v.Suspect.Untrusted() {
		return ""
	}
	var parts []string
	if len(t.Unmoved) > 0 {
		codes := codesOf(t.Unmoved)
		for i, c := range codes {
			if c == "late" {
				codes[i] = fmt.Sprintf("late (under %g ms at the p99)", experiment.LateMovesMemoryMS)
			}
		}
		verb := "moves"
		if len(codes) > 1 {
			verb = "move"
		}
		parts = append(parts, fmt.Sprintf("%s %s time figures, not memory, which the verdict rests on", strings.Join(codes, " and "), verb))
	}
	if len(t.Absorbed) > 0 {
		parts = append(parts, "the paired analysis compares each point with its reference within a round, so what the machine takes from a whole round falls out of their ratio, and the rest is in the round-to-round spread its test measures")
	}
	if len(parts) == 0 {
		return ""
	}
	all := map[string]int{}
	for _, m := range []map[string]int{t.Unmoved, t.Absorbed} {
		for code, n := range m {
			all[code] += n
		}
	}
	return fmt.Sprintf("trusted for %s, although %d of %d runs were measured on a busy machine (%s): %s (see validity below).", names(t.RestsOn), v.Suspect.Runs, v.Suspect.Of, counts(all), strings.Join(parts, "; "))
}

// codesOf lists the codes of m in the order of SuspectCodes.
func codesOf(m map[string]int) []string {
	var out []string
	for _, code := range experiment.SuspectCodes {
		if m[code] > 0 {
			out = append(out, code)
		}
	}
	return out
}

// figureName is a figure's display name in the verdict's tables.
func figureName(v *experiment.Verdict, id experiment.FigureID) string {
	if t := v.Table(id); t != nil {
		return t.Name
	}
	return string(id)
}

// analysisLine says which analysis the changes are: paired within rounds,
// with the rounds left out named, or unpaired and why.
func analysisLine(p *experiment.Pairing) string {
	if p == nil || p.Why == experiment.OnePoint {
		return ""
	}
	var left []string
	var waited []experiment.RoundLeft
	for _, l := range p.Left {
		if l.Why == experiment.WaitedRound {
			waited = append(waited, l)
			continue
		}
		left = append(left, fmt.Sprintf("round %d (%s not done)", l.Round, strings.Join(l.Points, ", ")))
	}
	if len(waited) > 0 {
		left = append(left, waitedText(waited))
	}
	leftOut := ""
	if len(left) > 0 {
		leftOut = "; left out: " + strings.Join(left, "; ")
	}
	if len(p.Kept) > 0 && p.Analysis == experiment.Paired {
		leftOut += fmt.Sprintf("; kept, as leaving them out would leave fewer than the %d rounds a paired test needs: %s", p.Need, waitedText(p.Kept))
	}
	if p.Analysis == experiment.Paired {
		return fmt.Sprintf("paired analysis: each point against its reference within each of %d rounds (Wilcoxon signed-rank test of the per-round ratios, Hodges–Lehmann median ratio)%s", len(p.Rounds), leftOut)
	}
	return fmt.Sprintf("unpaired analysis (Mann-Whitney U over the runs): %s, a paired test takes %d%s; experiment.json has both", plural(len(p.Rounds), "complete round"), p.Need, leftOut)
}

// waitedText is the rounds left out (or kept) whose runs' servers waited
// for a CPU unlike: "rounds 2 and 9 (their runs' servers waited for a CPU
// unlike, by 10 points or more beyond each point's usual wait, up to
// side=A 67% (usually 6%) against side=B 5% (usually 5%): a neighbour took
// one run's CPU, not the other's)".
func waitedText(ls []experiment.RoundLeft) string {
	var rounds []string
	worst := -1
	gap := func(l experiment.RoundLeft) float64 {
		return (l.WaitPct[0] - l.UsualPct[0]) - (l.WaitPct[1] - l.UsualPct[1])
	}
	for k, l := range ls {
		rounds = append(rounds, strconv.Itoa(l.Round))
		if len(l.WaitPct) == 2 && len(l.UsualPct) == 2 && len(l.Points) == 2 && (worst < 0 || gap(l) > gap(ls[worst])) {
			worst = k
		}
	}
	head := "round " + rounds[0]
	if len(rounds) > 1 {
		head = "rounds " + strings.Join(rounds[:len(rounds)-1], ", ") + " and " + rounds[len(rounds)-1]
	}
	text := fmt.Sprintf("%s (their runs' servers waited for a CPU unlike, by %g points or more beyond each point's usual wait", head, experiment.WaitJump)
	if worst >= 0 {
		l := ls[worst]
		text += fmt.Sprintf(", up to %s %.0f%% (usually %.0f%%) against %s %.0f%% (usually %.0f%%)", l.Points[0], l.WaitPct[0], l.UsualPct[0], l.Points[1], l.WaitPct[1], l.UsualPct[1])
	}
	return text + ": a neighbour took one run's CPU, not the other's)"
}

// noiseFloorLine states the smallest change of the primary figure the runs
// can tell from noise: "noise floor: throughput at the baseline spreads
// 2.1% run to run; at 6 rounds, changes under 3.4% are within noise here".
func noiseFloorLine(n *experiment.NoiseFloor) string {
	if n == nil {
		return ""
	}
	at := runs(n.N) + " a point"
	if n.Analysis == experiment.Paired {
		at = plural(n.N, "round")
	}
	name := string(n.Figure)
	head := fmt.Sprintf("noise floor: %s at %s spreads %.1f%% run to run (%d runs)", name, n.Point, 100*n.Spread, n.Runs)
	if n.Analysis == experiment.Paired {
		head += fmt.Sprintf(", its ratio to the reference %.1f%% round to round", 100*n.RatioSpread)
	}
	if !n.Testable {
		return head + fmt.Sprintf("; at %s no test can tell a change from noise", at)
	}
	return head + fmt.Sprintf("; at %s, changes under %.1f%% are within noise here (α=%s, %.0f%% power)", at, 100*n.Detectable, strconv.FormatFloat(n.Alpha, 'f', -1, 64), 100*n.Power)
}

// machineDriftText says that the rounds' level drifted across all points.
func machineDriftText(m *experiment.MachineDrift, figure string) string {
	way := "rose"
	if m.Change < 0 {
		way = "fell"
	}
	levels := make([]string, len(m.Levels))
	for i, l := range m.Levels {
		levels[i] = fmt.Sprintf("%+.0f%%", 100*(l-1))
	}
	return fmt.Sprintf("machine-wide drift: the rounds' %s, across all points, %s %+.0f%% from the first round to the last (each round against the points' medians: %s; Mann-Kendall p=%.3f). The machine changed during the experiment: every comparison is wider for it, and a paired one less so",
		figure, way, 100*m.Change, strings.Join(levels, ", "), m.P)
}

// sequentialLine says what repeat: auto decided, after how many rounds,
// by which rule; "" for a fixed repeat.
func sequentialLine(q *experiment.Sequential, n *experiment.NoiseFloor) string {
	if q == nil {
		return ""
	}
	rule := fmt.Sprintf("Lan–DeMets α-spending of O'Brien–Fleming type, α=%s over the looks", strconv.FormatFloat(q.Alpha, 'f', -1, 64))
	var parts []string
	if len(q.Looks) > 0 {
		l := q.Looks[len(q.Looks)-1]
		for _, c := range l.Comparisons {
			switch c.Decision {
			case experiment.Decided:
				parts = append(parts, fmt.Sprintf("%s %+.1f%%", c.Point, 100*c.Delta))
			case experiment.Within:
				parts = append(parts, fmt.Sprintf("%s within ±%s (%+.1f%% to %+.1f%%)", c.Point, share(q.MinEffect), 100*c.Lo, 100*c.Hi))
			}
		}
	}
	switch q.Decision {
	case experiment.Decided, experiment.Within:
		return fmt.Sprintf("repeat: auto stopped after %s of at most %d: %s's change is decided (%s; %s)", plural(q.Rounds, "round"), q.MaxRounds, q.Figure, strings.Join(parts, ", "), rule)
	}
	floor := ""
	if n != nil && n.Testable {
		floor = fmt.Sprintf("; changes under %.1f%% cannot be told from noise on this machine", 100*n.Detectable)
	}
	return fmt.Sprintf("repeat: auto: undecided after %s%s (%s)", plural(q.Rounds, "round"), floor, rule)
}
