package experiment

import (
	"time"

	"errors"
	"github.com/loadlab/loadlab/internal/server"

	"github.com/loadlab/loadlab/internal/engine"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
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
	if !strings.HasPrefix(v.Recommendation, "threads=4: within 3% of the best throughput (threads=6: 362.0 req/s); p95 54% lower than threads=8") {
		t.Errorf("recommendation %q", v.Recommendation)
	}
	tp := v.Figures[0]
	if tp.Name != "throughput" || !tp.Rows[0].Baseline || tp.Rows[0].Median != 355 {
		t.Fatalf("throughput table %+v", tp.Rows[0])
	}
	seen := 0
	for _, r := range tp.Rows[1:] {
		if r.Point == "threads=1" {
			seen++
			if !r.Significant || r.Delta > -0.7 || !strings.HasPrefix(r.Versus, "-71.83%") {
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
	if !strings.HasPrefix(v.Recommendation, "allocator=jemalloc vs glibc: RSS peak -33.2% (p=0.008)") || !strings.Contains(v.Recommendation, "no significant change in throughput, p50 latency") {
		t.Errorf("recommendation %q", v.Recommendation)
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
	if strings.Contains(v.Recommendation, "no significant difference") || !strings.Contains(v.Recommendation, "untested, too few runs (n=3)") ||
		!strings.Contains(v.Recommendation, "throughput -62.7%") {
		t.Errorf("recommendation %q", v.Recommendation)
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
	if len(fs) != 1 || !strings.Contains(fs[0].Why, "no test can tell it from noise") {
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
		if tt.fail && err == nil && len(fs) > 0 && !strings.Contains(fs[0].Why, "points") {
			t.Errorf("error rate %v to %v: %q does not say points", tt.a, tt.b, fs[0].Why)
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

func TestMatrixComparesTheLastParam(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params:
  case: [small, big]
  server: { thin: thin start, puma: puma }
vary: matrix
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
	if v.Against != "the same point with server=thin" {
		t.Errorf("against %q", v.Against)
	}
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
			if r.Versus != "" {
				t.Errorf("big thin is a reference, compared with %q", r.Reference)
			}
		}
	}
	if seen != 2 {
		t.Errorf("found %d of the two case=big rows", seen)
	}
	if !strings.Contains(v.Recommendation, "server=puma vs thin at case=big: throughput +10.0% (p=0.008)") {
		t.Errorf("recommendation %q", v.Recommendation)
	}
}

// TestValidity: each reason to distrust a run gives its warning, a clean run
// none, and the verdict counts them per point.
func TestValidity(t *testing.T) {
	clean := func() *result.Result {
		return &result.Result{
			Summary:   result.Summary{Requests: 1000, Responses: 1000, Iterations: 1000},
			Generator: &result.Generator{CPUAvg: 50, Cores: 2},
			Server:    &result.Server{MajorFaults: MajorFaults - 1},
		}
	}
	tests := []struct {
		code  string
		spoil func(r *result.Result, out *engine.Outcome)
	}{
		{"", func(*result.Result, *engine.Outcome) {}},
		{"generator_saturated", func(r *result.Result, _ *engine.Outcome) { r.Generator.CPUAvg = 185 }},
		{"late", func(r *result.Result, _ *engine.Outcome) { r.Summary.Late.Count = 11 }},
		{"unsent", func(r *result.Result, _ *engine.Outcome) { r.Summary.Unsent = 1 }},
		{"no_response", func(r *result.Result, _ *engine.Outcome) { r.Summary.Responses = 499 }},
		{"dropped", func(r *result.Result, _ *engine.Outcome) { r.Summary.Dropped = 1 }},
		{"aborted", func(r *result.Result, _ *engine.Outcome) { r.Summary.Aborted = 1 }},
		{"abandoned", func(_ *result.Result, out *engine.Outcome) { out.InFlight = 3 }},
		{"stopped", func(_ *result.Result, out *engine.Outcome) { out.Stopped = errors.New("stop: users.csv ran out") }},
		{"server_swapped", func(r *result.Result, _ *engine.Outcome) { r.Server.SwapPeak = 4096 }},
		{"server_major_faults", func(r *result.Result, _ *engine.Outcome) { r.Server.MajorFaults = MajorFaults }},
		{"memory_quota", func(r *result.Result, _ *engine.Outcome) {
			r.Server.Quota = &result.Quota{Bytes: 100, PeakExceeded: true, PeakOver: 5}
		}},
		{"server_exited", func(r *result.Result, _ *engine.Outcome) { r.Server.Exit = "exit status 1" }},
		{"server_unmeasured", func(r *result.Result, _ *engine.Outcome) { r.Server.Unmeasured = []string{"pss", "swap"} }},
	}
	for _, tt := range tests {
		r, out := clean(), &engine.Outcome{}
		tt.spoil(r, out)
		var codes []string
		for _, w := range Validity(r, out) {
			codes = append(codes, w.Code)
			if w.Message == "" {
				t.Errorf("%s: no message", w.Code)
			}
		}
		if got := strings.Join(codes, ","); got != tt.code {
			t.Errorf("spoiled for %q: warnings %q", tt.code, got)
		}
	}
	// An interrupted run abandons its requests in flight knowingly.
	if w := Validity(clean(), &engine.Outcome{InFlight: 3, Interrupted: true}); len(w) != 0 {
		t.Errorf("interrupted run: %v", w)
	}

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
	if len(v.Validity) != 1 || !strings.HasPrefix(v.Validity[0], "threads=3 allocator=glibc: dropped in 2 of 3 runs (run ") || !strings.HasSuffix(v.Validity[0], ": 12 arrivals were dropped)") {
		t.Errorf("verdict validity %q", v.Validity)
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
	if !strings.Contains(v.Recommendation, "p95 18% lower than workers=3 (not significant, p=") {
		t.Errorf("recommendation %q", v.Recommendation)
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
	if len(v.Thresholds) != 1 || !strings.HasPrefix(v.Thresholds[0], "p95(latency) < 500ms failed in 1 of 15 runs (run 5, ") {
		t.Errorf("failed %q", v.Thresholds)
	}
	if len(v.Passed) != 1 || v.Passed[0] != "checks > 99% passed in all 15 runs" {
		t.Errorf("passed %q", v.Passed)
	}
}

// TestServerSeriesIsBounded: a day of 250 ms samples keeps at most
// MaxServerPoints points in result.json, and no peak is lost.
func TestServerSeriesIsBounded(t *testing.T) {
	start := time.Unix(0, 0)
	var samples []server.Sample
	for i := range 24 * 3600 * 4 {
		smp := server.Sample{Time: start.Add(time.Duration(i) * 250 * time.Millisecond), CPU: 50, RSS: 100 << 20, Threads: 4}
		if i == 12345 {
			smp.CPU, smp.RSS = 190, 900<<20
		}
		samples = append(samples, smp)
	}
	series := serverSeries(samples, start)
	if short := serverSeries(samples[:100], start); len(short) != 100 || short[99].T != 24.75 {
		t.Errorf("a short run's %d samples became %d points", 100, len(short))
	}
	if len(series) > MaxServerPoints || len(series) < MaxServerPoints/2 {
		t.Fatalf("%d points", len(series))
	}
	var cpu float64
	var rss int64
	for _, p := range series {
		cpu, rss = max(cpu, p.CPU), max(rss, p.RSS)
	}
	if cpu != 190 || rss != 900<<20 || series[len(series)-1].T != samples[len(samples)-1].Time.Sub(start).Seconds() {
		t.Errorf("peaks %v %v, last t %v", cpu, rss, series[len(series)-1].T)
	}
}
