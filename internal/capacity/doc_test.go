package capacity

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/threshold"
)

func stepResult(cpu float64, p95 map[string]float64) *result.Result {
	r := &result.Result{Server: &result.Server{MachineAvg: cpu, RSSPeak: 120 << 20}}
	for _, name := range []string{"home", "login", "browse"} {
		r.Steps = append(r.Steps, result.Step{Scenario: "default", Name: name, Summary: result.Summary{Latency: result.Percentiles{Count: 100, P95: p95[name]}}})
	}
	return r
}

// TestFinishNamesTheBottleneck: at the answer and the step above it, the
// binding clause, the step whose latency grew fastest, and the server's
// CPU, in words.
func TestFinishNamesTheBottleneck(t *testing.T) {
	d := &Document{Steps: []StepRecord{
		{Index: 1, Outcome: Outcome{Rate: 400, Phase: Grow, Holds: true}, Throughput: 399, InFlight: 20},
		{Index: 2, Outcome: Outcome{Rate: 412.5, Phase: Bisect, Clause: "p95(latency) < 300ms (p95 latency: 812 ms)"}, Throughput: 380},
		{Index: 3, Outcome: Outcome{Rate: 400, Phase: Confirm, Holds: true}, Throughput: 401, InFlight: 22},
	}}
	results := []*result.Result{
		stepResult(60, map[string]float64{"home": 10, "login": 12, "browse": 20}),
		stepResult(98, map[string]float64{"home": 13, "login": 108, "browse": 22}),
		nil,
	}
	results[0].Server.RSSPeak = 80 << 20
	results[0].Thresholds = []result.ThresholdResult{
		{Text: "p95(latency) < 300ms", Measured: 212, Pass: true, Detail: "p95 latency: 212 ms (1000 responses)"},
		{Text: "error_rate < 1%", Measured: 0.001, Pass: true, Detail: "error rate: 0.10% (1 of 1000 requests)"},
	}
	results[1].Thresholds = []result.ThresholdResult{
		{Text: "p95(latency) < 300ms", Measured: 812, Detail: "p95 latency: 812 ms (1000 responses)"},
		{Text: "error_rate < 1%", Measured: 0.002, Pass: true, Detail: "error rate: 0.20% (2 of 1000 requests)"},
	}
	slo, err := ParseSLO("p95(latency) < 300ms, error_rate < 1%")
	if err != nil {
		t.Fatal(err)
	}
	d.Finish(Answer{Rate: 400, Above: 412.5, Limit: 1, Confirmed: 1, Confirms: 1, AtAnswer: []int{0, 2}}, results, slo)
	c := d.Capacity
	if c.RatePerS != 400 || c.CI == nil || *c.CI != (Interval{400, 412.5}) || c.VUs != 21 || c.Throughput == nil || c.Throughput.Median != 400 || c.Throughput.Lo != 399 || c.Throughput.Hi != 401 {
		t.Errorf("capacity %+v, throughput %+v", c, c.Throughput)
	}
	if l := d.Limit; l == nil || l.Step != "login" || l.Index != 2 || l.RatePerS != 412.5 || l.ServerCPU != 98 {
		t.Errorf("limit %+v", d.Limit)
	}
	want := "login is CPU-bound: its p95 rose 9× (12 → 108 ms) from 400/s to 412.5/s while the others rose at most 1.3×; server CPU 98% of its CPUs (60% at the answer), RSS peak 120 MiB (80 MiB at the answer)"
	if d.Bottleneck != want {
		t.Errorf("bottleneck\n%s\nwant\n%s", d.Bottleneck, want)
	}
	if l := d.Limit; l.Binding != "p95(latency) < 300ms" || len(l.Clauses) != 2 || l.Clauses[0].Use != 0.707 || l.Clauses[0].Holds || l.Clauses[1].Use != 0.1 || !l.Clauses[1].Holds {
		t.Errorf("clauses %+v, binding %q", l.Clauses, l.Binding)
	}
	var buf bytes.Buffer
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"capacity: 400/s (held 1 of 1 confirm repeats; 412.5/s broke)", "limit: p95(latency) < 300ms (p95 latency: 812 ms) at 412.5/s (step 2)", "bottleneck: " + want,
		"clause p95(latency) < 300ms: 212 ms → 812 ms (71% of its limit at the answer, the nearest; breaks above)",
		"clause error_rate < 1%: 0.10% → 0.20% (10% of its limit at the answer; holds above)"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, buf.String())
		}
	}

	buf.Reset()
	if err := d.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"**Capacity: 400/s** (held 1 of 1 confirm repeats; 412.5/s broke).",
		"| login | 12 | 108 | 9× |",
		"- clause p95(latency) &lt; 300ms: 212 ms → 812 ms (71% of its limit at the answer, the nearest; breaks above)",
		"| 2 | bisect | 412.5 | 380 | 0 | 0 | 0 | 0.00% | 0.0 |  | breaks: p95(latency) &lt; 300ms (p95 latency: 812 ms) |",
	} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("markdown lacks %q:\n%s", line, buf.String())
		}
	}

	// A clause about one step names it, whatever the ranking says.
	d.Steps[1].Clause = "p99(latency, step=browse) < 1s (p99 latency of step browse: 1.2 s)"
	slo, _ = ParseSLO("p99(latency, step=browse) < 1s")
	d.Finish(Answer{Rate: 400, Above: 412.5, Limit: 1, AtAnswer: []int{0}}, results, []*threshold.Threshold{slo[0]})
	if d.Limit.Step != "browse" || len(d.Limit.Clauses) != 0 {
		t.Errorf("limit step %q, want the clause's browse", d.Limit.Step)
	}
}

