package merge

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
)

// part makes a segment's result with random figures: two steps with
// latency histograms, a series, and starts a fraction of a second apart.
func part(t *testing.T, rng *rand.Rand, k, n int, base time.Time) Part {
	t.Helper()
	r := &result.Result{
		Schema:      result.SchemaResult,
		Name:        "p",
		Started:     base.Add(time.Duration(rng.Int64N(int64(900 * time.Millisecond)))),
		Fingerprint: &result.Fingerprint{Hash: "h"},
		Part:        &result.Part{Segments: []int{k}, N: n, ClockOffset: result.NoClockOffset, StartLatenessMS: rng.Float64()},
		Thresholds:  []result.ThresholdResult{{Text: "p99(latency) < 50ms"}, {Text: "requests > 10"}},
	}
	if rng.IntN(2) == 0 {
		r.Validity = []result.Warning{{Code: "generator_saturated", Message: "the load generator was saturated"}}
	}
	r.Summary.DurationS = 1 + rng.Float64()
	r.Summary.WindowS = r.Summary.DurationS - rng.Float64()/10
	r.Summary.VUsAvg = rng.Float64() * 7
	r.Summary.VUs = 3
	for s := range 2 {
		lat := metrics.NewHistogram()
		count := 20 + rng.IntN(50)
		for range count {
			lat.RecordValue(1000 + rng.Int64N(40000))
		}
		enc, err := metrics.Encode(lat)
		if err != nil {
			t.Fatal(err)
		}
		st := result.Step{Scenario: "default", Name: fmt.Sprint("step", s)}
		st.Histograms.Latency = map[string]string{"ok": enc}
		st.Histograms.Service = map[string]string{"ok": enc}
		st.Summary.Requests, st.Summary.Responses = int64(count), int64(count)
		st.Summary.DurationS, st.Summary.WindowS = r.Summary.DurationS, r.Summary.WindowS
		st.Summary.WindowResponses = int64(count)
		// The step's own checks, always listed; the engine's own, in some
		// parts only (they are listed when they failed).
		failed := int64(rng.IntN(count))
		st.ChecksByName = []result.NamedCheck{{Name: "status is 200", Passed: int64(count)}, {Name: "body contains x", Passed: int64(count) - failed, Failed: failed}}
		for _, own := range result.EngineChecks {
			if rng.IntN(2) == 0 {
				st.ChecksByName = append(st.ChecksByName, result.NamedCheck{Name: own, Failed: 1 + rng.Int64N(3)})
			}
		}
		for _, c := range st.ChecksByName {
			st.Summary.Checks.Passed += c.Passed
			st.Summary.Checks.Failed += c.Failed
		}
		r.Summary.Requests += int64(count)
		r.Summary.Responses += int64(count)
		r.Summary.WindowResponses += int64(count)
		r.Steps = append(r.Steps, st)
	}
	r.Summary.Iterations = r.Summary.Requests / 2
	for s := 1; s <= 2; s++ {
		r.Series = append(r.Series, secondPoint(t, rng, float64(s)))
	}
	return Part{Name: fmt.Sprintf("part%d", k), Result: r}
}

// secondPoint is a second of a segment's series, with its histogram.
func secondPoint(t *testing.T, rng *rand.Rand, at float64) result.Point {
	t.Helper()
	h := metrics.NewHistogram()
	n := 1 + rng.IntN(30)
	for range n {
		h.RecordValue(500 + rng.Int64N(40000))
	}
	pt := result.Point{T: at, Len: 1, Responses: int64(n), Active: int64(rng.IntN(3))}
	metrics.MergedPercentiles(&pt, []string{mustEncode(t, h)})
	return pt
}

