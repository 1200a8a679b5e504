package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/loadlab/loadlab/internal/experiment"
)

// Summary forms: compact leads with the answer (the default, as k6 1.0's
// end-of-test summary); full is every figure's table, per step too.
const (
	SummaryCompact = "compact"
	SummaryFull    = "full"
)

// compactFigures are the figures of the compact table, in its order: what
// a tuning question is answered by, the capacity first in an experiment of
// capacity searches. Memory is PSS when the runs have it (a forking
// server's workers share pages), else RSS. An error rate of zero at every
// point is said under the table, not given a column.
var compactFigures = []experiment.FigureID{experiment.FigureCapacity, experiment.FigureThroughput, experiment.FigureP95, experiment.FigureErrorRate, experiment.FigureCPU, experiment.FigurePSSPeak, experiment.FigureRSSPeak}

// CompactVerdict writes an experiment's summary answer first: the
// recommendation (after NOT TRUSTED YET where that applies), one table of
// the points in sweep order with each figure's change and p, the steps
// that changed on their own, validity one line a code, the thresholds one
// line each, and where the full tables are. dir is the experiment's
// directory, named in the last lines ("" leaves them out).
func CompactVerdict(w io.Writer, o *experiment.Outcome, dir string) error {
	ew := &errWriter{w: w}
	v, done := experimentHead(ew, o)
	if v == nil {
		return ew.err
	}
	if done == 0 {
		ew.printf("\nno runs done: no figures to show\n")
		failedRuns(ew, o)
		return interrupted(ew, o)
	}
	if v.Recommendation != "" {
		lines := strings.Split(v.Recommendation, "\n")
		ew.printf("\nrecommendation: %s\n", lines[0])
		for _, line := range lines[1:] {
			ew.printf("  %s\n", line)
		}
	}
	if b := v.Boxes; b != nil && len(b.Text) > 0 {
		ew.printf("which box (%s): %s\n", b.Param, boxAnswer(b))
	}
	if v.Factor != "" {
		ew.printf("factor: %s\n", v.Factor)
	}
	compactTable(ew, o, v)
	for _, line := range v.Noise {
		ew.printf("%s\n", line) // "paired analysis: ...", "noise floor: ..."
	}
	for _, sw := range v.Sweeps {
		// The memory the table shows: PSS when the runs have it.
		lines := memoryLines(sw)
		if pss := memoryLines(experiment.SweepVerdict{Memory: slices.DeleteFunc(slices.Clone(sw.Memory), func(f experiment.MemoryFit) bool { return f.Figure != experiment.FigurePSSPeak })}); len(pss) > 0 {
			lines = pss
		}
		for _, line := range lines {
			ew.printf("memory against %s: %s\n", sw.Param, line)
		}
	}
	for _, c := range v.StepChanges {
		// The recommendation leads with the steps that changed on their
		// own (Describe); a line the reader has just read is not repeated.
		if text := stepChange(c); !strings.Contains(v.Recommendation, text) {
			ew.printf("step changed on its own: %s\n", text)
		}
	}
	for _, line := range validityLines(v, done) {
		ew.printf("validity: %s\n", line)
	}
	for _, dr := range v.Drifts {
		ew.printf("validity: %s\n", driftText(dr))
	}
	for _, line := range v.Quota {
		ew.printf("memory quota: %s\n", line)
	}
	for _, line := range v.Thresholds {
		ew.printf("threshold FAIL  %s\n", line)
	}
	for _, line := range v.Passed {
		ew.printf("threshold pass  %s\n", line)
	}
	failedRuns(ew, o)
	if dir != "" {
		ew.printf("\nevery figure, per step too: loadlab report %s --summary full\n", dir)
	}
	return interrupted(ew, o)
}

// compactTable is one table of every point, in sweep order: each figure's
// median and its change from the point's reference, with p when tested.
func compactTable(ew *errWriter, o *experiment.Outcome, v *experiment.Verdict) {
	tables := map[experiment.FigureID]experiment.FigureTable{}
	for _, t := range v.Figures {
		tables[t.ID] = t
	}
	var shown []experiment.FigureTable
	noErrors := false
	for _, id := range compactFigures {
		t, ok := tables[id]
		if !ok || (id == experiment.FigureRSSPeak && slices.ContainsFunc(shown, func(s experiment.FigureTable) bool { return s.ID == experiment.FigurePSSPeak })) {
			continue
		}
		if id == experiment.FigureErrorRate && !slices.ContainsFunc(t.Rows, func(r experiment.FigureRow) bool { return r.Max > 0 }) {
			noErrors = true
			continue
		}
		shown = append(shown, t)
	}
	if len(shown) == 0 {
		return
	}
	order := sweepOrder(o)
	width := len("point")
	for _, key := range order {
		width = max(width, len(key)+len(" (base)"))
	}
	headings := []string{}
	for _, t := range shown {
		headings = append(headings, compactHeading(t))
	}
	cells := make([][]string, len(order))
	tested, untested := false, false
	for i, key := range order {
		for _, t := range shown {
			c := ""
			for _, r := range t.Rows {
				if r.Point != key {
					continue
				}
				c = compactCell(t, r)
				if r.Change != nil {
					if r.Change.Reason == experiment.TooFewRuns {
						untested = true
					} else {
						tested = true
					}
				}
			}
			cells[i] = append(cells[i], c)
		}
	}
	widths := make([]int, len(shown))
	for j, h := range headings {
		widths[j] = len([]rune(h))
		for i := range cells {
			widths[j] = max(widths[j], len([]rune(cells[i][j])))
		}
	}
	ew.printf("\n%-*s%s\n", width, "point", strings.TrimRight(padRow(headings, widths), " "))
	baseline := ""
	for _, p := range o.Points {
		if p.Baseline {
			baseline = p.Key
		}
	}
	for i, key := range order {
		name := key
		if key == baseline {
			name += " (base)"
		}
		ew.printf("%-*s", width, name)
		ew.printf("%s\n", strings.TrimRight(padRow(cells[i], widths), " "))
	}
	note := "medians; changes against " + v.Against
	if noErrors {
		note = "no errors at any point; " + note
	}
	test := "p is Mann-Whitney U's"
	if v.Pairing != nil && v.Pairing.Analysis == experiment.Paired {
		test = "p is paired within rounds (Wilcoxon signed-rank)"
	}
	switch {
	case tested && untested:
		note += "; " + test + ", ~ not significant at α=0.05, ? too few runs to test"
	case tested:
		note += "; " + test + ", ~ not significant at α=0.05"
	case untested:
		note += fmt.Sprintf("; ? untested: %s a point are too few for any test, %d are the fewest (set repeat: %d or more)", plural(v.Sampling.RunsMin, "run"), v.Sampling.RunsToTest, v.Sampling.RunsToTest)
	}
	ew.printf("(%s)\n", note)
}

