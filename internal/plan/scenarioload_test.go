package plan

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const perScenarioPlan = `target: http://127.0.0.1:1
scenarios:
  signup:
    load: { open: { rate: 12/s, max_vus: 20, duration: 1m } }
    steps: [ { post: /users } ]
  browse:
    load: { closed: { vus: "{{ vus }}", duration: 30s } }
    steps: [ { get: / } ]
  ramp:
    load:
      stages: [ { vus: 0 }, { ramp: 4, over: 10s } ]
    steps: [ { get: /report } ]
vars: { vus: 500 }
`

func TestScenarioLoads(t *testing.T) {
	p, err := Parse("plan.yaml", []byte(perScenarioPlan), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.PerScenario() || p.Load.Kind != "" {
		t.Fatalf("per scenario %v, plan load %+v", p.PerScenario(), p.Load)
	}
	s, b, r := p.Scenarios[0].Load, p.Scenarios[1].Load, p.Scenarios[2].Load
	if s.Kind != LoadOpen || s.Rate.PerSecond() != 12 || s.MaxVUs != 20 || s.Duration != time.Minute || s.Pos.Line != 4 {
		t.Errorf("signup's load %+v", s)
	}
	if b.Kind != LoadClosed || b.VUs != 500 || b.Duration != 30*time.Second {
		t.Errorf("browse's load %+v (its vus from a variable)", b)
	}
	if r.Kind != LoadRampVUs || len(r.VUStages) != 1 {
		t.Errorf("ramp's load %+v", r)
	}
	if p.MostVUs() != 524 || p.LoadLength() != time.Minute {
		t.Errorf("most VUs %d, length %v; want 20+500+4 and the longest, 1m", p.MostVUs(), p.LoadLength())
	}
}

// TestScenarioLoadsMixed: loads per scenario and the plan's load, or
// weights, or a scenario without a load: each a positioned error.
func TestScenarioLoadsMixed(t *testing.T) {
	tests := []struct {
		name, plan, at, want string
	}{
		{"plan load too", `target: http://127.0.0.1:1
load: { closed: { vus: 2, duration: 1s } }
scenarios:
  a:
    load: { closed: { vus: 1, duration: 1s } }
    steps: [ { get: / } ]
`, "plan.yaml:2:7", "scenario a has a load: of its own (at plan.yaml:5:11), so the plan's load: has nothing to run"},
		{"weight", `target: http://127.0.0.1:1
scenarios:
  a:
    weight: 3
    load: { closed: { vus: 1, duration: 1s } }
    steps: [ { get: / } ]
`, "plan.yaml:4:13", "scenario a has its own load:, which says how much of it runs; weight shares one load: between scenarios: remove it"},
		{"one without", `target: http://127.0.0.1:1
scenarios:
  a:
    load: { closed: { vus: 1, duration: 1s } }
    steps: [ { get: / } ]
  b:
    steps: [ { get: / } ]
`, "plan.yaml:6:3", "scenario b has no load: when a scenario has a load: of its own (a at plan.yaml:4:11), every scenario does"},
		{"bad scenario load", `target: http://127.0.0.1:1
scenarios:
  a:
    load: { open: { rate: 5/s, duration: 1s } }
    steps: [ { get: / } ]
`, "plan.yaml:4:19", "open load needs max_vus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(tt.plan), Options{})
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want plan errors", err)
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), tt.at+": ") && strings.Contains(e.Msg, tt.want) {
					return
				}
			}
			t.Errorf("got\n%v\nwant at %s: %q", err, tt.at, tt.want)
		})
	}
}