func mustEncode(t *testing.T, h *hdr.Histogram) string {
	t.Helper()
	enc, err := metrics.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

func encoded(t *testing.T, r *result.Result) string {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAssociative: merging merges of parts equals merging all of them, in
// whatever grouping and order, for many random sets of parts.
func TestAssociative(t *testing.T) {
	base := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	seeds := uint64(20)
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 17))
		var ps []Part
		for k := 1; k <= 4; k++ {
			ps = append(ps, part(t, rng, k, 4, base))
		}
		all, err := Results(ps, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := func(parts ...Part) Part {
			r, err := Results(parts, Options{Partial: true})
			if err != nil {
				t.Fatal(err)
			}
			return Part{Name: "merged", Result: r}
		}
		for _, grouped := range []*result.Result{
			m(m(ps[0], ps[1]), m(ps[2], ps[3])).Result,
			m(m(ps[0], m(ps[1], ps[2])), ps[3]).Result,
			m(ps[3], ps[1], ps[0], ps[2]).Result,
		} {
			if got, want := encoded(t, grouped), encoded(t, all); got != want {
				t.Fatalf("seed %d: a merge of merges differs:\n%s\n%s", seed, got, want)
			}
		}
		var req int64
		for _, p := range ps {
			req += p.Result.Summary.Requests
		}
		if all.Summary.Requests != req || all.Summary.Latency.Count != req {
			t.Fatalf("seed %d: %d requests, latency count %d; want %d", seed, all.Summary.Requests, all.Summary.Latency.Count, req)
		}
		for i, st := range all.Steps {
			want := map[string]result.Checks{}
			var order []string
			for _, p := range ps {
				for _, c := range p.Result.Steps[i].ChecksByName {
					if _, ok := want[c.Name]; !ok {
						order = append(order, c.Name)
					}
					w := want[c.Name]
					w.Passed += c.Passed
					w.Failed += c.Failed
					want[c.Name] = w
				}
			}
			var sum result.Checks
			for _, c := range st.ChecksByName {
				if w := want[c.Name]; w != (result.Checks{Passed: c.Passed, Failed: c.Failed}) {
					t.Errorf("seed %d: step %s: check %q merged to %d/%d, the parts' sum is %+v", seed, st.Name, c.Name, c.Passed, c.Failed, w)
				}
				sum.Passed += c.Passed
				sum.Failed += c.Failed
			}
			if len(st.ChecksByName) != len(want) || sum != st.Summary.Checks {
				t.Errorf("seed %d: step %s: checks by name %v sum to %+v, the step's totals are %+v", seed, st.Name, st.ChecksByName, sum, st.Summary.Checks)
			}
			for j, c := range st.ChecksByName[:2] {
				if c.Name != order[j] {
					t.Errorf("seed %d: step %s: checks by name %v, the step's own first in the plan's order", seed, st.Name, st.ChecksByName)
				}
			}
		}
	}
}

// TestExactPercentiles: the merged p99 is the p99 of every part's values
// together, to the histogram's own precision, as one histogram of them
// all would give.
func TestExactPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	var ps []Part
	one := metrics.NewHistogram()
	for k := 1; k <= 3; k++ {
		p := part(t, rng, k, 3, base)
		for _, st := range p.Result.Steps {
			h, err := metrics.Decode(st.Histograms.Latency["ok"])
			if err != nil {
				t.Fatal(err)
			}
			one.Merge(h)
		}
		ps = append(ps, p)
	}
	m, err := Results(ps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := metrics.Percentiles(one); m.Summary.Latency != want {
		t.Errorf("merged latency %+v, want %+v", m.Summary.Latency, want)
	}
	if len(m.Thresholds) != 2 || m.Thresholds[1].Measured != float64(one.TotalCount()) {
		t.Errorf("thresholds %+v", m.Thresholds)
	}
	for _, w := range m.Validity {
		if !strings.HasPrefix(w.Message, "segment ") || !strings.Contains(w.Message, " of 3: the load generator was saturated") {
			t.Errorf("warning %q", w.Message)
		}
	}
}

