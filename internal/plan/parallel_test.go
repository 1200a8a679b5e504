package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/engine"
)

// TestBadParallelSteps: each mistake in a parallel group is an error at its
// place in the file, before any load.
func TestBadParallelSteps(t *testing.T) {
	tests := []struct {
		name, plan, at, want string
	}{
		{"empty group", `
      - parallel: { name: assets, steps: [] }`, "5:42", `parallel group "assets" has no steps`},
		{"no steps", `
      - parallel: { max: 2 }`, "5:19", `parallel group "parallel" has no steps`},
		{"max 0", `
      - parallel: { max: 0, steps: [ { get: /a.css } ] }`, "5:26", "parallel max must be at least 1, got 0"},
		{"nested group", `
      - parallel:
          steps:
            - get: /a.css
            - parallel: { steps: [ { get: /b.css } ] }`, "8:15", "holds another parallel group: groups do not nest"},
		{"capture", `
      - parallel:
          steps:
            - get: /a.css
              capture: { etag: { header: ETag } }`, "8:26", "capture etag in parallel group \"parallel\": the order its requests end in is not defined"},
		{"think", `
      - parallel: { steps: [ { get: /a.css }, { think: 1s } ] }`, "5:47", "holds a think: step"},
		{"ws", `
      - parallel: { steps: [ { ws: /cable, do: [ { close: {} } ] } ] }`, "5:30", "holds a ws: step"},
		{"other keys beside parallel", `
      - parallel: { steps: [ { get: /a.css } ] }
        get: /`, "6:9", `unknown key "get" in a parallel step`},
		{"unknown key", `
      - parallel: { steps: [ { get: /a.css } ], most: 2 }`, "5:49", `unknown key "most" in parallel`},
		{"misspelt", `
      - paralel: { steps: [ { get: /a.css } ] }`, "5:9", `did you mean "parallel"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "target: http://127.0.0.1:9\nscenarios:\n  s:\n    steps:" + tt.plan + "\nload: { closed: { vus: 1, iterations: 1 } }\n"
			_, err := Parse("p.yaml", []byte(src), Options{})
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T %v, want positioned errors", err, err)
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), "p.yaml:"+tt.at+": ") && strings.Contains(e.Msg, tt.want) {
					return
				}
			}
			t.Errorf("got\n%v\nwant at %s: %q", err, tt.at, tt.want)
		})
	}
}

// TestParallelCompiles: a group is one engine step holding its requests,
// each a step of its own in the results (so a threshold may name one), with
// the group's max (6 by default); the steps around it are as ever.
func TestParallelCompiles(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`
target: http://127.0.0.1:9
scenarios:
  s:
    steps:
      - get: /
      - parallel: { name: assets of /, steps: [ { get: /a.css }, { get: /a.js, expect: { status: 200 } } ] }
      - parallel: { max: 2, steps: [ { get: /b.css } ] }
      - get: /next
load: { closed: { vus: 1, iterations: 1 } }
thresholds: [ 'p95(latency, step="GET /a.js") < 1s' ]
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := p.Program(context.Background(), ProgramOptions{}, noResolve)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range prog.Steps {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "GET /,GET /a.css,GET /a.js,GET /b.css,GET /next" {
		t.Errorf("steps %q", names)
	}
	steps := prog.Scenarios[0].Steps
	if len(steps) != 4 {
		t.Fatalf("%d engine steps, want 4", len(steps))
	}
	g, g2 := steps[1].Parallel, steps[2].Parallel
	if g == nil || g2 == nil || steps[1].Name != "assets of /" || g.Max != 6 || g2.Max != 2 || len(g.Steps) != 2 || len(g2.Steps) != 1 {
		t.Fatalf("groups %+v %+v", steps[1], steps[2])
	}
	for i, s := range []*engine.Step{g.Steps[0], g.Steps[1], g2.Steps[0]} {
		if s.Request == nil || s.ID != i+1 {
			t.Errorf("group step %d: %+v", i, s)
		}
	}
	if steps[0].Request == nil || steps[3].Request == nil || steps[3].ID != 4 {
		t.Errorf("steps around the groups: %+v %+v", steps[0], steps[3])
	}
}
