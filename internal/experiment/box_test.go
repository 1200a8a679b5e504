package experiment_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
)

const boxPlan = `
name: boxes
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
server: { run: "true" }
params:
  box: { "1x": { cpus: 1, memory: 512MiB, price_per_hour: 0.05 }, "2x": { cpus: 2, memory: 1GiB, price_per_hour: 0.10 } }
  threads: [2, 4]
vary: matrix
compare: threads
repeat: 3
target_rate: 500
`

// Which box: each box at its best point (the highest throughput of its
// threads), cost per million requests, the cheapest way to serve the
// target rate and where the cheapest kind changes; then the same again
// from experiment.json.
func TestBoxVerdict(t *testing.T) {
	p := load(t, boxPlan)
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 3, 1)
	o := experiment.NewOutcome(p.Head(), p.Experiment, 1, points, len(order))
	rps := map[string]float64{"box=1x threads=2": 120, "box=1x threads=4": 150, "box=2x threads=2": 200, "box=2x threads=4": 340}
	for _, s := range order {
		o.SetResult(s.Index, fake(rps[points[s.Point].Key], 20))
	}
	o.Finish(p.Experiment, order, func(int) (string, string, bool) { return "done", "", true })
	check := func(what string, bv *experiment.BoxVerdict) {
		t.Helper()
		if bv == nil {
			t.Fatalf("%s: no box verdict", what)
		}
		if bv.Param != "box" || bv.Basis != experiment.BasisThroughput || len(bv.Boxes) != 2 || bv.TargetRate != 500 {
			t.Fatalf("%s: %+v", what, bv)
		}
		if b := bv.Boxes[0]; b.Box != "1x" || b.Point != "box=1x threads=4" || b.Rate != 150 || math.Abs(b.PerMillion-0.05/(150*3600)*1e6) > 1e-12 {
			t.Errorf("%s: 1x %+v", what, b)
		}
		if b := bv.Boxes[1]; b.Box != "2x" || b.Point != "box=2x threads=4" || b.Rate != 340 {
			t.Errorf("%s: 2x %+v", what, b)
		}
		if len(bv.Options) != 2 || bv.Options[0].String() != "2 × 2x at $0.20/h" || bv.Options[1].String() != "4 × 1x at $0.20/h" {
			t.Errorf("%s: options %v", what, bv.Options)
		}
		text := strings.Join(report.BoxText(bv), "\n")
		for _, want := range []string{
			"1x served 150 req/s (box=1x threads=4) at $0.05/h: $0.0926 per million requests",
			"2x served 340 req/s (box=2x threads=4) at $0.10/h: $0.0817 per million requests",
			"these are throughputs at the plan's load, not capacities under an SLO",
			"cheapest for 500 req/s: 2 × 2x at $0.20/h, holding 680 req/s; then 4 × 1x at $0.20/h (holds 600)",
			"3 × 1x at $0.15/h beat 1 × 2x at $0.10/h only above 340 req/s, where 1 × 2x no longer holds the rate (2 × 2x would cost $0.20/h)",
			"this assumes capacity scales out linearly across boxes of a kind",
			"the load balancer, its price and its limits are not included",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the text lacks %q:\n%s", what, want, text)
			}
		}
	}
	check("verdict", o.Verdict.Boxes)

	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back experiment.Outcome
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	experiment.ReanalyzeFrom(&back, o)
	check("reanalyzed", back.Verdict.Boxes)
}

// With a capacity for every box, the arithmetic runs on it, and says so.
func TestBoxesFromCapacity(t *testing.T) {
	bv := experiment.BoxesFrom("box", []experiment.BoxFigures{
		{Box: "1x", Point: "box=1x", PricePerHour: 0.05, Throughput: 100, Capacity: 150},
		{Box: "2x", Point: "box=2x", PricePerHour: 0.10, Throughput: 300, Capacity: 340},
	}, 0)
	if bv.Basis != experiment.BasisCapacity || bv.Boxes[0].Rate != 150 || bv.Horizon != 4*340 || len(bv.Options) != 0 {
		t.Fatalf("%+v", bv)
	}
	text := strings.Join(report.BoxText(bv), "\n")
	if !strings.Contains(text, "1x held 150 req/s (box=1x) at $0.05/h") || strings.Contains(text, "not capacities") {
		t.Errorf("text:\n%s", text)
	}
	// One box without a capacity: throughput for all, not a mix.
	bv = experiment.BoxesFrom("box", []experiment.BoxFigures{{Box: "1x", PricePerHour: 0.05, Throughput: 100, Capacity: 150}, {Box: "2x", PricePerHour: 0.10, Throughput: 300}}, 0)
	if bv.Basis != experiment.BasisThroughput || bv.Boxes[0].Rate != 100 {
		t.Errorf("mixed: %+v", bv)
	}
}