// TestDocumentKeys: capacity.json's keys are the ones docs/reference/capacity-json.md documents;
// a change here is a change of schema.
func TestDocumentKeys(t *testing.T) {
	d := &Document{Schema: Schema, Search: Settings{By: "rate", Start: 10}, Steps: []StepRecord{{Index: 1, Outcome: Outcome{Rate: 10, Phase: Grow, Holds: true}}, {Index: 2, Outcome: Outcome{Rate: 20, Phase: Grow, Clause: "x"}, Result: "steps/002/result.json"}}}
	at := stepResult(50, map[string]float64{"home": 1, "login": 1, "browse": 1})
	at.Thresholds = []result.ThresholdResult{{Text: "error_rate < 1%", Pass: true}}
	slo, _ := ParseSLO("error_rate < 1%")
	d.Finish(Answer{Rate: 10, Above: 20, Limit: 1, AtAnswer: []int{0}}, []*result.Result{at, at}, slo)
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	json.Unmarshal(data, &m)
	keys := func(raw json.RawMessage) string {
		var o map[string]json.RawMessage
		json.Unmarshal(raw, &o)
		return strings.Join(slices.Sorted(maps.Keys(o)), " ")
	}
	var steps []json.RawMessage
	json.Unmarshal(m["steps"], &steps)
	var limit struct{ Clauses []json.RawMessage }
	json.Unmarshal(m["limit"], &limit)
	if len(limit.Clauses) != 1 {
		t.Fatalf("limit %s", m["limit"])
	}
	for _, tc := range []struct{ what, got, want string }{
		{"top", keys(data), "bottleneck capacity done limit name plan ranking schema search slo steps"},
		{"capacity", keys(m["capacity"]), "at_least ci confirmed confirms rate_per_s throughput vus"},
		{"limit", keys(m["limit"]), "binding_at_answer clause clauses index rate_per_s server_machine_cpu_at_answer_pct server_machine_cpu_pct server_rss_peak_at_answer_bytes server_rss_peak_bytes step"},
		{"clause", keys(limit.Clauses[0]), "clause detail_above detail_at_answer holds_above measured_above measured_at_answer use_at_answer"},
		{"search", keys(m["search"]), "by confirm factor max_steps plan_fingerprint precision start_rate_per_s step_max_s"},
		{"step", keys(steps[1]), "clause duration_s error_rate holds in_flight index p50_ms p95_ms p99_ms phase rate_per_s result series throughput_per_s"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s keys\n%s\nwant\n%s", tc.what, tc.got, tc.want)
		}
	}
}

