package plan

import (
	"errors"
	"strings"
	"testing"
)

// TestRepeatAuto: repeat: auto runs up to max_repeat rounds (20 by
// default) with an optional min_effect; max_repeat or min_effect without
// it, a max_repeat under 6 and a min_effect that is not a share are
// refused at their place.
func TestRepeatAuto(t *testing.T) {
	t.Parallel()
	const head = "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\nparams: { n: [1, 2] }\n"
	good := []struct {
		src       string
		repeat    int
		minEffect float64
	}{
		{"repeat: auto\n", 20, 0},
		{"repeat: auto\nmax_repeat: 12\nmin_effect: 2%\n", 12, 0.02},
	}
	for _, g := range good {
		p, err := Parse("plan.yaml", []byte(head+g.src), Options{})
		if err != nil {
			t.Fatalf("%q: %v", g.src, err)
		}
		if e := p.Experiment; !e.Auto || e.Repeat != g.repeat || e.MinEffect != g.minEffect {
			t.Errorf("%q: auto %v repeat %d min_effect %v", g.src, e.Auto, e.Repeat, e.MinEffect)
		}
	}
	bad := []struct{ src, at, want string }{
		{"repeat: 5\nmax_repeat: 12\n", "6:13", "max_repeat is for repeat: auto"},
		{"min_effect: 2%\n", "5:13", "min_effect is for repeat: auto"},
		{"repeat: auto\nmax_repeat: 4\n", "6:13", "max_repeat must be at least 6"},
		{"repeat: auto\nmin_effect: 0.02\n", "6:13", `min_effect must be a change above 0% and below 100%, such as 2%, got "0.02"`},
		{"repeat: often\n", "5:9", `repeat must be a whole number of rounds, or auto (rounds until the change is decided, at most max_repeat), got "often"`},
	}
	for _, b := range bad {
		_, err := Parse("plan.yaml", []byte(head+b.src), Options{})
		var errs Errors
		if !errors.As(err, &errs) {
			t.Fatalf("%q: error %v is not a positioned plan error", b.src, err)
		}
		found := false
		for _, e := range errs {
			found = found || strings.HasPrefix(e.Error(), "plan.yaml:"+b.at+": ") && strings.Contains(e.Msg, b.want)
		}
		if !found {
			t.Errorf("%q: got\n%v\nwant at %s %q", b.src, err, b.at, b.want)
		}
	}
}
