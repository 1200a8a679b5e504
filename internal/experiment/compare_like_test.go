package experiment

import (
	"reflect"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// side is n runs with fingerprint f (nil: an older result without one).
func side(label string, f *result.Fingerprint, point string, n int) Side {
	s := Side{Label: label}
	for range n {
		r := &result.Result{Schema: result.SchemaResult, Fingerprint: f, Summary: result.Summary{Responses: 100, DurationS: 1}}
		if point != "" {
			r.Settings.Extra = map[string]string{"point": point}
		}
		s.Results = append(s.Results, r)
	}
	return s
}

func fingerprint(f result.Fingerprint) *result.Fingerprint {
	f.Hash = f.Sum()
	return &f
}

// TestCompareLikeWithLike: the case, an open 1.5/s experiment
// against a closed run of 10 VUs on another server, is unlike, field by
// field; the same fingerprint is like; two points of one plan differ where
// their params do, and are not refused; an older result is unchecked.
func TestCompareLikeWithLike(t *testing.T) {
	steps := []string{"checkout: GET /", "checkout: POST /cart"}
	open := fingerprint(result.Fingerprint{Workload: "open", Shape: "1.5/s for 10s, at most 20 VUs", Steps: steps, Target: "http://127.0.0.1:3000", Server: "thin start -p 3000", Plan: "p1"})
	closed := fingerprint(result.Fingerprint{Workload: "closed", Shape: "10 VUs for 10s", Steps: append([]string{"checkout: GET /health"}, steps...), Target: "http://127.0.0.1:3000", Server: "puma -b tcp://127.0.0.1:3000", Plan: "p2"})

	c := Compare(side("a", open, "", 3), side("b", closed, "", 1))
	want := []Difference{
		{"workload", "open", "closed"},
		{"shape", "1.5/s for 10s, at most 20 VUs", "10 VUs for 10s"},
		{"steps", "only here: (none)", "only here: checkout: GET /health"},
		{"server", "thin start -p 3000", "puma -b tcp://127.0.0.1:3000"},
	}
	if !reflect.DeepEqual(c.Differences, want) || !c.Unlike() || c.SamePlan || len(c.Unchecked) != 0 {
		t.Errorf("open vs closed: differences %+v, unlike %v, same plan %v, unchecked %v", c.Differences, c.Unlike(), c.SamePlan, c.Unchecked)
	}

	again := *open
	again.Plan = "another file, the same test"
	if c := Compare(side("a", open, "", 3), side("b", &again, "", 3)); c.Differences != nil || c.Unlike() || c.Unchecked != nil {
		t.Errorf("the same test: differences %+v, unchecked %v", c.Differences, c.Unchecked)
	}

	puma := *open
	puma.Server, puma.Hash = "puma -b tcp://127.0.0.1:3000", ""
	pumaF := fingerprint(puma)
	c = Compare(side("x thin", open, "server=thin", 3), side("x puma", pumaF, "server=puma", 3))
	if len(c.Differences) != 1 || c.Differences[0].Field != "server" || !c.SamePlan || c.Unlike() || c.PointA != "server=thin" || c.PointB != "server=puma" {
		t.Errorf("two points of one plan: %+v", c)
	}

	reordered := *open
	reordered.Steps, reordered.Hash = []string{steps[1], steps[0]}, ""
	c = Compare(side("a", open, "", 1), side("b", fingerprint(reordered), "", 1))
	if len(c.Differences) != 1 || c.Differences[0].Field != "steps (order)" {
		t.Errorf("steps in another order: %+v", c.Differences)
	}

	c = Compare(side("old", nil, "", 3), side("new", open, "", 3))
	if !reflect.DeepEqual(c.Unchecked, []string{"A"}) || c.Differences != nil || c.Unlike() {
		t.Errorf("an older result: unchecked %v, differences %+v", c.Unchecked, c.Differences)
	}
}