// padRow pads cells to their widths, two spaces apart.
func padRow(cells []string, widths []int) string {
	var b strings.Builder
	for j, c := range cells {
		fmt.Fprintf(&b, "  %-*s", widths[j], c)
	}
	return b.String()
}

// compactHeading names a figure with its unit, short.
func compactHeading(t experiment.FigureTable) string {
	name := map[experiment.FigureID]string{
		experiment.FigureCapacity: "capacity /s", experiment.FigureThroughput: "throughput /s", experiment.FigureP95: "p95 ms", experiment.FigureErrorRate: "errors %",
		experiment.FigureCPU: "server CPU %", experiment.FigurePSSPeak: "PSS peak MiB", experiment.FigureRSSPeak: "RSS peak MiB",
	}[t.ID]
	if name == "" {
		name = t.Name + " (" + t.Unit + ")"
	}
	return name
}

// compactCell is a median with its change: "472.1 -48% p=.002", "899.2
// -1.5% ~" (not significant), "899.2 -1.5% ?" (untested).
func compactCell(t experiment.FigureTable, r experiment.FigureRow) string {
	if r.N == 0 {
		return "-"
	}
	c := r.Change
	if r.Median == 0 && r.Max == 0 && (c == nil || c.Delta == 0) {
		return "0" // none here nor at the reference: no change to show
	}
	s := number(r.Median)
	if c == nil {
		return s
	}
	d := 100 * c.Delta
	switch {
	case !c.DeltaDefined:
		s += " from 0"
	case t.ID == experiment.FigureErrorRate:
		s += fmt.Sprintf(" %+.2fpt", d)
	case math.Abs(d) >= 10:
		s += fmt.Sprintf(" %+.0f%%", d)
	default:
		s += fmt.Sprintf(" %+.1f%%", d)
	}
	switch {
	case c.Reason == experiment.TooFewRuns:
		return s + " ?"
	case !c.Significant():
		return s + " ~"
	}
	return s + " p=" + strings.TrimPrefix(fmt.Sprintf("%.3f", c.P), "0")
}

// sweepOrder is the points in the order of the params' values, as the plan
// lists them (not the baseline first): a sweep of one param reads along its
// values. One-at-a-time sweeps of several params keep the experiment's
// order, each param's values after the baseline.
func sweepOrder(o *experiment.Outcome) []string {
	keys := make([]string, len(o.Points))
	for i, p := range o.Points {
		keys[i] = p.Key
	}
	if len(o.Params) != 1 && o.Vary != "matrix" {
		return keys
	}
	index := func(p experiment.Point) []int {
		out := make([]int, len(o.Params))
		for i, prm := range o.Params {
			out[i] = slices.Index(prm.Values, p.Labels[prm.Name])
		}
		return out
	}
	points := slices.Clone(o.Points)
	slices.SortStableFunc(points, func(a, b experiment.Point) int { return slices.Compare(index(a), index(b)) })
	for i, p := range points {
		keys[i] = p.Key
	}
	return keys
}

// validityLines are the validity tallies one line a code: how many runs,
// at which points, and one example's message, once.
func validityLines(v *experiment.Verdict, done int) []string {
	var codes []string
	byCode := map[string][]experiment.ValidityTally{}
	for _, t := range v.ValidityTallies {
		if _, ok := byCode[t.Code]; !ok {
			codes = append(codes, t.Code)
		}
		byCode[t.Code] = append(byCode[t.Code], t)
	}
	var out []string
	for _, code := range codes {
		ts := byCode[code]
		runs, every := 0, true
		var at []string
		for _, t := range ts {
			runs += t.Runs
			every = every && t.Runs == t.Of
			at = append(at, fmt.Sprintf("%s %d of %d", t.Point, t.Runs, t.Of))
		}
		where := fmt.Sprintf("in %d of %d runs (%s)", runs, done, strings.Join(at, ", "))
		if every && runs == done {
			where = fmt.Sprintf("in all %d runs", runs)
		}
		// Two rows of a 100-column terminal a code, "validity: " included:
		// the whole message is in the full summary.
		head := fmt.Sprintf("%s %s; e.g. run %d: ", code, where, ts[0].ExampleRun)
		out = append(out, head+clip(ts[0].ExampleMessage, max(60, 200-len("validity: ")-len([]rune(head)))))
	}
	return out
}
