package experiment

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

func load(t *testing.T, yaml string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("plan.yaml", []byte(yaml), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const sweepPlan = `
target: http://127.0.0.1:1
steps: [ { get: "/?w={{ threads }}&a={{ allocator }}" } ]
load: { closed: { vus: "{{ threads }}", iterations: 1 } }
params:
  threads: 1..4
  allocator: { glibc: "", jemalloc: /usr/lib/libjemalloc.so.2 }
baseline: { threads: 2 }
repeat: 3
`

func TestPoints(t *testing.T) {
	p := load(t, sweepPlan)
	var keys []string
	for _, pt := range Points(p.Experiment) {
		keys = append(keys, pt.Key)
	}
	want := "threads=2 allocator=glibc|threads=1 allocator=glibc|threads=3 allocator=glibc|threads=4 allocator=glibc|threads=2 allocator=jemalloc"
	if got := strings.Join(keys, "|"); got != want {
		t.Errorf("one at a time:\n got %s\nwant %s", got, want)
	}
	p = load(t, sweepPlan+"vary: matrix\n")
	pts := Points(p.Experiment)
	if len(pts) != 8 || !pts[0].Baseline || pts[0].Key != "threads=2 allocator=glibc" {
		t.Errorf("matrix: %d points, first %+v", len(pts), pts[0])
	}
	if pts[len(pts)-1].Params["allocator"] != "/usr/lib/libjemalloc.so.2" || pts[len(pts)-1].Labels["allocator"] != "jemalloc" {
		t.Errorf("last point %+v", pts[len(pts)-1])
	}
}

func TestLoadIsSweptToo(t *testing.T) {
	p, err := plan.Parse("plan.yaml", []byte(sweepPlan), plan.Options{Params: map[string]any{"threads": 3, "allocator": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Load.VUs != 3 {
		t.Errorf("vus = %d, want 3 from {{ threads }}", p.Load.VUs)
	}
}

func TestOrder(t *testing.T) {
	a, b := Order(5, 3, 42), Order(5, 3, 42)
	if len(a) != 15 {
		t.Fatalf("%d runs", len(a))
	}
	same := true
	for i := range a {
		if a[i] != b[i] {
			same = false
		}
		if a[i].Index != i {
			t.Errorf("slot %d has index %d", i, a[i].Index)
		}
	}
	if !same {
		t.Error("the same seed gave two orders")
	}
	// Interleaved: each round runs every point once.
	for r := 0; r < 3; r++ {
		seen := map[int]bool{}
		for _, s := range a[r*5 : r*5+5] {
			if s.Rep != r+1 || seen[s.Point] {
				t.Fatalf("round %d: %+v", r+1, a[r*5:r*5+5])
			}
			seen[s.Point] = true
		}
	}
	c := Order(5, 3, 43)
	differs := false
	for i := range a {
		differs = differs || a[i] != c[i]
	}
	if !differs {
		t.Error("another seed gave the same order")
	}
}

// fake builds results with a known throughput and p95 per point.
func fake(rps, p95 float64) *result.Result {
	return &result.Result{Summary: result.Summary{ThroughputRPS: rps, Latency: result.Percentiles{Count: 100, P50: p95 / 2, P95: p95, P99: p95 * 1.5}}}
}

func TestAnalyzeFindsTheKnee(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { threads: 1..8 }
baseline: { threads: 8 }
repeat: 5
`)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 1)
	// Throughput rises to threads=4 and flattens; p95 keeps rising.
	curve := map[string][2]float64{"1": {100, 20}, "2": {195, 21}, "3": {280, 22}, "4": {350, 24}, "5": {360, 30}, "6": {362, 36}, "7": {358, 44}, "8": {355, 52}}
	results := make([]*result.Result, len(order))
	for i, s := range order {
		c := curve[points[s.Point].Labels["threads"]]
		jitter := float64(s.Rep%3-1) * 0.01
		results[i] = fake(c[0]*(1+jitter), c[1]*(1-jitter))
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Sweeps) != 1 {
		t.Fatalf("sweeps %+v", v.Sweeps)
	}
	s := v.Sweeps[0]
	if s.Param != "threads" || s.X[s.Pick] != 4 || s.X[s.Best] != 6 {
		t.Errorf("pick threads=%v, best threads=%v; want 4 and 6", s.X[s.Pick], s.X[s.Best])
	}
	if len(s.Evidence) < 2 {
		t.Fatalf("evidence %+v", s.Evidence)
	}
	if e := s.Evidence[0]; e.Kind != WithinBestThroughput || e.Against != 6 || e.Value != 362 || math.Abs(e.Change-(1-350.0/362)) > 1e-9 {
		t.Errorf("first evidence %+v, want within 3%% of the best throughput, threads=6: 362 req/s", e)
	}
	if e := s.Evidence[1]; e.Kind != LowerP95 || e.Against != 8 || math.Round(100*e.Change) != 54 || e.Test == nil || !e.Test.Significant() {
		t.Errorf("second evidence %+v, want p95 54%% lower than threads=8, significantly", e)
	}
	tp := v.Figures[0]
	if tp.Name != "throughput" || !tp.Rows[0].Baseline || tp.Rows[0].Median != 355 {
		t.Fatalf("throughput table %+v", tp.Rows[0])
	}
	seen := 0
	for _, r := range tp.Rows[1:] {
		if r.Point == "threads=1" {
			seen++
			if !r.Significant || r.Change == nil || r.Change.Status != Significant || math.Round(10000*r.Change.Delta) != -7183 {
				t.Errorf("threads=1 vs 8: %+v", r)
			}
		}
		if r.Point == "threads=7" {
			seen++
			if r.Significant {
				t.Errorf("threads=7 differs from threads=8 by under 1%%, with 1%% noise, yet is significant: %+v", r)
			}
		}
	}
	if seen != 2 {
		t.Errorf("found %d of the rows threads=1 and threads=7", seen)
	}
}

func TestNamedParamVerdict(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { allocator: { glibc: "", jemalloc: /lib/je.so } }
repeat: 5
`)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 9)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		r := fake(100+float64(s.Rep), 50+float64(s.Rep))
		r.Server = &result.Server{RSSPeak: 3000 << 20, RSSAvg: 2000 << 20}
		if points[s.Point].Labels["allocator"] == "jemalloc" {
			r.Server.RSSPeak, r.Server.RSSAvg = (2000+int64(s.Rep))<<20, 1500<<20
		}
		results[i] = r
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Named) != 1 || v.Named[0].Param != "allocator" || v.Named[0].Value != "jemalloc" || v.Named[0].Baseline != "glibc" {
		t.Fatalf("named comparisons %+v", v.Named)
	}
	changes := map[FigureID]Change{}
	for _, f := range v.Named[0].Figures {
		changes[f.ID] = f.Change
	}
	if c := changes[FigureRSSPeak]; !c.Significant() || math.Round(1000*c.Delta) != -332 || math.Round(1000*c.P) != 8 {
		t.Errorf("RSS peak %+v, want -33.2%% (p=0.008)", c)
	}
	for _, id := range []FigureID{FigureThroughput, FigureP50} {
		if c := changes[id]; c.Status != NotSignificant {
			t.Errorf("%s %+v, want not significant", id, c)
		}
	}
}

// TestUntestedIsNotNoDifference: with 3 runs a point no test can call a
// difference significant; the recommendation gives the change of the
// medians as untested rather than "no significant difference".
func TestUntestedIsNotNoDifference(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { delay: [1ms, 3ms] }
repeat: 3
`)
	points := Points(p.Experiment)
	order := Order(len(points), 3, 9)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		if points[s.Point].Labels["delay"] == "3ms" {
			results[i] = fake(36+float64(s.Rep), 25)
		} else {
			results[i] = fake(100+float64(s.Rep), 10)
		}
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Named) != 1 || len(v.Named[0].Figures) == 0 {
		t.Fatalf("named comparisons %+v", v.Named)
	}
	if f := v.Named[0].Figures[0]; f.ID != FigureThroughput || f.Change.Status != Untested || f.Change.Reason != TooFewRuns || f.N != 3 || math.Round(1000*f.Change.Delta) != -627 {
		t.Errorf("throughput %+v, want -62.7%% untested: too few runs, n=3", f)
	}
	if v.Sampling.Untested == nil || v.Sampling.Untested.N1 != 3 || v.Sampling.Untested.N2 != 3 || v.Sampling.RunsToTest != 4 || v.Sampling.IntervalRuns != 6 {
		t.Errorf("sampling %+v", v.Sampling)
	}
}

func TestCompareRules(t *testing.T) {
	a := Side{Label: "a"}
	b := Side{Label: "b"}
	for i := range 5 {
		a.Results = append(a.Results, fake(1000+float64(i), 10+0.1*float64(i)))
		b.Results = append(b.Results, fake(1001+float64(i), 12+0.1*float64(i)))
	}
	c := Compare(a, b)
	for _, tt := range []struct {
		rule string
		fail bool
	}{
		{"p95 +10%", true},        // +19%, significant
		{"p95 +25%", false},       // within
		{"throughput -5%", false}, // not worse
		{"p50 +30%", false},
	} {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := c.Check([]Rule{r})
		if err != nil || (len(fs) > 0) != tt.fail {
			t.Errorf("%s: failures %v, %v", tt.rule, fs, err)
		}
	}
	for _, bad := range []string{"p95 10%", "p95", "latency +10%", "p95 +x%", "p95 -10%", "throughput +5%", "error_rate -1%"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("rule %q accepted", bad)
		}
	}
	one := Compare(Side{Results: a.Results[:1]}, Side{Results: b.Results[:1]})
	r, _ := ParseRule("p95 +10%")
	fs, _ := one.Check([]Rule{r})
	if len(fs) != 1 || !fs[0].ByMedians {
		t.Errorf("single runs: %+v", fs)
	}

	// The error rate's limit is in points: from 0% (where a relative change
	// is undefined) to 10% fails +1%, as does 2% to 4%; 2% to 2.5% does not.
	withErrors := func(rates ...float64) Side {
		var s Side
		for _, e := range rates {
			r := fake(1000, 10)
			r.Summary.ErrorRate = e
			s.Results = append(s.Results, r)
		}
		return s
	}
	rule, _ := ParseRule("error_rate +1%")
	for _, tt := range []struct {
		a, b []float64
		fail bool
	}{
		{[]float64{0}, []float64{0.10}, true},
		{[]float64{0, 0, 0, 0, 0}, []float64{0.10, 0.11, 0.09, 0.10, 0.12}, true},
		{[]float64{0.02, 0.02, 0.02, 0.02}, []float64{0.04, 0.041, 0.039, 0.04}, true},
		{[]float64{0.02}, []float64{0.025}, false},
		{[]float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, false},
	} {
		c := Compare(withErrors(tt.a...), withErrors(tt.b...))
		fs, err := c.Check([]Rule{rule})
		if err != nil || (len(fs) > 0) != tt.fail {
			t.Errorf("error rate %v to %v: failures %+v, %v; want fail %v", tt.a, tt.b, fs, err, tt.fail)
		}
		if tt.fail && err == nil && len(fs) > 0 {
			if want := (median(tt.b) - median(tt.a)); math.Abs(fs[0].Row.RuleChange(FigureErrorRate)-want) > 1e-9 {
				t.Errorf("error rate %v to %v: change %v, want %v points", tt.a, tt.b, fs[0].Row.RuleChange(FigureErrorRate), want)
			}
		}
	}
}

func TestMappingParams(t *testing.T) {
	const yaml = `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: "{{ case.vus }}", iterations: "{{ case.iterations }}" } }
params:
  case:
    "100/1000": { vus: 100, iterations: 10 }
    "200/10000": { vus: 200, iterations: 50 }
repeat: 3
`
	p := load(t, yaml)
	pts := Points(p.Experiment)
	if len(pts) != 2 || pts[1].Key != "case=200/10000" {
		t.Fatalf("points %+v", pts)
	}
	q, err := plan.Parse("plan.yaml", []byte(yaml), plan.Options{Params: pts[1].Params})
	if err != nil {
		t.Fatal(err)
	}
	if q.Load.VUs != 200 || q.Load.Iterations != 50 {
		t.Errorf("load %+v", q.Load)
	}
	_, err = plan.Parse("plan.yaml", []byte(strings.Replace(yaml, "case.vus", "case.users", 1)), plan.Options{})
	if err == nil || !strings.Contains(err.Error(), "case has no field users (fields: iterations, vus)") {
		t.Errorf("missing field: %v", err)
	}
}

func TestMatrixOrderAndFactor(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params:
  case: [small, big]
  server: { thin: thin start, puma: puma }
vary: matrix
compare: server
repeat: 5
`)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 3)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		pt := points[s.Point]
		rps := map[string]float64{"small": 100, "big": 1000}[pt.Labels["case"]]
		if pt.Labels["server"] == "puma" {
			rps *= 1.1
		}
		results[i] = fake(rps+float64(s.Rep), 10)
	}
	v := Analyze(p.Experiment, points, order, results)
	seen := 0
	for _, r := range v.Figures[0].Rows {
		switch r.Point {
		case "case=big server=puma", "case=big server=thin":
			seen++
		}
		switch r.Point {
		case "case=big server=puma":
			if r.Reference != "case=big server=thin" || !r.Significant || r.Delta < 0.09 || r.Delta > 0.11 {
				t.Errorf("big puma: %+v", r)
			}
		case "case=big server=thin":
			if r.Change != nil {
				t.Errorf("big thin is a reference, compared with %q", r.Reference)
			}
		}
	}
	if seen != 2 {
		t.Errorf("found %d of the two case=big rows", seen)
	}
	if v.ComparedParam != "server" || v.ComparedValue != "thin" {
		t.Errorf("compared along %s=%s", v.ComparedParam, v.ComparedValue)
	}
	found := false
	for _, n := range v.Named {
		if n.Value == "puma" && strings.Join(n.At, " ") == "case=big" {
			found = true
			if c := n.Figures[0].Change; n.Figures[0].ID != FigureThroughput || !c.Significant() || math.Round(1000*c.Delta) != 100 || math.Round(1000*c.P) != 8 {
				t.Errorf("puma vs thin at case=big: throughput %+v, want +10.0%% (p=0.008)", c)
			}
		}
	}
	if !found {
		t.Errorf("no comparison of server=puma at case=big: %+v", v.Named)
	}
}

