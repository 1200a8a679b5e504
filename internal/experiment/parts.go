package experiment

import (
	"math"

	"github.com/loadlab/loadlab/internal/result"
)

// PartVerdict is one step's (or one scenario's) figures across the points,
// compared as the whole run's are, with the same statistics: a slow step
// mixed with a fast one hides what happened to the fast one, so each is
// compared on its own. A step's figures are its own summary in each run
// (result.json's steps), a scenario's its steps together (scenarios).
type PartVerdict struct {
	Scenario string `json:"scenario"`
	// Step is the step's name; empty in a scenario's verdict.
	Step string `json:"step,omitempty"`
	// Name is how reports call it: the step's name, after "scenario/"
	// when the runs have several scenarios; the scenario's name.
	Name    string        `json:"name"`
	Figures []FigureTable `json:"figures"`
}

// Table returns the part's table of a figure, nil when it has none.
func (p *PartVerdict) Table(id FigureID) *FigureTable {
	for i := range p.Figures {
		if p.Figures[i].ID == id {
			return &p.Figures[i]
		}
	}
	return nil
}

// StepChange is a point at which one step alone changed: its p95 latency
// is significantly different from the reference's, by StepChangeShare or
// more, while every other step's p95 was tested and is not (not
// significant, or within StepChangeShare). The recommendation names the
// step: "login p95 +80% (p=0.002); no other step's p95 changed by 5% or more".
type StepChange struct {
	Point     string   `json:"point"`
	Reference string   `json:"reference"`
	Step      string   `json:"step"` // PartVerdict.Name
	Figure    FigureID `json:"figure"`
	Change    Change   `json:"change"`
	// Others is how many other steps were compared and found unchanged.
	Others int `json:"others"`
}

// StepChangeShare is the least change of a step's p95 latency that counts
// as a change of that step alone: a difference that is significant but
// smaller (a neighbour step 2% slower because its connection is busier) is
// not a change worth naming, and does not spoil "no other step changed".
const StepChangeShare = 0.05

// partFigures are the figures of a step or a scenario: what its own summary
// holds. Throughput is its responses over the load's window.
var partFigures = []struct {
	id     FigureID
	name   string
	unit   string
	higher bool
	get    func(s *result.Summary) (float64, bool)
}{
	{FigureThroughput, "throughput", "req/s", true, func(s *result.Summary) (float64, bool) { return summaryThroughput(s), true }},
	{FigureP50, "p50 latency", "ms", false, func(s *result.Summary) (float64, bool) { return s.Latency.P50, s.Latency.Count > 0 }},
	{FigureP95, "p95 latency", "ms", false, func(s *result.Summary) (float64, bool) { return s.Latency.P95, s.Latency.Count > 0 }},
	{FigureP99, "p99 latency", "ms", false, func(s *result.Summary) (float64, bool) { return s.Latency.P99, s.Latency.Count > 0 }},
	{FigureErrorRate, "error rate", "%", false, func(s *result.Summary) (float64, bool) { return 100 * s.ErrorRate, s.Requests > 0 }},
}

// partKey identifies a step (or a scenario, step "") across runs.
type partKey struct{ scenario, step string }

