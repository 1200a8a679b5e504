package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/spec"
	"github.com/loadlab/loadlab/internal/stats"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/suggest"
)

// Side is one side of a comparison: the runs of a result or of one point of
// an experiment.
type Side struct {
	Label   string
	Results []*result.Result
	// Runs numbers each result as its experiment does (run 4 is the
	// fourth run of the experiment's order, runs/004, as in the verdict);
	// nil for a single result, whose run is 1.
	Runs []int
}

// Run is the number of the side's i-th result: the experiment's run number,
// or i+1.
func (s Side) Run(i int) int {
	if i < len(s.Runs) {
		return s.Runs[i]
	}
	return i + 1
}

// LoadSide reads a result (a directory with result.json, or the file) or an
// experiment (a directory with experiment.json); of an experiment it takes
// the runs of point (the baseline when empty).
//
// A side may also be several results: a result set (the directory of
// loadlab run --repeat N, whose runs are DIR/runs/NNN/result.json), or
// paths separated by commas (a,b,c), as benchstat reads N runs a side. The
// results of one side must have measured the same thing.
func LoadSide(path, point string) (Side, error) {
	if strings.Contains(path, ",") {
		if _, err := os.Stat(path); err != nil {
			return loadListSide(strings.Split(path, ","), point)
		}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "experiment.json")); err == nil {
			return loadExperimentSide(path, point)
		}
		if _, err := os.Stat(filepath.Join(path, store.ResultFile)); err != nil {
			if runs, _ := filepath.Glob(filepath.Join(path, "runs", "*", store.ResultFile)); len(runs) > 0 {
				sort.Strings(runs)
				for i := range runs {
					runs[i] = filepath.Dir(runs[i])
				}
				side, err := loadListSide(runs, point)
				side.Label = path
				return side, err
			}
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

// loadListSide reads several results as one side; they must share one
// fingerprint, or the side would mix two measurements.
func loadListSide(paths []string, point string) (Side, error) {
	if point != "" {
		return Side{}, fmt.Errorf("%s are single runs, not an experiment: they have no point %q", strings.Join(paths, ", "), point)
	}
	side := Side{Label: strings.Join(paths, ",")}
	for _, p := range paths {
		if p == "" {
			return Side{}, fmt.Errorf("%q: an empty path in the list", strings.Join(paths, ","))
		}
		r, err := store.ReadResult(p)
		if err != nil {
			return Side{}, err
		}
		if len(side.Results) > 0 {
			first := side.Results[0].Fingerprint
			if f := r.Fingerprint; first != nil && f != nil && f.Hash != first.Hash {
				var ds []string
				for _, d := range Differences(first, f) {
					ds = append(ds, fmt.Sprintf("%s: %s · %s", d.Field, d.A, d.B))
				}
				return Side{}, fmt.Errorf("%s and %s measured different things (%s): one side's runs must measure the same thing", paths[0], p, strings.Join(ds, "; "))
			}
		}
		side.Results = append(side.Results, r)
	}
	return side, nil
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
	if !readableSchema(o.Schema) {
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
		side.Runs = append(side.Runs, r.Index) // RunInfo.Index counts from 1
	}
	if len(side.Results) == 0 {
		return Side{}, fmt.Errorf("%s: point %q has no finished runs", dir, want)
	}
	return side, nil
}

// Comparison is two sides figure by figure.
type Comparison struct {
	A, B Side
	Rows []CompareRow
	// Sampling says what the numbers of runs allow.
	Sampling Sampling
	// Suspect lists the runs of either side that carry a validity warning.
	Suspect []SuspectRun
	// Differences are the fields of the plan fingerprint (result.Fingerprint)
	// where A and B differ, in its order; none when they measured the same
	// thing, or when a side has no fingerprint (see Unchecked).
	Differences []Difference
	// SamePlan is true when both sides ran one plan with the same inputs,
	// so that they differ only where their params do: two points of one
	// experiment. Their differences are shown, and do not refuse.
	SamePlan bool
	// PointA and PointB are the sides' experiment points ("threads=4"),
	// empty for a plain run.
	PointA, PointB string
	// Unchecked names the sides ("A", "B") whose results were written by a
	// loadlab that kept no fingerprint: whether they measured the same
	// thing is not known.
	Unchecked []string
}

// Difference is one field of the plan fingerprint where A and B differ.
type Difference struct {
	Field string `json:"field"` // workload, shape, steps, target, server
	A     string `json:"a"`
	B     string `json:"b"`
}

// Unlike reports whether A and B measured different things (not only the
// params of one plan): compare refuses them unless told otherwise.
func (c *Comparison) Unlike() bool { return len(c.Differences) > 0 && !c.SamePlan }

// fingerprintOf is a side's fingerprint (its first run's: the runs of one
// point share it), nil when its results have none.
func fingerprintOf(s Side) (*result.Fingerprint, string) {
	for _, r := range s.Results {
		if r.Fingerprint != nil {
			return r.Fingerprint, r.Settings.Extra["point"]
		}
	}
	return nil, ""
}

// Differences lists the fields where two fingerprints differ, A's value
// against B's. Of the steps, each side's that the other lacks are given, or
// both lists when they hold the same steps in another order.
func Differences(a, b *result.Fingerprint) []Difference {
	var out []Difference
	field := func(name, x, y string) {
		if x != y {
			out = append(out, Difference{Field: name, A: orNone(x), B: orNone(y)})
		}
	}
	field("workload", a.Workload, b.Workload)
	field("shape", a.Shape, b.Shape)
	if !slices.Equal(a.Steps, b.Steps) {
		onlyA, onlyB := missing(a.Steps, b.Steps), missing(b.Steps, a.Steps)
		if len(onlyA) == 0 && len(onlyB) == 0 {
			out = append(out, Difference{Field: "steps (order)", A: strings.Join(a.Steps, "; "), B: strings.Join(b.Steps, "; ")})
		} else {
			out = append(out, Difference{Field: "steps", A: "only here: " + orNone(strings.Join(onlyA, "; ")), B: "only here: " + orNone(strings.Join(onlyB, "; "))})
		}
	}
	serverA := a.Server
	if port, x, y := onlyPort(a.Target, b.Target); port {
		// Two servers started on two free ports measured the same thing
		// if nothing else differs: the port has a name of its own, for
		// --allow-different=port, and a server command that names it
		// differs by the port alone.
		field("port", x, y)
		serverA = strings.ReplaceAll(serverA, ":"+x, ":"+y)
	} else {
		field("target", a.Target, b.Target)
	}
	if serverA != b.Server {
		field("server", a.Server, b.Server)
	}
	return out
}

// onlyPort reports whether two targets (origins) differ in their port
// alone, and the two ports.
func onlyPort(a, b string) (bool, string, string) {
	if a == b {
		return false, "", ""
	}
	ua, erra := url.Parse(a)
	ub, errb := url.Parse(b)
	if erra != nil || errb != nil || ua.Host == "" || ub.Host == "" || ua.Scheme != ub.Scheme || ua.Hostname() != ub.Hostname() || ua.Path != ub.Path {
		return false, "", ""
	}
	return true, ua.Port(), ub.Port()
}

// missing lists the items of x that y lacks, counting repeats.
func missing(x, y []string) []string {
	left := map[string]int{}
	for _, s := range y {
		left[s]++
	}
	var out []string
	for _, s := range x {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// SuspectRun is a run of one side with a validity warning.
type SuspectRun struct {
	Side    string // "A" or "B"
	Run     int    // from 1, the experiment's numbering (Side.Run)
	Warning result.Warning
}

// CompareRow is one figure on both sides.
type CompareRow struct {
	ID     FigureID // the name --fail-on uses
	Figure string   // its display name
	Unit   string
	Higher bool
	A, B   Spread
	Change Change
	// Notes are package stats' own remarks on this comparison (all
	// samples equal, dropped samples), without those on sample sizes,
	// which Sampling states.
	Notes []string
}

// Compare compares two sides with benchstat's rules.
func Compare(a, b Side) *Comparison {
	c := &Comparison{A: a, B: b}
	all := append(append([]*result.Result{}, a.Results...), b.Results...)
	var changes []Change
	for _, f := range figures {
		if !f.applies(all) {
			continue
		}
		sa, sb := values(f, a.Results), values(f, b.Results)
		if len(sa) == 0 || len(sb) == 0 {
			continue
		}
		row := CompareRow{
			ID: f.id, Figure: f.name, Unit: f.unit, Higher: f.higher,
			A: spreadOf(sa), B: spreadOf(sb), Change: compareRuns(sa, sb),
			Notes: stats.Compare(sa, sb, Alpha).Notes(),
		}
		changes = append(changes, row.Change)
		c.Rows = append(c.Rows, row)
	}
	c.Sampling = newSampling([]int{len(a.Results), len(b.Results)}, changes)
	fa, pointA := fingerprintOf(a)
	fb, pointB := fingerprintOf(b)
	c.PointA, c.PointB = pointA, pointB
	if fa == nil {
		c.Unchecked = append(c.Unchecked, "A")
	}
	if fb == nil {
		c.Unchecked = append(c.Unchecked, "B")
	}
	if fa != nil && fb != nil && fa.Hash != fb.Hash {
		c.Differences = Differences(fa, fb)
		c.SamePlan = fa.Plan != "" && fa.Plan == fb.Plan
	}
	// A segment's fingerprint is its whole plan's (merge matches parts by
	// it), yet one segment of four made a quarter of the load: unlike.
	if pa, pb := segmentsOf(a), segmentsOf(b); pa != pb {
		c.Differences = append(c.Differences, Difference{Field: "segments", A: pa, B: pb})
		c.SamePlan = false
	}
	for _, side := range []struct {
		name string
		s    Side
	}{{"A", a}, {"B", b}} {
		for i, r := range side.s.Results {
			for _, w := range r.Validity {
				c.Suspect = append(c.Suspect, SuspectRun{Side: side.name, Run: side.s.Run(i), Warning: w})
			}
		}
	}
	return c
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
	Figure FigureID
	Limit  float64 // signed fraction: +0.10 fails rises above 10%, -0.05 falls below -5%
}

// ParseRule reads a --fail-on rule.
func ParseRule(s string) (Rule, error) {
	fields := strings.Fields(s)
	keys := make([]string, 0, len(figures))
	for _, f := range figures {
		keys = append(keys, string(f.id))
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
		if string(f.id) != fields[0] {
			continue
		}
		if f.higher && v > 0 {
			return Rule{}, fmt.Errorf("bad rule %q: higher %s is better, so a regression is a fall: write %s -%s%%", s, fields[0], fields[0], strings.TrimPrefix(strings.TrimSuffix(pct, "%"), "+"))
		}
		if !f.higher && v < 0 {
			return Rule{}, fmt.Errorf("bad rule %q: lower %s is better, so a regression is a rise: write %s +%s%%", s, fields[0], fields[0], strings.TrimPrefix(strings.TrimSuffix(pct, "%"), "-"))
		}
	}
	return Rule{Text: s, Figure: FigureID(fields[0]), Limit: v / 100}, nil
}

// Failure is a rule a comparison broke.
type Failure struct {
	Rule Rule
	Row  CompareRow
	// ByMedians is true when there were too few runs for any test to tell
	// the change from noise, so the change of the medians decided.
	ByMedians bool
}

// ErrNoFigure is a rule about a figure the comparison does not have.
var ErrNoFigure = errors.New("no such figure in these results")

// Check applies rules. A change beyond a rule's limit fails it when it is
// significant; when there are too few runs for the test to call anything
// significant (the smallest p-value the numbers of runs can give is above
// Alpha: 3 against 3, or 3 against 4; 3 against 5 is tested), the change of
// the medians decides, and the failure says so.
func (c *Comparison) Check(rules []Rule) ([]Failure, error) {
	var out []Failure
	for _, r := range rules {
		var row *CompareRow
		for i := range c.Rows {
			if c.Rows[i].ID == r.Figure {
				row = &c.Rows[i]
			}
		}
		if row == nil {
			return nil, fmt.Errorf("--fail-on %q: %w", r.Text, ErrNoFigure)
		}
		change := row.RuleChange(r.Figure)
		beyond := r.Limit >= 0 && change > r.Limit || r.Limit < 0 && change < r.Limit
		if !beyond {
			continue
		}
		switch {
		case row.Change.Significant():
			out = append(out, Failure{Rule: r, Row: *row})
		case row.Change.Reason == TooFewRuns:
			out = append(out, Failure{Rule: r, Row: *row, ByMedians: true})
		}
	}
	return out, nil
}

// RuleChange is the figure's change from A to B as a rule measures it:
// relative (+0.125 is +12.5%), but in percentage points for the error rate,
// whose relative change from 0 would be undefined (0% to 10% is +0.10). A
// rise from a median of 0 of any other figure is beyond every limit (±Inf).
func (row *CompareRow) RuleChange(id FigureID) float64 {
	if id == FigureErrorRate {
		return (row.B.Median - row.A.Median) / 100
	}
	if row.A.Median == 0 && row.B.Median != 0 {
		return math.Copysign(math.Inf(1), row.B.Median)
	}
	return row.Change.Delta
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
	if !readableSchema(o.Schema) {
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
	return &o, nil
}

// reanalyze computes the verdict again from the runs, so that a stored
// experiment is shown with this loadlab's analysis; an outcome that does
// not say enough to rebuild its design keeps its stored verdict.
func (o *Outcome) reanalyze() {
	if len(o.Params) == 0 || o.Repeat < 1 {
		return
	}
	e := &spec.Experiment{Vary: spec.Vary(o.Vary), Repeat: o.Repeat, KneeShare: o.KneeShare, Baseline: map[string]int{}, TargetRate: o.TargetRate,
		Compare: o.Compare, CompareWhy: spec.CompareReason(o.CompareWhy)}
	for _, op := range o.Params {
		prm := spec.Param{Name: op.Name, Numeric: op.Numeric}
		for i, label := range op.Values {
			prm.Values = append(prm.Values, spec.ParamValue{Label: label})
			if label == op.Baseline {
				e.Baseline[op.Name] = i
			}
		}
		boxesOf(op, &prm)
		e.Params = append(e.Params, prm)
	}
	if e.Vary == spec.Matrix && len(e.Params) > 1 && e.Compare == "" {
		e.Compare, e.CompareWhy = e.Params[len(e.Params)-1].Name, spec.CompareOlder
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
	v := AnalyzeSequential(e, o.Points, order, results, o.Sequential)
	if o.Verdict != nil && len(o.Verdict.Figures) > 0 && len(v.Figures) == 0 {
		return // runs not found where they were: keep what was stored
	}
	o.Verdict = v
	// The verdict is analysed anew, in the current version's terms.
	o.Schema = SchemaExperiment
}

// IsExperiment reports whether dir holds an experiment's results.
func IsExperiment(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "experiment.json"))
	return err == nil
}

// segmentsOf says which execution segments of its plan a side's runs hold:
// "whole" for the whole plan (no --segment, or every segment merged), or
// "2 of 4", "1, 3 of 4"; the runs' own, joined, when they differ.
func segmentsOf(s Side) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.Results {
		d := "whole"
		if p := r.Part; p != nil && p.N > 0 && len(p.Segments) < p.N {
			ks := make([]string, len(p.Segments))
			for i, k := range p.Segments {
				ks[i] = strconv.Itoa(k)
			}
			d = strings.Join(ks, ", ") + " of " + strconv.Itoa(p.N)
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return "whole"
	}
	return strings.Join(out, "; ")
}
