package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/suggest"
)

// Side is one side of a comparison: the runs of a result or of one point of
// an experiment.
type Side struct {
	Label   string
	Results []*result.Result
}

// LoadSide reads a result (a directory with result.json, or the file) or an
// experiment (a directory with experiment.json); of an experiment it takes
// the runs of point (the baseline when empty).
func LoadSide(path, point string) (Side, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "experiment.json")); err == nil {
			return loadExperimentSide(path, point)
		}
	}
	r, err := store.ReadResult(path)
	if err != nil {
		return Side{}, err
	}
	if point != "" {
		return Side{}, fmt.Errorf("%s is a single run, not an experiment: it has no point %q", path, point)
	}
	return Side{Label: path, Results: []*result.Result{r}}, nil
}

func loadExperimentSide(dir, point string) (Side, error) {
	data, err := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if err != nil {
		return Side{}, err
	}
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return Side{}, fmt.Errorf("%s: not a loadlab experiment: %w", dir, err)
	}
	if o.Schema != SchemaExperiment {
		return Side{}, fmt.Errorf("%s: unsupported experiment schema %q", dir, o.Schema)
	}
	want := point
	if want == "" {
		for _, p := range o.Points {
			if p.Baseline {
				want = p.Key
			}
		}
	}
	var keys []string
	found := false
	for _, p := range o.Points {
		keys = append(keys, p.Key)
		found = found || p.Key == want
	}
	if !found {
		return Side{}, fmt.Errorf("%s has no point %q (points: %s)", dir, want, strings.Join(keys, "; "))
	}
	side := Side{Label: dir + " " + want}
	for _, r := range o.Runs {
		if r.Point != want || r.Status != "done" || r.Dir == "" {
			continue
		}
		res, err := store.ReadResult(filepath.Join(dir, r.Dir))
		if err != nil {
			return Side{}, err
		}
		side.Results = append(side.Results, res)
	}
	if len(side.Results) == 0 {
		return Side{}, fmt.Errorf("%s: point %q has no finished runs", dir, want)
	}
	return side, nil
}

// Comparison is two sides figure by figure.
type Comparison struct {
	A, B     Side
	Rows     []CompareRow
	Warnings []string
}

// CompareRow is one figure on both sides.
type CompareRow struct {
	Figure      string
	Key         string // the name --fail-on uses
	Unit        string
	Higher      bool
	A, B        string // "123.4 ± 3%"
	NA, NB      int
	MedianA     float64
	MedianB     float64
	Delta       float64 // (B-A)/A
	P           float64
	Significant bool
	Testable    bool // enough runs a side for the test to call anything significant
	Versus      string
}

// figureKeys are the names of figures in --fail-on rules.
var figureKeys = map[string]string{
	"throughput": "throughput", "p50 latency": "p50", "p95 latency": "p95", "p99 latency": "p99",
	"error rate": "error_rate", "elapsed": "elapsed", "server CPU": "cpu", "RSS peak": "rss_peak",
	"RSS average": "rss_avg", "PSS peak": "pss_peak", "PSS average": "pss_avg",
}

// Compare compares two sides with benchstat's rules.
func Compare(a, b Side) *Comparison {
	c := &Comparison{A: a, B: b}
	all := append(append([]*result.Result{}, a.Results...), b.Results...)
	seen := map[string]bool{}
	for _, f := range figures {
		if !f.applies(all) {
			continue
		}
		sa, sb := values(f, a.Results), values(f, b.Results)
		if len(sa) == 0 || len(sb) == 0 {
			continue
		}
		sumA, sumB := stats.Summarize(sa, 0), stats.Summarize(sb, 0)
		cmp := stats.Compare(sa, sb, Alpha)
		row := CompareRow{
			Figure: f.name, Key: figureKeys[f.name], Unit: f.unit, Higher: f.higher,
			A: cell(sumA, sa), B: cell(sumB, sb), NA: len(sa), NB: len(sb),
			MedianA: sumA.Center, MedianB: sumB.Center, Delta: cmp.Delta, P: cmp.P,
			Significant: cmp.Significant, Testable: testable(cmp), Versus: versus(cmp),
		}
		for _, w := range cmp.AllWarnings() {
			if strings.Contains(w, "equal") { // says something of this figure alone
				w = f.name + ": " + w
			}
			if !seen[w] {
				seen[w] = true
				c.Warnings = append(c.Warnings, w)
			}
		}
		c.Rows = append(c.Rows, row)
	}
	for _, side := range []struct {
		name string
		s    Side
	}{{"A", a}, {"B", b}} {
		for i, r := range side.s.Results {
			for _, w := range r.Validity {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s run %d is suspect (%s): %s", side.name, i+1, w.Code, w.Message))
			}
		}
	}
	return c
}