// A box whose every run failed (killed at its memory limit, say) is named
// as not priced; the others are still priced.
func TestBoxWithNoRuns(t *testing.T) {
	p := load(t, boxPlan)
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 3, 1)
	o := experiment.NewOutcome(p.Head(), p.Experiment, 1, points, len(order))
	for _, s := range order {
		if points[s.Point].Labels["box"] == "2x" {
			o.SetResult(s.Index, fake(100, 20))
		}
	}
	o.Finish(p.Experiment, order, func(int) (string, string, bool) { return "done", "", true })
	bv := o.Verdict.Boxes
	if bv == nil || len(bv.Boxes) != 1 || bv.Boxes[0].Box != "2x" || len(bv.Unpriced) != 1 || bv.Unpriced[0] != "1x" {
		t.Fatalf("%+v", bv)
	}
	if text := report.BoxText(bv); text[len(text)-1] != "not priced, with no run done (each failed; see the runs): 1x" {
		t.Errorf("last line %q", text[len(text)-1])
	}
}

// A box that served nothing is not priced (its cost per request would be
// infinite, which experiment.json cannot hold), and the verdict encodes.
func TestBoxThatServedNothing(t *testing.T) {
	bv := experiment.BoxesFrom("box", []experiment.BoxFigures{{Box: "1x", Point: "box=1x", PricePerHour: 0.05, Throughput: 0}, {Box: "2x", Point: "box=2x", PricePerHour: 0.10, Throughput: 340}}, 500)
	if len(bv.Boxes) != 1 || bv.Boxes[0].Box != "2x" || len(bv.Unpriced) != 1 || bv.Unpriced[0] != "1x" || len(bv.Options) != 1 {
		t.Fatalf("%+v", bv)
	}
	if text := report.BoxText(bv); text[len(text)-1] != "not priced, having served nothing: 1x" {
		t.Errorf("last line %q", text[len(text)-1])
	}
	if _, err := json.Marshal(bv); err != nil {
		t.Error(err)
	}
	bv = experiment.BoxesFrom("box", []experiment.BoxFigures{{Box: "1x", Point: "box=1x", PricePerHour: 0.05}}, 0)
	if _, err := json.Marshal(bv); err != nil || len(report.BoxText(bv)) != 1 {
		t.Errorf("%+v: %v", bv, err)
	}
}

// With capacity searches as the runs (params plus capacity:), each box is
// priced at the throughput at the highest rate its searches held, in
// requests a second; a box whose searches held no rate is not priced, and
// does not turn the others' capacities into throughputs.
func TestBoxVerdictFromCapacitySearches(t *testing.T) {
	p := load(t, boxPlan)
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 3, 1)
	run := func(held map[string]float64) *experiment.BoxVerdict {
		o := experiment.NewOutcome(p.Head(), p.Experiment, 1, points, len(order))
		for _, s := range order {
			key := points[s.Point].Key
			r := fake(held[key]+30, 20) // the throughput at the answer
			r.Capacity = &result.Capacity{By: "rate", RatePerS: held[key] / 2, Steps: 9}
			if held[key] == 0 {
				r.Capacity.RatePerS = 0
			}
			o.SetResult(s.Index, r)
		}
		o.Finish(p.Experiment, order, func(int) (string, string, bool) { return "done", "", true })
		return o.Verdict.Boxes
	}
	bv := run(map[string]float64{"box=1x threads=2": 100, "box=1x threads=4": 110, "box=2x threads=2": 250, "box=2x threads=4": 200})
	if bv == nil || bv.Basis != experiment.BasisCapacity || len(bv.Boxes) != 2 {
		t.Fatalf("%+v", bv)
	}
	if b := bv.Boxes[0]; b.Point != "box=1x threads=4" || b.Capacity != 140 || b.Rate != 140 {
		t.Errorf("1x %+v", b)
	}
	if b := bv.Boxes[1]; b.Point != "box=2x threads=2" || b.Capacity != 280 || b.Rate != 280 {
		t.Errorf("2x %+v", b)
	}
	text := strings.Join(report.BoxText(bv), "\n")
	for _, want := range []string{"1x held 140 req/s (box=1x threads=4)", "these are capacities under the SLO"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	bv = run(map[string]float64{"box=1x threads=2": 100, "box=1x threads=4": 110})
	if bv == nil || bv.Basis != experiment.BasisCapacity || len(bv.Boxes) != 1 || bv.Boxes[0].Box != "1x" || !slices.Contains(bv.Unpriced, "2x") {
		t.Fatalf("a box that held nothing: %+v", bv)
	}
	if text := strings.Join(report.BoxText(bv), "\n"); !strings.Contains(text, "not priced, holding the SLO at no rate searched") {
		t.Errorf("the text lacks why 2x is not priced:\n%s", text)
	}
}