// partVerdicts compares each step of the runs across the points, and each
// scenario when the runs have more than one; nothing when the runs have one
// step (its figures are the whole run's).
func partVerdicts(points []Point, byPoint [][]*result.Result, refs []int, base int) (steps, scenarios []PartVerdict) {
	var stepKeys, scenarioKeys []partKey
	seen := map[partKey]bool{}
	manyScenarios := false
	for _, rs := range byPoint {
		for _, r := range rs {
			for _, s := range r.Steps {
				k := partKey{s.Scenario, s.Name}
				if !seen[k] {
					seen[k] = true
					stepKeys = append(stepKeys, k)
				}
				manyScenarios = manyScenarios || s.Scenario != stepKeys[0].scenario
			}
			for _, s := range r.Scenarios {
				k := partKey{s.Scenario, ""}
				if !seen[k] {
					seen[k] = true
					scenarioKeys = append(scenarioKeys, k)
				}
			}
		}
	}
	if len(stepKeys) > 1 {
		for _, k := range stepKeys {
			name := k.step
			if manyScenarios {
				name = k.scenario + "/" + k.step
			}
			steps = append(steps, partVerdict(k, name, points, byPoint, refs, base, func(r *result.Result) *result.Summary {
				for i := range r.Steps {
					if r.Steps[i].Scenario == k.scenario && r.Steps[i].Name == k.step {
						return &r.Steps[i].Summary
					}
				}
				return nil
			}))
		}
	}
	if len(scenarioKeys) > 1 {
		for _, k := range scenarioKeys {
			scenarios = append(scenarios, partVerdict(k, k.scenario, points, byPoint, refs, base, func(r *result.Result) *result.Summary {
				for i := range r.Scenarios {
					if r.Scenarios[i].Scenario == k.scenario {
						return &r.Scenarios[i].Summary
					}
				}
				return nil
			}))
		}
	}
	return steps, scenarios
}

func partVerdict(k partKey, name string, points []Point, byPoint [][]*result.Result, refs []int, base int, of func(*result.Result) *result.Summary) PartVerdict {
	pv := PartVerdict{Scenario: k.scenario, Step: k.step, Name: name}
	for _, f := range partFigures {
		t := FigureTable{ID: f.id, Name: f.name, Unit: f.unit, Higher: f.higher}
		samples := make([][]float64, len(points))
		for i, rs := range byPoint {
			for _, r := range rs {
				if s := of(r); s != nil {
					if x, ok := f.get(s); ok {
						samples[i] = append(samples[i], x)
					}
				}
			}
		}
		for i, p := range points {
			row := FigureRow{Point: p.Key, Baseline: i == base, Spread: spreadOf(samples[i]), Samples: samples[i]}
			if ref := refs[i]; ref >= 0 && ref != i && len(samples[i]) > 0 && len(samples[ref]) > 0 {
				c := compareRuns(samples[ref], samples[i])
				row.Change, row.Reference = &c, points[ref].Key
				row.Delta, row.P, row.Significant = c.Delta, c.P, c.Significant()
			}
			t.Rows = append(t.Rows, row)
		}
		pv.Figures = append(pv.Figures, t)
	}
	return pv
}

// stepChanges finds the points at which one step alone changed its p95
// latency (see StepChange).
func stepChanges(points []Point, steps []PartVerdict) []StepChange {
	if len(steps) < 2 {
		return nil
	}
	var out []StepChange
	for i := range points {
		var changed []StepChange
		unchanged := 0
		for _, s := range steps {
			t := s.Table(FigureP95)
			if t == nil || i >= len(t.Rows) {
				continue
			}
			r := t.Rows[i]
			switch c := r.Change; {
			case c != nil && c.Reason == EqualSamples:
				unchanged++ // the same figure in every run on both sides
			case c == nil, c.Status == Untested:
				// Not compared (no runs, or too few): nothing can be
				// said of the other steps either.
			case c.Significant() && c.DeltaDefined && math.Abs(c.Delta) >= StepChangeShare:
				changed = append(changed, StepChange{Point: r.Point, Reference: r.Reference, Step: s.Name, Figure: FigureP95, Change: *c})
			default:
				unchanged++
			}
		}
		if len(changed) == 1 && unchanged == len(steps)-1 {
			c := changed[0]
			c.Others = unchanged
			out = append(out, c)
		}
	}
	return out
}

// summaryThroughput is a summary's responses per second (see Throughput).
func summaryThroughput(s *result.Summary) float64 {
	if s.WindowS > 0 {
		return float64(s.WindowResponses) / s.WindowS
	}
	if s.DurationS > 0 {
		return float64(s.Responses) / s.DurationS
	}
	return s.ThroughputRPS
}