// MinTestable is the fewest runs a side for which the Mann-Whitney U test
// can call a difference significant at Alpha.
const MinTestable = 4

func testable(c stats.Comparison) bool {
	return c.Base.N >= MinTestable && c.Test.N >= MinTestable
}

// versus renders a change as benchstat does; with too few runs for any
// test, where benchstat prints only "~", it gives the change of the medians
// and says it is untested.
func versus(c stats.Comparison) string {
	if testable(c) {
		return c.String()
	}
	if !c.DeltaDefined { // from a median of 0
		n := fmt.Sprint(c.Base.N)
		if c.Test.N != c.Base.N {
			n += "+" + fmt.Sprint(c.Test.N)
		}
		return fmt.Sprintf("from 0 (n=%s, untested)", n)
	}
	n := fmt.Sprint(c.Base.N)
	if c.Test.N != c.Base.N {
		n += "+" + fmt.Sprint(c.Test.N)
	}
	return fmt.Sprintf("%+.2f%% (n=%s, untested)", 100*c.Delta, n)
}

func values(f figure, rs []*result.Result) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := f.get(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// Rule fails a comparison when a figure gets worse by more than Limit: a
// relative change, "p95 +10%" (latency up 10%) or "throughput -5%".
type Rule struct {
	Text   string
	Figure string
	Limit  float64 // signed fraction: +0.10 fails rises above 10%, -0.05 falls below -5%
}

// ParseRule reads a --fail-on rule.
func ParseRule(s string) (Rule, error) {
	fields := strings.Fields(s)
	keys := make([]string, 0, len(figureKeys))
	for _, k := range figureKeys {
		keys = append(keys, k)
	}
	if len(fields) != 2 {
		return Rule{}, fmt.Errorf("bad rule %q: want FIGURE ±N%%, such as 'p95 +10%%' or 'throughput -5%%' (figures: %s)", s, strings.Join(sortedStrings(keys), ", "))
	}
	known := false
	for _, k := range keys {
		known = known || k == fields[0]
	}
	if !known {
		hint := ""
		if best := suggest.Closest(fields[0], keys); best != "" {
			hint = fmt.Sprintf("; did you mean %q?", best)
		} else if strings.Contains(fields[0], "latency") {
			hint = "; latency is judged by a percentile: p50, p95 or p99"
		}
		return Rule{}, fmt.Errorf("bad rule %q: unknown figure %q%s (figures: %s)", s, fields[0], hint, strings.Join(sortedStrings(keys), ", "))
	}
	pct := fields[1]
	if !strings.HasSuffix(pct, "%") || (pct[0] != '+' && pct[0] != '-') {
		return Rule{}, fmt.Errorf("bad rule %q: the limit is a signed percentage such as +10%% (worse when higher) or -5%% (worse when lower)", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(pct, "%"), 64)
	if err != nil {
		return Rule{}, fmt.Errorf("bad rule %q: %q is not a percentage", s, pct)
	}
	// A rule fails on a regression: a rise where higher is worse, a fall
	// where higher is better; the other sign would fail on an improvement.
	for _, f := range figures {
		if figureKeys[f.name] != fields[0] {
			continue
		}
		if f.higher && v > 0 {
			return Rule{}, fmt.Errorf("bad rule %q: higher %s is better, so a regression is a fall: write %s -%s%%", s, fields[0], fields[0], strings.TrimPrefix(strings.TrimSuffix(pct, "%"), "+"))
		}
		if !f.higher && v < 0 {
			return Rule{}, fmt.Errorf("bad rule %q: lower %s is better, so a regression is a rise: write %s +%s%%", s, fields[0], fields[0], strings.TrimPrefix(strings.TrimSuffix(pct, "%"), "-"))
		}
	}
	return Rule{Text: s, Figure: fields[0], Limit: v / 100}, nil
}

// Failure is a rule a comparison broke.
type Failure struct {
	Rule Rule
	Row  CompareRow
	Why  string
}

// ErrNoFigure is a rule about a figure the comparison does not have.
var ErrNoFigure = errors.New("no such figure in these results")

// Check applies rules. A change beyond a rule's limit fails it when it is
// significant; when there are too few runs for the test to call anything
// significant (fewer than 4 a side), the change of the medians decides, and
// the failure says so.
func (c *Comparison) Check(rules []Rule) ([]Failure, error) {
	var out []Failure
	for _, r := range rules {
		var row *CompareRow
		for i := range c.Rows {
			if c.Rows[i].Key == r.Figure {
				row = &c.Rows[i]
			}
		}
		if row == nil {
			return nil, fmt.Errorf("--fail-on %q: %w", r.Text, ErrNoFigure)
		}
		change, changed := row.change(r)
		beyond := r.Limit >= 0 && change > r.Limit || r.Limit < 0 && change < r.Limit
		if !beyond {
			continue
		}
		switch {
		case row.Significant:
			out = append(out, Failure{Rule: r, Row: *row, Why: fmt.Sprintf("%s changed %s (p=%.3f), beyond %s", row.Figure, changed, row.P, r.Text)})
		case !row.Testable:
			out = append(out, Failure{Rule: r, Row: *row, Why: fmt.Sprintf("%s changed %s, beyond %s (median against median: with %d and %d runs no test can tell it from noise)", row.Figure, changed, r.Text, row.NA, row.NB)})
		}
	}
	return out, nil
}

// change is the figure's change from A to B as a rule measures it, and its
// text: relative (+12.5%), but in percentage points for the error rate,
// whose relative change from 0 would be undefined (0% to 10% is +10 points).
// A rise from a median of 0 of any other figure is beyond every limit.
func (row *CompareRow) change(r Rule) (float64, string) {
	if r.Figure == "error_rate" {
		d := row.MedianB - row.MedianA
		return d / 100, fmt.Sprintf("%+.2f points (%.2f%% to %.2f%%)", d, row.MedianA, row.MedianB)
	}
	if row.MedianA == 0 && row.MedianB != 0 {
		return math.Copysign(math.Inf(1), row.MedianB), fmt.Sprintf("from 0 to %.4g", row.MedianB)
	}
	return row.Delta, fmt.Sprintf("%+.1f%%", 100*row.Delta)
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// LoadOutcome reads an experiment's results directory: experiment.json and
// the result of every finished run.
func LoadOutcome(dir string) (*Outcome, error) {
	data, err := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if err != nil {
		return nil, err
	}
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s: not a loadlab experiment: %w", dir, err)
	}
	if o.Schema != SchemaExperiment {
		return nil, fmt.Errorf("%s: unsupported experiment schema %q", dir, o.Schema)
	}
	o.results = make([]*result.Result, len(o.Runs))
	for i, r := range o.Runs {
		if r.Status != "done" || r.Dir == "" {
			continue
		}
		res, err := store.ReadResult(filepath.Join(dir, r.Dir))
		if err != nil {
			return nil, err
		}
		o.results[i] = res
	}
	o.reanalyze()
	if o.Verdict != nil && o.Verdict.Against == "" {
		o.Verdict.Against = o.Verdict.Baseline // written before "against" existed
	}
	return &o, nil
}

// reanalyze computes the verdict again from the runs, so that a stored
// experiment is shown with this loadlab's analysis; an outcome that does
// not say enough to rebuild its design keeps its stored verdict.
func (o *Outcome) reanalyze() {
	if len(o.Params) == 0 || o.Repeat < 1 {
		return
	}
	e := &plan.Experiment{Vary: plan.Vary(o.Vary), Repeat: o.Repeat, Baseline: map[string]int{}}
	for _, op := range o.Params {
		prm := plan.Param{Name: op.Name, Numeric: op.Numeric}
		for i, label := range op.Values {
			prm.Values = append(prm.Values, plan.ParamValue{Label: label})
			if label == op.Baseline {
				e.Baseline[op.Name] = i
			}
		}
		e.Params = append(e.Params, prm)
	}
	pointOf := map[string]int{}
	for i, p := range o.Points {
		pointOf[p.Key] = i
	}
	order := make([]Slot, 0, len(o.Runs))
	results := make([]*result.Result, 0, len(o.Runs))
	for i, r := range o.Runs {
		pi, ok := pointOf[r.Point]
		if !ok {
			return
		}
		order = append(order, Slot{Index: i, Point: pi, Rep: r.Rep})
		results = append(results, o.results[i])
	}
	v := Analyze(e, o.Points, order, results)
	if o.Verdict != nil && len(o.Verdict.Figures) > 0 && len(v.Figures) == 0 {
		return // runs not found where they were: keep what was stored
	}
	o.Verdict = v
}

// IsExperiment reports whether dir holds an experiment's results.
func IsExperiment(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "experiment.json"))
	return err == nil
}