// TestExactSeriesPercentiles: a merged second's percentiles are those of
// every part's requests in that second together (segments keep each
// second's histogram), not the largest of the parts'; a part without
// histograms makes that second an upper bound, with no histogram kept.
func TestExactSeriesPercentiles(t *testing.T) {
	base := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	mk := func(k int, values ...int64) Part {
		h := metrics.NewHistogram()
		for _, v := range values {
			h.RecordValue(v)
		}
		pt := result.Point{T: 1, Len: 1, Responses: int64(len(values))}
		metrics.MergedPercentiles(&pt, []string{mustEncode(t, h)})
		r := &result.Result{
			Schema: result.SchemaResult, Name: "p", Started: base,
			Fingerprint: &result.Fingerprint{Hash: "h"},
			Part:        &result.Part{Segments: []int{k}, N: 2, ClockOffset: result.NoClockOffset},
			Series:      []result.Point{pt},
		}
		r.Summary.DurationS, r.Summary.WindowS = 1, 1
		return Part{Name: fmt.Sprint("part", k), Result: r}
	}
	// Part 1: nine fast requests; part 2: one slow one. Together the p50
	// is fast; the largest of the parts' p50s would be the slow one.
	fast := []int64{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}
	m, err := Results([]Part{mk(1, fast...), mk(2, 50000)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Series) != 1 {
		t.Fatalf("series %+v", m.Series)
	}
	pt := m.Series[0]
	if pt.P50 > 1.01 || pt.Max < 49.9 || pt.Hist == "" || pt.Responses != 10 {
		t.Fatalf("merged second %+v: want p50 1 ms, max 50 ms, a histogram, 10 responses", pt)
	}
	// The same with part 2 written without its histogram: bounded.
	p2 := mk(2, 50000)
	p2.Result.Series[0].Hist = ""
	m, err = Results([]Part{mk(1, fast...), p2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pt := m.Series[0]; pt.P50 < 49.9 || pt.Hist != "" {
		t.Fatalf("bounded second %+v: want the largest p50 (50 ms) and no histogram", pt)
	}
}

func TestRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Now()
	p := func(k int) Part { return part(t, rng, k, 3, base) }
	other := p(2)
	other.Result.Fingerprint = &result.Fingerprint{Hash: "other"}
	exp := p(3)
	exp.Result.Settings.Extra = map[string]string{"point": "threads=4"}
	whole := p(3)
	whole.Result.Part = nil
	fours := p(3)
	fours.Result.Part.N = 4
	cut := p(2)
	cut.Result.Summary.Interrupted = true
	cut.Result.Summary.DurationS = 1.25
	for _, c := range []struct {
		parts []Part
		want  string
	}{
		{nil, "no parts"},
		{[]Part{p(1), other, p(3)}, "different plans"},
		{[]Part{p(1), p(2), p(2), p(3)}, "segment 2 of 3 is in both part2 and part2"},
		{[]Part{p(1)}, "segments 2, 3 of 3 are missing"},
		{[]Part{p(1), p(2), exp}, "experiment (point threads=4)"},
		{[]Part{p(1), p(2), whole}, "not a segment's result"},
		{[]Part{p(1), p(2), fours}, "segments of 3 and part3 of 4"},
		{[]Part{p(1), cut, p(3)}, "segment 2 of 3 is missing: part2 was interrupted after 1.2s, before the end of its load"},
	} {
		_, err := Results(c.parts, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d parts: %v; want %q", len(c.parts), err, c.want)
		}
	}
	r, err := Results([]Part{p(1), p(3)}, Options{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if last := r.Validity[len(r.Validity)-1]; last.Code != "partial_merge" || !strings.Contains(last.Message, "segments 1, 3 of 3") {
		t.Errorf("partial merge warnings %+v", r.Validity)
	}
	// --partial takes an interrupted part as it is, and the merge says it
	// was interrupted.
	r, err = Results([]Part{p(1), cut, p(3)}, Options{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Summary.Interrupted {
		t.Errorf("a merge with an interrupted part is not marked interrupted")
	}
}

// TestSumSeconds: the parts' per-second responses of a scenario add up
// second by second over the seconds all have, when the parts started
// together (--start-at); parts that started apart count other seconds, and
// give none.
func TestSumSeconds(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	part := func(start time.Time, ps ...int64) Part {
		return Part{Name: "p", Result: &result.Result{Started: start, Scenarios: []result.ScenarioTotals{{Scenario: "A", PerSecond: ps}}}}
	}
	got := sumSeconds([]Part{part(at, 10, 20, 30), part(at.Add(80*time.Millisecond), 1, 2)}, 0)
	if fmt.Sprint(got) != "[11 22]" {
		t.Errorf("together: %v, want [11 22]", got)
	}
	if got := sumSeconds([]Part{part(at, 10, 20), part(at.Add(2*time.Second), 1, 2)}, 0); got != nil {
		t.Errorf("apart: %v, want none", got)
	}
	if got := sumSeconds([]Part{part(at, 10, 20), part(at)}, 0); got != nil {
		t.Errorf("a part without them: %v, want none", got)
	}
}