// TestValidityByPoint: the verdict counts each point's validity warnings
// (the warnings themselves are internal/runner's).
func TestValidityByPoint(t *testing.T) {
	p := load(t, sweepPlan)
	points := Points(p.Experiment)
	order := Order(len(points), 3, 1)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		results[i] = fake(100, 10)
		if points[s.Point].Key == "threads=3 allocator=glibc" && s.Rep <= 2 {
			results[i].Validity = []result.Warning{{Code: "dropped", Message: "12 arrivals were dropped"}}
		}
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.ValidityTallies) != 1 {
		t.Fatalf("verdict validity %+v", v.ValidityTallies)
	}
	if w := v.ValidityTallies[0]; w.Point != "threads=3 allocator=glibc" || w.Code != "dropped" || w.Runs != 2 || w.Of != 3 || w.ExampleRun == 0 || w.ExampleMessage != "12 arrivals were dropped" {
		t.Errorf("verdict validity %+v", w)
	}
}

// TestRecommendationOnlyClaimsWhatItShows: three levels get no USL fit (it
// would pass through every point), and a p95 difference within the noise
// is said to be so.
func TestRecommendationOnlyClaimsWhatItShows(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { workers: 1..3 }
baseline: { workers: 3 }
repeat: 5
`)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 1)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		// Throughput flat from 2 on; p95 noisy, its median 18% lower at 2.
		tp := map[string]float64{"1": 100, "2": 190, "3": 191}[points[s.Point].Labels["workers"]]
		p95 := []float64{30, 50, 36, 70, 40}[s.Rep-1]
		if points[s.Point].Labels["workers"] == "2" {
			p95 = []float64{60, 20, 33, 36, 25}[s.Rep-1]
		}
		results[i] = fake(tp*(1+float64(s.Rep)/1000), p95)
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Sweeps) != 1 || v.Sweeps[0].USL != nil {
		t.Fatalf("a USL fit from three levels: %+v", v.Sweeps)
	}
	var lower *Evidence
	for i, e := range v.Sweeps[0].Evidence {
		if e.Kind == LowerP95 {
			lower = &v.Sweeps[0].Evidence[i]
		}
	}
	if lower == nil || lower.Against != 3 || math.Round(100*lower.Change) != 18 || lower.Test == nil || lower.Test.Status != NotSignificant {
		t.Errorf("evidence %+v, want p95 18%% lower than workers=3, not significant", v.Sweeps[0].Evidence)
	}
}

// TestThresholdTally: the verdict lists each threshold that failed in some
// run with how often, and each that passed in every run.
func TestThresholdTally(t *testing.T) {
	p := load(t, sweepPlan)
	points := Points(p.Experiment)
	order := Order(len(points), 3, 1)
	results := make([]*result.Result, len(order))
	for i := range order {
		results[i] = fake(100, 10)
		results[i].Thresholds = []result.ThresholdResult{
			{Text: "checks > 99%", Pass: true},
			{Text: "p95(latency) < 500ms", Pass: i != 4, Detail: "p95 latency: 612 ms"},
		}
	}
	v := Analyze(p.Experiment, points, order, results)
	want := []ThresholdTally{
		{Text: "checks > 99%", Runs: 15},
		{Text: "p95(latency) < 500ms", Runs: 15, Failed: 1, ExampleRun: 5, ExamplePoint: points[order[4].Point].Key, ExampleDetail: "p95 latency: 612 ms"},
	}
	if !slices.Equal(v.ThresholdTallies, want) || !v.FailedThresholds() {
		t.Errorf("tallies %+v, want %+v", v.ThresholdTallies, want)
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestThreeAgainstFiveIsTested: 3 runs against 5 can reach p = 0.036, so a
// clear difference is significant and a noisy one is not a regression; only
// sizes whose smallest p is above 0.05 (3 against 4) fall back on the
// medians. Before, any side under 4 runs was untested, and --fail-on failed
// on noise "median against median".
func TestThreeAgainstFiveIsTested(t *testing.T) {
	side := func(p95s ...float64) Side {
		var s Side
		for _, p := range p95s {
			s.Results = append(s.Results, fake(1000, p))
		}
		return s
	}
	rule, _ := ParseRule("p95 +5%")
	for _, tt := range []struct {
		name      string
		a, b      Side
		status    ChangeStatus
		reason    UntestedReason
		failures  int
		byMedians bool
	}{
		{"3 against 5 apart", side(10, 10.1, 10.2), side(11, 11.1, 11.2, 11.3, 11.4), Significant, "", 1, false},
		{"3 against 5 noisy", side(10, 12, 11), side(10.5, 12.5, 11.8, 10.2, 12.2), NotSignificant, "", 0, false},
		{"3 against 4 noisy", side(10, 12, 11), side(10.5, 12.5, 11.8, 12.2), Untested, TooFewRuns, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b)
			var row *CompareRow
			for i := range c.Rows {
				if c.Rows[i].ID == FigureP95 {
					row = &c.Rows[i]
				}
			}
			if row == nil {
				t.Fatal("no p95 row")
			}
			if row.Change.Status != tt.status || row.Change.Reason != tt.reason {
				t.Errorf("p95 change %+v, want %s %s", row.Change, tt.status, tt.reason)
			}
			if tt.status == Significant && (math.Abs(row.Change.P-0.0357) > 0.0001 || row.Change.N1 != 3 || row.Change.N2 != 5) {
				t.Errorf("p95 change %+v, want p=0.036 n=3+5", row.Change)
			}
			fs, err := c.Check([]Rule{rule})
			if err != nil || len(fs) != tt.failures || len(fs) > 0 && fs[0].ByMedians != tt.byMedians {
				t.Errorf("failures %+v, %v; want %d (by medians: %v)", fs, err, tt.failures, tt.byMedians)
			}
		})
	}
}

// sweepOf runs a one-param sweep whose levels have the given throughputs,
// each repeat off by jitter (a fraction) of its median, under the plan's
// extra lines.
func sweepOf(t *testing.T, param string, levels []string, curve []float64, jitter float64, extra string) SweepVerdict {
	return sweepRepeated(t, 5, param, levels, curve, jitter, extra)
}

// sweepRepeated is sweepOf with repeat runs a level.
func sweepRepeated(t *testing.T, repeat int, param string, levels []string, curve []float64, jitter float64, extra string) SweepVerdict {
	t.Helper()
	p := load(t, `
name: knee
target: http://127.0.0.1:1
scenarios: { s: { steps: [ { get: / } ] } }
load: { closed: { vus: 1, iterations: 1 } }
params: { `+param+`: [`+strings.Join(levels, ", ")+`] }
repeat: `+strconv.Itoa(repeat)+`
`+extra)
	points := Points(p.Experiment)
	order := Order(len(points), repeat, 1)
	at := map[string]float64{}
	for i, l := range levels {
		at[l] = curve[i]
	}
	results := make([]*result.Result, len(order))
	for i, s := range order {
		results[i] = fake(at[points[s.Point].Labels[param]]*(1+float64(s.Rep%3-1)*jitter), 20)
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Sweeps) != 1 {
		t.Fatalf("sweeps %+v", v.Sweeps)
	}
	return v.Sweeps[0]
}

// TestKneeWithGainsBeyond: 55, 98, 112, 133, 133 req/s at 1, 2, 4, 6, 8
// workers: every step up to 6 adds 5% or more (Kneedle put the knee at 2,
// where 6 still gives 36% more), so the knee is at 6.
func TestKneeWithGainsBeyond(t *testing.T) {
	s := sweepOf(t, "workers", []string{"1", "2", "4", "6", "8"}, []float64{55, 98, 112, 133, 133}, 0.01, "")
	if s.Knee == nil || s.X[*s.Knee] != 6 || s.KneeShare != 0.05 || s.KneeWhy != "" {
		t.Fatalf("knee %v (%q), share %v; want workers=6 at 5%%", s.Knee, s.KneeWhy, s.KneeShare)
	}
	for _, e := range s.Evidence {
		if e.Kind == KneeAt && (e.At != 6 || e.Test != nil) {
			t.Errorf("knee evidence %+v, want at 6 with nothing beyond", e)
		}
	}
}

// TestKneePumaStillRising: the Puma threads, 49 → 54 → 58 → 61 →
// 67 req/s, every step adding 5 to 10%: no knee within 1..8, and the
// sweep says why rather than -1.
func TestKneePumaStillRising(t *testing.T) {
	s := sweepOf(t, "threads", []string{"1", "2", "4", "6", "8"}, []float64{49, 54, 58, 61, 67}, 0.01, "")
	if s.Knee != nil || s.KneeWhy != stats.KneeStillRising {
		t.Fatalf("knee %v, reason %q; want none, still rising", s.Knee, s.KneeWhy)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"knee":`) || !strings.Contains(string(b), `"knee_reason":"still_rising"`) {
		t.Errorf("JSON %s: want no knee field and knee_reason still_rising", b)
	}
}

