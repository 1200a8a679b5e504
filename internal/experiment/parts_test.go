package experiment

import (
	"math"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// withSteps is a run of two steps, login and browse, with these p95s.
func withSteps(login, browse, jitter float64) *result.Result {
	r := fake(100, login+browse)
	step := func(name string, p95 float64) result.Step {
		return result.Step{Scenario: "default", Name: name, Summary: result.Summary{Requests: 50, Responses: 50, WindowS: 1, WindowResponses: 50,
			Latency: result.Percentiles{Count: 50, P50: p95/2 + jitter, P95: p95 + jitter, P99: p95*1.2 + jitter}}}
	}
	r.Steps = []result.Step{step("login", login), step("browse", browse)}
	return r
}

// TestOneStepAloneChanged: a param that slows only login shows in login's
// own table, leaves browse's alone, and is named as a change of login
// alone; a param that slows both is no change of one step.
func TestOneStepAloneChanged(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: /login, name: login }, { get: /browse, name: browse } ]
load: { closed: { vus: 10, duration: 1s } }
params: { mode: [fast, slowlogin, slowall] }
repeat: 5
`)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 3)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		j := float64(s.Rep) * 0.1
		switch points[s.Point].Labels["mode"] {
		case "fast":
			results[i] = withSteps(10, 5, j)
		case "slowlogin":
			results[i] = withSteps(18, 5, float64((s.Rep+2)%5)*0.1) // the same noise, in another order
		case "slowall":
			results[i] = withSteps(18, 9, j)
		}
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Steps) != 2 || v.Steps[0].Name != "login" || v.Steps[1].Name != "browse" || len(v.Scenarios) != 0 {
		t.Fatalf("steps %+v, scenarios %+v", v.Steps, v.Scenarios)
	}
	row := func(step int, id FigureID, point string) FigureRow {
		for _, r := range v.Steps[step].Table(id).Rows {
			if r.Point == point {
				return r
			}
		}
		t.Fatalf("no row %s", point)
		return FigureRow{}
	}
	if r := row(0, FigureP95, "mode=slowlogin"); !r.Significant || math.Round(100*r.Delta) != 77 || r.Reference != "mode=fast" || r.N != 5 {
		t.Errorf("login p95 at slowlogin %+v, want +77%% significant against mode=fast", r)
	}
	if r := row(1, FigureP95, "mode=slowlogin"); r.Significant {
		t.Errorf("browse p95 at slowlogin %+v, want not significant", r)
	}
	if r := row(1, FigureThroughput, "mode=fast"); r.Median != 50 {
		t.Errorf("browse throughput %+v, want 50 req/s", r)
	}
	if len(v.StepChanges) != 1 {
		t.Fatalf("step changes %+v, want one: login at mode=slowlogin", v.StepChanges)
	}
	if c := v.StepChanges[0]; c.Point != "mode=slowlogin" || c.Step != "login" || c.Figure != FigureP95 || c.Others != 1 || math.Round(100*c.Change.Delta) != 77 || c.Change.P > 0.01 {
		t.Errorf("step change %+v", c)
	}
}

// TestStepChangesNeedATest: with too few runs to test, no step is said to
// have changed alone, nor the others to be unchanged.
func TestStepChangesNeedATest(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: /login, name: login }, { get: /browse, name: browse } ]
load: { closed: { vus: 10, duration: 1s } }
params: { mode: [fast, slowlogin] }
repeat: 2
`)
	points := Points(p.Experiment)
	order := Order(len(points), 2, 3)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		if points[s.Point].Labels["mode"] == "fast" {
			results[i] = withSteps(10, 5, float64(s.Rep))
		} else {
			results[i] = withSteps(50, 5, float64(s.Rep))
		}
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Steps) != 2 || len(v.StepChanges) != 0 {
		t.Errorf("steps %d, step changes %+v: want 2 steps and no claim", len(v.Steps), v.StepChanges)
	}
}

// TestOneStepNoStepTables: a run of one step has no step tables: they
// would repeat the whole run's.
func TestOneStepNoStepTables(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { mode: [a, b] }
repeat: 3
`)
	points := Points(p.Experiment)
	order := Order(len(points), 3, 3)
	results := make([]*result.Result, len(order))
	for i := range order {
		r := fake(100, 10)
		r.Steps = []result.Step{{Scenario: "default", Name: "GET /", Summary: r.Summary}}
		results[i] = r
	}
	if v := Analyze(p.Experiment, points, order, results); v.Steps != nil || v.StepChanges != nil {
		t.Errorf("steps %+v, step changes %+v", v.Steps, v.StepChanges)
	}
}

// TestScenarioVerdicts: runs of two scenarios get a verdict for each, from
// its own totals, and step names say their scenario.
func TestScenarioVerdicts(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
scenarios:
  signup: { load: { open: { rate: 10/s, max_vus: 5, duration: 1s } }, steps: [ { get: /a, name: post } ] }
  browse: { load: { closed: { vus: 2, duration: 1s } }, steps: [ { get: /b, name: home } ] }
params: { mode: [a, b] }
repeat: 5
`)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 3)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		signup := 10.0
		if points[s.Point].Labels["mode"] == "b" {
			signup = 30
		}
		j := float64(s.Rep) * 0.1
		sum := func(p95 float64) result.Summary {
			return result.Summary{Requests: 10, Responses: 10, WindowS: 1, WindowResponses: 10, Latency: result.Percentiles{Count: 10, P50: p95 + j, P95: p95 + j, P99: p95 + j}}
		}
		r := fake(100, 20)
		r.Steps = []result.Step{{Scenario: "signup", Name: "post", Summary: sum(signup)}, {Scenario: "browse", Name: "home", Summary: sum(5)}}
		r.Scenarios = []result.ScenarioTotals{{Scenario: "signup", Load: "open", Summary: sum(signup)}, {Scenario: "browse", Load: "closed", Summary: sum(5)}}
		results[i] = r
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Steps) != 2 || v.Steps[0].Name != "signup/post" || len(v.Scenarios) != 2 || v.Scenarios[0].Name != "signup" || v.Scenarios[0].Step != "" {
		t.Fatalf("steps %+v\nscenarios %+v", v.Steps, v.Scenarios)
	}
	if r := v.Scenarios[0].Table(FigureP95).Rows[1]; !r.Significant || math.Round(100*r.Delta) != 194 {
		t.Errorf("signup p95 at mode=b %+v, want +194%%", r)
	}
	if r := v.Scenarios[1].Table(FigureP95).Rows[1]; r.Change == nil || r.Significant || r.Delta != 0 {
		t.Errorf("browse p95 at mode=b %+v, want no change", r)
	}
	if len(v.StepChanges) != 1 || v.StepChanges[0].Step != "signup/post" {
		t.Errorf("step changes %+v", v.StepChanges)
	}
}
