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

// TestCompareSegments: a segment has its whole plan's fingerprint, yet made
// a share of the load; compared with the whole run it is unlike (it had
// passed as like), and so are two different segments; all segments merged
// are the whole plan.
func TestCompareSegments(t *testing.T) {
	f := fingerprint(result.Fingerprint{Workload: "open", Shape: "400/s for 5s", Steps: []string{"GET /"}, Target: "http://127.0.0.1:3000", Plan: "p1"})
	part := func(s Side, n int, ks ...int) Side {
		for _, r := range s.Results {
			r.Part = &result.Part{Segments: ks, N: n}
		}
		return s
	}
	whole := side("whole", f, "", 1)
	for _, tc := range []struct {
		name   string
		a, b   Side
		unlike bool
		want   []Difference
	}{
		{"one segment against the whole", part(side("s2", f, "", 1), 4, 2), whole, true, []Difference{{Field: "segments", A: "2 of 4", B: "whole"}}},
		{"two segments", part(side("s1", f, "", 1), 4, 1), part(side("s3", f, "", 1), 4, 1, 3), true, []Difference{{Field: "segments", A: "1 of 4", B: "1, 3 of 4"}}},
		{"every segment merged", part(side("merged", f, "", 1), 4, 1, 2, 3, 4), whole, false, nil},
		{"the same segment", part(side("a", f, "", 1), 4, 2), part(side("b", f, "", 1), 4, 2), false, nil},
	} {
		c := Compare(tc.a, tc.b)
		if c.Unlike() != tc.unlike || !reflect.DeepEqual(c.Differences, tc.want) {
			t.Errorf("%s: unlike %v, differences %+v; want %v, %+v", tc.name, c.Unlike(), c.Differences, tc.unlike, tc.want)
		}
	}
}

// TestComparePortOnly: two servers on two free ports, whose commands name
// their ports, differ in one field, the port, which compare's
// --allow-different=port can allow alone; another host is a target.
func TestComparePortOnly(t *testing.T) {
	t.Parallel()
	a := fingerprint(result.Fingerprint{Workload: "closed", Shape: "2 VUs", Steps: []string{"GET /"}, Target: "http://127.0.0.1:40001", Server: "puma -b tcp://127.0.0.1:40001"})
	b := fingerprint(result.Fingerprint{Workload: "closed", Shape: "2 VUs", Steps: []string{"GET /"}, Target: "http://127.0.0.1:40002", Server: "puma -b tcp://127.0.0.1:40002"})
	if got, want := Differences(a, b), []Difference{{"port", "40001", "40002"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("port only: %+v, want %+v", got, want)
	}
	c := *b
	c.Server = "thin -p 40002"
	if got := Differences(a, &c); len(got) != 2 || got[0].Field != "port" || got[1].Field != "server" {
		t.Errorf("port and server: %+v", got)
	}
	d := *b
	d.Target = "http://127.0.0.2:40002"
	if got := Differences(a, &d); len(got) != 2 || got[0].Field != "target" {
		t.Errorf("another host: %+v", got)
	}
}