// TestKneeFlattens: 100, 180, 240, 250, 255, 256 req/s: the steps after
// threads=3 add 4% and less, so the knee is at 3; with knee: 3% in the
// plan, the step to 4 (+4.2%) still counts and the knee moves to 4.
func TestKneeFlattens(t *testing.T) {
	levels, curve := []string{"1", "2", "3", "4", "5", "6"}, []float64{100, 180, 240, 250, 255, 256}
	if s := sweepOf(t, "threads", levels, curve, 0.005, ""); s.Knee == nil || s.X[*s.Knee] != 3 {
		t.Errorf("knee %v (%q), want threads=3", s.Knee, s.KneeWhy)
	}
	if s := sweepOf(t, "threads", levels, curve, 0.005, "knee: 3%\n"); s.Knee == nil || s.X[*s.Knee] != 4 || s.KneeShare != 0.03 {
		t.Errorf("knee %v (%q) at share %v, want threads=4 at 3%%", s.Knee, s.KneeWhy, s.KneeShare)
	}
}

// TestKneeFlatAndUnplaced: a flat sweep has no knee, said so; a step that
// adds 6% by its medians while its runs overlap (±5%), with 3 runs a level
// (too few for the test), cannot place the knee within one step; with 5
// the test finds the step real and places the knee.
func TestKneeFlatAndUnplaced(t *testing.T) {
	levels := []string{"1", "2", "4", "8"}
	if s := sweepOf(t, "threads", levels, []float64{100, 102, 101, 103}, 0.01, ""); s.Knee != nil || s.KneeWhy != stats.KneeFlat || s.USLWhy != USLTooFewLevels {
		t.Errorf("knee %v (%q), usl %q; want none: flat, too few levels for a fit", s.Knee, s.KneeWhy, s.USLWhy)
	}
	s := sweepRepeated(t, 3, "threads", levels, []float64{100, 150, 159, 160}, 0.05, "")
	if s.Knee != nil || s.KneeWhy != stats.KneeUnplaced || len(s.KneeRange) != 2 || s.X[s.KneeRange[0]] != 2 || s.X[s.KneeRange[1]] != 4 {
		t.Errorf("knee %v (%q) range %v; want unplaced between threads=2 and 4", s.Knee, s.KneeWhy, s.KneeRange)
	}
	if s := sweepOf(t, "threads", levels, []float64{100, 150, 159, 160}, 0.05, ""); s.Knee == nil || s.X[*s.Knee] != 4 {
		t.Errorf("knee %v (%q) with 5 runs, want threads=4", s.Knee, s.KneeWhy)
	}
}