const boxOneAtATime = `
name: boxes
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
server: { run: "true" }
params:
  box: { "1x": { cpus: 1, memory: 512MiB, price_per_hour: 0.05 }, "2x": { cpus: 2, memory: 1GiB, price_per_hour: 0.10 } }
  threads: [2, 4, 8]
repeat: 3
`

// One at a time, only the baseline box is swept over threads: it is
// compared with the other box at the setting both ran (threads=2), not at
// its best thread count, and the verdict says which points it left out.
// With no setting shared, each box is at its best point, said so.
func TestBoxVerdictMatched(t *testing.T) {
	p := load(t, boxOneAtATime)
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 3, 1)
	rps := map[string]float64{"box=1x threads=2": 120, "box=2x threads=2": 200, "box=1x threads=4": 150, "box=1x threads=8": 260}
	run := func(skip string) *experiment.BoxVerdict {
		o := experiment.NewOutcome(p.Head(), p.Experiment, 1, points, len(order))
		for _, s := range order {
			if k := points[s.Point].Key; k != skip {
				o.SetResult(s.Index, fake(rps[k], 20))
			}
		}
		o.Finish(p.Experiment, order, func(int) (string, string, bool) { return "done", "", true })
		return o.Verdict.Boxes
	}
	bv := run("")
	if bv == nil || len(bv.Boxes) != 2 {
		t.Fatalf("%+v", bv)
	}
	if b := bv.Boxes[0]; b.Point != "box=1x threads=2" || b.Rate != 120 {
		t.Errorf("1x at %s (%v req/s), want its threads=2 point, the one 2x ran too", b.Point, b.Rate)
	}
	if b := bv.Boxes[1]; b.Point != "box=2x threads=2" || b.Rate != 200 {
		t.Errorf("2x %+v", b)
	}
	if !slices.Equal(bv.Matched, []string{"threads=2"}) || bv.Unmatched {
		t.Errorf("matched %q, unmatched %v", bv.Matched, bv.Unmatched)
	}
	want := "compared like with like: every box at threads=2, the setting of the other params every box ran; left out, run on some boxes only: box=1x threads=4, box=1x threads=8"
	if text := report.BoxText(bv); len(text) < 3 || text[2] != want {
		t.Errorf("text:\n%s\nwant as its third line %q", strings.Join(text, "\n"), want)
	}

	// The baseline failed: 1x ran threads=4 and 8, 2x threads=2 only.
	bv = run("box=1x threads=2")
	if bv == nil || len(bv.Boxes) != 2 || bv.Boxes[0].Point != "box=1x threads=8" || !bv.Unmatched || len(bv.Matched) != 0 {
		t.Fatalf("no shared setting: %+v", bv)
	}
	if text := strings.Join(report.BoxText(bv), "\n"); !strings.Contains(text, "no setting of the other params was run on every box: each box is at its best point of all, and they compare unlike setups") {
		t.Errorf("text:\n%s", text)
	}
}

// load parses a plan, as experiment's own tests do.
func load(t *testing.T, yaml string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("plan.yaml", []byte(yaml), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fake is a result with a known throughput and p95.
func fake(rps, p95 float64) *result.Result {
	return &result.Result{Summary: result.Summary{ThroughputRPS: rps, Latency: result.Percentiles{Count: 100, P50: p95 / 2, P95: p95, P99: p95 * 1.5}}}
}
