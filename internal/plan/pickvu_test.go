package plan

import (
	"strings"
	"testing"
)

// TestPickVU: pick: vu gives VU n row n+1 (VUs count from 0), so a source
// needs a row for every VU the load may have at once; fewer is an error at
// the pick, before any load, naming the setting that asks for the VUs.
func TestPickVU(t *testing.T) {
	plan := func(load string) string {
		return `target: http://127.0.0.1:1
data:
  users: { csv: testdata/users.csv, pick: vu }
steps: [ { get: "/?u={{ users.email }}" } ]
load: ` + load + "\n"
	}
	for _, tt := range []struct {
		name, load string
		set        []string
		want       string // empty: the plan is good
	}{
		{"closed, a row each", "{ closed: { vus: 3, iterations: 2 } }", nil, ""},
		{"closed, fewer rows", "{ closed: { vus: 4, iterations: 2 } }", nil, "plan.yaml:3:43: data source users: pick: vu gives each VU its own row, but users.csv has 3 rows for up to 4 VUs (load.closed.vus): add rows, or lower the VUs"},
		{"closed, raised by --set", "{ closed: { vus: 3, iterations: 2 } }", []string{"load.closed.vus=10"}, "has 3 rows for up to 10 VUs (load.closed.vus)"},
		{"open, max_vus counts", "{ open: { rate: 10/s, duration: 1s, max_vus: 3 } }", nil, ""},
		{"open, fewer rows than max_vus", "{ open: { rate: 10/s, duration: 1s, max_vus: 5 } }", nil, "has 3 rows for up to 5 VUs (load.open.max_vus)"},
		{"ramp, the highest stage", "{ stages: [ { vus: 1 }, { ramp: 6, over: 1s } ] }", nil, "has 3 rows for up to 6 VUs (the highest of load.stages)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("plan.yaml", []byte(plan(tt.load)), Options{Set: tt.set})
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want == "":
				if p.Data[0].Pick != PickVU {
					t.Errorf("pick %q", p.Data[0].Pick)
				}
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