// TestOldKneeSentinel: experiment.json written with "knee": -1 reads as no
// knee, and a sweep with no knee writes no knee field.
func TestOldKneeSentinel(t *testing.T) {
	var s SweepVerdict
	if err := json.Unmarshal([]byte(`{"param":"threads","x":[1,2,3],"knee":-1}`), &s); err != nil || s.Knee != nil {
		t.Fatalf("knee %v, %v; want none", s.Knee, err)
	}
	if err := json.Unmarshal([]byte(`{"param":"threads","x":[1,2,3],"knee":1}`), &s); err != nil || s.Knee == nil || *s.Knee != 1 {
		t.Fatalf("knee %v, %v; want 1", s.Knee, err)
	}
	b, _ := json.Marshal(SweepVerdict{Param: "threads", X: []float64{1, 2}})
	if strings.Contains(string(b), "knee") || strings.Contains(string(b), "-1") {
		t.Errorf("JSON %s carries a knee", b)
	}
}

// TestReanalyzeKeepsKneeShare: loadlab report analyzes a stored experiment
// again, with the plan's knee: share kept in experiment.json, not the
// default.
func TestReanalyzeKeepsKneeShare(t *testing.T) {
	p := load(t, `
name: knee
target: http://127.0.0.1:1
scenarios: { s: { steps: [ { get: / } ] } }
load: { closed: { vus: 1, iterations: 1 } }
params: { threads: [1, 2, 3, 4, 5, 6] }
repeat: 3
knee: 3%
`)
	points := Points(p.Experiment)
	order := Order(len(points), 3, 1)
	o := NewOutcome(p.Head(), p.Experiment, 1, points, len(order))
	curve := map[string]float64{"1": 100, "2": 180, "3": 240, "4": 250, "5": 255, "6": 256}
	for _, s := range order {
		o.results[s.Index] = fake(curve[points[s.Point].Labels["threads"]], 20)
	}
	o.Finish(p.Experiment, order, func(int) (string, string, bool) { return "done", "", true })
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back Outcome
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.results = o.results
	back.reanalyze()
	if len(back.Verdict.Sweeps) != 1 {
		t.Fatalf("sweeps %+v", back.Verdict.Sweeps)
	}
	if s := back.Verdict.Sweeps[0]; s.KneeShare != 0.03 || s.Knee == nil || s.X[*s.Knee] != 4 {
		t.Errorf("reanalyzed knee %v at share %v, want threads=4 at 3%%", s.Knee, s.KneeShare)
	}
}

