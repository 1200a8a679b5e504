package plan

import (
	"strings"
	"testing"
)

// TestCompareFactor: compare: names the param a matrix studies; without
// it, the only param the baseline names; a matrix whose baseline names none
// or several is refused, listing the params, instead of guessing; a name
// that is no param, or compare: in a one-at-a-time plan of several params,
// is refused at its position.
func TestCompareFactor(t *testing.T) {
	const head = "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, duration: 1s } }\nparams: { server: [thin, puma], c: [100, 200], per_vu: [5, 10] }\n"
	for _, tt := range []struct {
		name, extra, factor string
		why                 CompareReason
	}{
		{"named", "vary: matrix\ncompare: c\nbaseline: { server: thin }\n", "c", CompareNamed},
		{"baseline names one", "vary: matrix\nbaseline: { server: puma }\n", "server", CompareBaseline},
		{"one at a time", "", "", ""},
	} {
		p, err := Parse("plan.yaml", []byte(head+tt.extra), Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if e := p.Experiment; e.Compare != tt.factor || e.CompareWhy != tt.why {
			t.Errorf("%s: compare %q (%s), want %q (%s)", tt.name, e.Compare, e.CompareWhy, tt.factor, tt.why)
		}
	}
	one, err := Parse("plan.yaml", []byte(strings.Replace(head, ", c: [100, 200], per_vu: [5, 10]", "", 1)+"compare: server\n"), Options{})
	if err != nil || one.Experiment.Compare != "server" {
		t.Errorf("one param, compare: server: %v", err)
	}
	for _, bad := range []struct{ extra, want string }{
		{"vary: matrix\ncompare: servr\n", `plan.yaml:6:10: compare names "servr", which is not a param (params: server, c, per_vu); did you mean "server"?`},
		{"compare: server\n", "plan.yaml:5:10: compare names the param a matrix studies at each combination of the others; add vary: matrix"},
		{"vary: matrix\nbaseline: { server: thin, c: 100, per_vu: 5 }\n", "plan.yaml:5:7: a matrix of 3 params needs to know which one it studies: add compare: PARAM (one of server, c, per_vu)"},
		{"vary: matrix\n", "plan.yaml:5:7: a matrix of 3 params needs to know which one it studies"},
	} {
		_, err := Parse("plan.yaml", []byte(head+bad.extra), Options{})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.extra, err, bad.want)
		}
	}
}
