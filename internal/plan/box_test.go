package plan

import (
	"errors"
	"strings"
	"testing"
)

const boxBase = "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"

// A param of boxes sets server.limits at each point, beside what
// server.limits sets itself, and keeps each box's price.
func TestBoxParam(t *testing.T) {
	src := boxBase + "server:\n  run: \"true\"\n  limits: { swap: 0 }\n" +
		"params:\n  box: { \"1x\": { cpus: 1, memory: 512MiB, price_per_hour: 0.05 }, \"2x\": { cpus: \"0-1\", memory: 1GiB, price_per_hour: $0.10 } }\n" +
		"target_rate: 500/s\n"
	p, err := Parse("plan.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := p.Experiment
	if len(e.Params) != 1 || !e.Params[0].Boxes || e.TargetRate != 500 {
		t.Fatalf("experiment %+v", e)
	}
	for i, want := range []struct {
		price  float64
		limits string
	}{{0.05, "cpus 1, memory 512 MiB, swap 0 B"}, {0.10, "cpus 0-1, memory 1 GiB, swap 0 B"}} {
		v := e.Params[0].Values[i]
		if v.Box == nil || v.Box.PricePerHour != want.price {
			t.Errorf("%s: box %+v, want price %v", v.Label, v.Box, want.price)
		}
		spec, err := p.ServerSpec(map[string]any{"box": v.Value})
		if err != nil {
			t.Fatalf("%s: %v", v.Label, err)
		}
		if got := spec.Limits.String(); got != want.limits {
			t.Errorf("%s: limits %q, want %q", v.Label, got, want.limits)
		}
	}
	// Without a price, a mapping of values is no box: it limits nothing.
	p, err = Parse("plan.yaml", []byte(boxBase+"server: { run: \"true\" }\nparams:\n  box: { a: { cpus: 1 } }\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if spec, err := p.ServerSpec(nil); err != nil || p.Experiment.Params[0].Boxes || !spec.Limits.IsZero() {
		t.Errorf("no price: boxes %v, limits %+v, %v", p.Experiment.Params[0].Boxes, spec.Limits, err)
	}
}

// Every mistake in boxes is an error at the value that has it.
func TestBoxParamErrors(t *testing.T) {
	server := "server:\n  run: \"true\"\n"
	for _, tt := range []struct {
		name, extra, params string
		line, col           int
		want                string
	}{
		{"bad cpus", "", "{ a: { cpus: two, price_per_hour: 1 } }", 7, 21, `box.a.cpus: bad cpus "two"`},
		{"tiny memory", "", "{ a: { memory: 512, price_per_hour: 1 } }", 7, 23, "box.a.memory: 512 B is below 4 MiB"},
		{"no price", "", "{ a: { cpus: 1, price_per_hour: 1 }, b: { cpus: 2 } }", 7, 48, "box.b needs price_per_hour"},
		{"bad price", "", "{ a: { cpus: 1, price_per_hour: -1 } }", 7, 40, `box.a.price_per_hour must be a price above 0`},
		{"not a box", "", "{ a: { cpus: 1, price_per_hour: 1 }, b: 2 }", 7, 48, "box.b must be a box"},
		{"unknown key", "", "{ a: { cpu: 1, memory: 1GiB, price_per_hour: 1 } }", 7, 15, `unknown key "cpu" in box.a; did you mean "cpus"?`},
		{"limits nothing", "", "{ a: { price_per_hour: 1 } }", 7, 13, "box.a limits nothing"},
		{"swap alone", "", "{ a: { cpus: 1, swap: 0, price_per_hour: 1 } }", 7, 30, "box.a.swap needs box.a.memory"},
		{"set twice", "  limits: { cpus: 2 }\n", "{ a: { cpus: 1, price_per_hour: 1 } }", 6, 19, "server.limits.cpus is set here and by box a of param box"},
		{"bad target rate", "target_rate: fast\n", "{ a: { cpus: 1, price_per_hour: 1 } }", 6, 14, `target_rate must be a rate above 0`},
	} {
		src := boxBase + server + tt.extra + "params:\n  box: " + tt.params + "\n"
		if strings.HasPrefix(tt.extra, "target_rate") {
			src = boxBase + tt.extra + server + "params:\n  box: " + tt.params + "\n"
			tt.line = 4
		}
		_, err := Parse("plan.yaml", []byte(src), Options{})
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Pos.Line != tt.line || errs[0].Pos.Col != tt.col || !strings.Contains(errs[0].Msg, tt.want) {
			t.Errorf("%s: %v; want one error at %d:%d saying %q", tt.name, err, tt.line, tt.col, tt.want)
		}
	}
	for _, tt := range []struct{ name, src, want string }{
		{"no server", boxBase + "params:\n  box: { a: { cpus: 1, price_per_hour: 1 } }\n", "param box names boxes (price_per_hour), whose limits apply to the server under test: add a server: section"},
		{"target rate without boxes", boxBase + "target_rate: 100\nparams:\n  threads: [1, 2]\n", "target_rate is the rate the cheapest setup of boxes must serve: it needs a param of boxes"},
	} {
		_, err := Parse("plan.yaml", []byte(tt.src), Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", tt.name, err, tt.want)
		}
	}
}