// TestDriftBetweenRounds: a point whose throughput falls round after round
// (a Thin point from 500 to 300 req/s on a host that began to steal time)
// is flagged; one whose repeats go up and down, however far, is not, nor is
// a trend of under 10% (issue 20, item 9).
func TestDriftBetweenRounds(t *testing.T) {
	p := load(t, sweepPlan)
	points := Points(p.Experiment)
	order := Order(len(points), 5, 7)
	results := make([]*result.Result, len(order))
	falling := []float64{500, 450, 420, 350, 300}
	noisy := []float64{500, 300, 480, 320, 510}
	gentle := []float64{500, 495, 490, 480, 470}
	for i, s := range order {
		rps := 400.0
		switch points[s.Point].Key {
		case "threads=3 allocator=glibc":
			rps = falling[s.Rep-1]
		case "threads=1 allocator=glibc":
			rps = noisy[s.Rep-1]
		case "threads=4 allocator=glibc":
			rps = gentle[s.Rep-1]
		}
		results[i] = fake(rps, 10)
	}
	v := Analyze(p.Experiment, points, order, results)
	if len(v.Drifts) != 1 {
		t.Fatalf("drifts %+v, want threads=3's alone", v.Drifts)
	}
	d := v.Drifts[0]
	if d.Point != "threads=3 allocator=glibc" || len(d.Runs) != 5 || d.Throughput[4] != 300 || math.Abs(d.Change+0.4) > 1e-9 {
		t.Errorf("drift %+v", d)
	}
	for j := 1; j < len(d.Runs); j++ {
		if d.Runs[j] <= d.Runs[j-1] {
			t.Errorf("runs %v are not in the order they ran", d.Runs)
		}
	}
}
