package threshold

import (
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// TestCountsByScenario: iterations and dropped take scenario=, from the
// scenario's own totals; dropped only when the scenario had a load of its
// own; step= and status= are refused for them.
func TestCountsByScenario(t *testing.T) {
	r := &result.Result{
		Summary: result.Summary{Iterations: 130, Dropped: 7},
		Steps:   []result.Step{{Scenario: "signup", Name: "post"}, {Scenario: "browse", Name: "home"}},
		Scenarios: []result.ScenarioTotals{
			{Scenario: "signup", Load: "open", Summary: result.Summary{Iterations: 30, Dropped: 7}},
			{Scenario: "browse", Load: "closed", Summary: result.Summary{Iterations: 100}},
		},
	}
	for _, tt := range []struct {
		text string
		pass bool
	}{
		{"dropped(scenario=signup) < 1", false},
		{"dropped(scenario=browse) < 1", true},
		{"iterations(scenario=signup) >= 30", true},
		{"iterations(scenario=browse) > 100", false},
		{"dropped < 8", true},
	} {
		th, err := Parse(tt.text)
		if err != nil {
			t.Fatalf("%s: %v", tt.text, err)
		}
		if o := Evaluate(th, r, nil, nil); o.Pass != tt.pass || o.Missing {
			t.Errorf("%s: %+v, want pass %v", tt.text, o, tt.pass)
		}
	}
	shared := *r
	shared.Scenarios = []result.ScenarioTotals{{Scenario: "signup", Summary: result.Summary{Iterations: 30}}, {Scenario: "browse", Summary: result.Summary{Iterations: 100}}}
	th, _ := Parse("dropped(scenario=signup) < 1")
	if o := Evaluate(th, &shared, nil, nil); !o.Missing || o.Pass || !strings.Contains(o.Detail, "only when each scenario has a load of its own") {
		t.Errorf("dropped of a weighted scenario: %+v, want missing and failed", o)
	}
	for _, text := range []string{"dropped(step=post) < 1", "iterations(status=ok) > 1"} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), "takes scenario= only") {
			t.Errorf("%s: %v, want refused", text, err)
		}
	}
}