// TestFinishByVUs: a search by VUs answers in VUs, with the throughput they
// drive as rate_per_s, and says VUs wherever a rate was said.
func TestFinishByVUs(t *testing.T) {
	d := &Document{Name: "c", Search: Settings{By: "vus", StartVUs: 8}, Steps: []StepRecord{
		{Index: 1, Outcome: Outcome{VUs: 32, Phase: Grow, Holds: true}, Throughput: 310, InFlight: 32},
		{Index: 2, Outcome: Outcome{VUs: 36, Phase: Bisect, Clause: "p95(latency) < 300ms (p95 latency: 812 ms)"}, Throughput: 320},
		{Index: 3, Outcome: Outcome{VUs: 32, Phase: Confirm, Holds: true}, Throughput: 306, InFlight: 32},
	}}
	results := []*result.Result{
		stepResult(60, map[string]float64{"home": 10, "login": 12, "browse": 20}),
		stepResult(98, map[string]float64{"home": 13, "login": 108, "browse": 22}),
		nil,
	}
	d.Finish(Answer{Rate: 32, Above: 36, Limit: 1, Confirmed: 1, Confirms: 1, AtAnswer: []int{0, 2}}, results, nil)
	if c := d.Capacity; c.VUs != 32 || c.RatePerS != 308 || *c.CI != (Interval{32, 36}) {
		t.Errorf("capacity %+v", c)
	}
	if l := d.Limit; l.VUs != 36 || l.RatePerS != 0 || l.Step != "login" {
		t.Errorf("limit %+v", l)
	}
	if !strings.Contains(d.Bottleneck, "login is CPU-bound: its p95 rose 9× (12 → 108 ms) from 32 VUs to 36 VUs") {
		t.Errorf("bottleneck %s", d.Bottleneck)
	}
	var buf bytes.Buffer
	d.WriteText(&buf)
	for _, line := range []string{"step  phase    VUs", "2     bisect   36 VUs", "capacity: 32 VUs (held 1 of 1 confirm repeats; 36 VUs broke)", "throughput at the answer: 308/s (lowest–highest 306–310, 2 steps)\n", "limit: p95(latency) < 300ms (p95 latency: 812 ms) at 36 VUs (step 2)"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, buf.String())
		}
	}
	buf.Reset()
	d.WriteMarkdown(&buf)
	for _, line := range []string{"**Capacity: 32 VUs** (held 1 of 1 confirm repeats; 36 VUs broke).", "| step | phase | VUs |", "| 2 | bisect | 36 | 320 |"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("markdown lacks %q:\n%s", line, buf.String())
		}
	}
	if got := d.Search.Plan(7); !strings.HasPrefix(got, "from 8 VUs, ×0 until") {
		t.Errorf("plan %q", got)
	}
	data, _ := json.Marshal(d.Steps[0])
	if !strings.Contains(string(data), `"vus":32`) || strings.Contains(string(data), "rate_per_s") {
		t.Errorf("a step by VUs: %s", data)
	}
}

// TestBottleneckWords: the sentence names the step, and says CPU-bound
// only from 90% of the server's CPUs.
func TestBottleneckWords(t *testing.T) {
	two := []Rank{{Step: "login", P95AtMs: 12, P95Above: 30, Growth: 2.5}, {Step: "home", P95AtMs: 10, P95Above: 11, Growth: 1.1}}
	l := &Limit{RatePerS: 110, ServerCPU: 45, ServerCPUAtAnswer: 40, ServerRSS: 64 << 20, ServerRSSAtAnswer: 60 << 20}
	for _, tc := range []struct {
		ranking []Rank
		server  bool
		want    string
	}{
		{two, true, "login is the bottleneck: its p95 rose 2.5× (12 → 30 ms) from 100/s to 110/s while the others rose at most 1.1×; server CPU 45% of its CPUs (40% at the answer), under the 90% that is CPU-bound, RSS peak 64 MiB (60 MiB at the answer)"},
		{two, false, "login is the bottleneck: its p95 rose 2.5× (12 → 30 ms) from 100/s to 110/s while the others rose at most 1.1×"},
		{two[:1], false, "login (the only step): its p95 rose 2.5× (12 → 30 ms) from 100/s to 110/s"},
		{nil, true, ""},
	} {
		if got := bottleneck(tc.ranking, l, "100/s", tc.server); got != tc.want {
			t.Errorf("got\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// TestHeaviest: the steps weighed at the lightest step that held, by
// median latency times responses: what fills a shared queue.
func TestHeaviest(t *testing.T) {
	light := stepResult(20, map[string]float64{"home": 15, "login": 120, "browse": 30})
	for i, p50 := range []float64{10, 80, 10} {
		light.Steps[i].Summary.Latency.P50 = p50
	}
	light.Steps[1].Summary.Latency.Count = 50 // half the logins: 4000 of 6000
	d := &Document{Steps: []StepRecord{
		{Index: 1, Outcome: Outcome{Rate: 50, Phase: Grow, Holds: true}},
		{Index: 2, Outcome: Outcome{Rate: 100, Phase: Grow, Holds: true}},
		{Index: 3, Outcome: Outcome{Rate: 200, Phase: Grow, Clause: "x"}},
	}}
	at := stepResult(40, map[string]float64{"home": 10, "login": 100, "browse": 20})
	above := stepResult(95, map[string]float64{"home": 40, "login": 300, "browse": 60})
	d.Finish(Answer{Rate: 100, Above: 200, Limit: 2, AtAnswer: []int{1}}, []*result.Result{light, at, above}, nil)
	if len(d.Heaviest) != 3 || d.Heaviest[0].Step != "login" || d.Heaviest[0].Share != 0.667 || d.Heaviest[0].RatePerS != 50 {
		t.Errorf("heaviest %+v", d.Heaviest)
	}
	if want := "; heaviest at 50/s: login (p50 80 ms, 67% of the time)"; !strings.HasSuffix(d.Bottleneck, want) {
		t.Errorf("bottleneck %q, want it to end %q", d.Bottleneck, want)
	}
	if got := d.Headline(); got != "100/s (no confirm repeats; 200/s broke)" {
		t.Errorf("headline %q", got)
	}
}
