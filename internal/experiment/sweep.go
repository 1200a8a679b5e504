package experiment

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/spec"
)

// Point is one combination of param values.
type Point struct {
	Key      string            // "threads=5 allocator=glibc", params in plan order
	Labels   map[string]string // param: value label
	Params   map[string]any    // param: value, for templates
	Baseline bool
}

// Points lists an experiment's points: the baseline first, then (one at a
// time) each param's other values with the rest at baseline, or (matrix)
// every combination in plan order.
func Points(e *spec.Experiment) []Point {
	if len(e.Params) == 0 {
		return []Point{{Key: "baseline", Labels: map[string]string{}, Params: map[string]any{}, Baseline: true}}
	}
	var idx [][]int // value index of each param, per point
	base := make([]int, len(e.Params))
	for i, p := range e.Params {
		base[i] = e.Baseline[p.Name]
	}
	switch e.Vary {
	case spec.Matrix:
		cur := make([]int, len(e.Params))
		var walk func(i int)
		walk = func(i int) {
			if i == len(e.Params) {
				idx = append(idx, append([]int(nil), cur...))
				return
			}
			for v := range e.Params[i].Values {
				cur[i] = v
				walk(i + 1)
			}
		}
		walk(0)
	default:
		idx = append(idx, base)
		for i, p := range e.Params {
			for v := range p.Values {
				if v == base[i] {
					continue
				}
				pt := append([]int(nil), base...)
				pt[i] = v
				idx = append(idx, pt)
			}
		}
	}
	var out []Point
	for _, vals := range idx {
		pt := Point{Labels: map[string]string{}, Params: map[string]any{}, Baseline: true}
		var parts []string
		for i, p := range e.Params {
			v := p.Values[vals[i]]
			pt.Labels[p.Name], pt.Params[p.Name] = v.Label, v.Value
			parts = append(parts, p.Name+"="+v.Label)
			if vals[i] != base[i] {
				pt.Baseline = false
			}
		}
		pt.Key = strings.Join(parts, " ")
		out = append(out, pt)
	}
	// The baseline first, whatever the order of the matrix.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Baseline && !out[j].Baseline })
	return out
}

// Slot is one run in an experiment's order.
type Slot struct {
	Index int // position in the order
	Point int // index into the points
	Rep   int // from 1
}

// Order interleaves the runs: round r runs every point once, in an order
// shuffled with seed, so that drift over time (a warming machine, a noisy
// neighbour) hits every point alike.
func Order(points, repeat int, seed uint64) []Slot {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out []Slot
	for r := 1; r <= repeat; r++ {
		perm := rng.Perm(points)
		for _, p := range perm {
			out = append(out, Slot{Index: len(out), Point: p, Rep: r})
		}
	}
	return out
}

// Run is one run's record in an experiment's outcome.
type Run struct {
	Slot   Slot
	Status string
	Error  string
	Result *result.Result
}

// Outcome is an experiment's runs and verdict.
type Outcome struct {
	Schema     string   `json:"schema"`
	Name       string   `json:"name"`
	Plan       string   `json:"plan"`
	PlanInputs []string `json:"plan_inputs,omitempty"` // see result.Result
	Seed       uint64   `json:"seed"`
	Vary       string   `json:"vary"`
	Repeat     int      `json:"repeat"`
	// KneeShare is the plan's knee: share (0.05 for 5%); absent for the
	// default, stats.DefaultKneeShare.
	KneeShare float64 `json:"knee_share,omitempty"`
	// Compare is a matrix's factor under study, and CompareWhy how it
	// was chosen (spec.CompareReason); absent in files written before
	// compare:, whose matrices compared along the last param.
	Compare    string `json:"compare,omitempty"`
	CompareWhy string `json:"compare_why,omitempty"`
	Warmup     string `json:"warmup,omitempty"`
	// TargetRate is the plan's target_rate, in req/s: what the cheapest
	// setup of boxes must serve; absent without one.
	TargetRate float64   `json:"target_rate,omitempty"`
	Params     []Param   `json:"params"`
	Points     []Point   `json:"points"`
	Runs       []RunInfo `json:"runs"`
	Verdict    *Verdict  `json:"verdict"`
	// Sequential is what repeat: auto did (its looks and decision);
	// absent for a fixed repeat.
	Sequential  *Sequential `json:"sequential,omitempty"`
	Interrupted bool        `json:"interrupted"`
	Complete    bool        `json:"complete"`

	results []*result.Result // by run index; nil when not done
}

// Param describes a swept param in the outcome.
type Param struct {
	Name     string   `json:"name"`
	Values   []string `json:"values"`
	Numeric  bool     `json:"numeric"`
	Baseline string   `json:"baseline"`
	// Boxes are a param of boxes' values with their prices; absent for
	// other params.
	Boxes []BoxPrice `json:"boxes,omitempty"`
}

// RunInfo is one run in the outcome, without its full result.
type RunInfo struct {
	Index  int     `json:"index"`
	Point  string  `json:"point"`
	Rep    int     `json:"rep"`
	Status string  `json:"status"` // done, failed, pending
	Error  string  `json:"error,omitempty"`
	Dir    string  `json:"dir,omitempty"`
	RPS    float64 `json:"throughput_rps,omitempty"`
	P95    float64 `json:"p95_ms,omitempty"`
}

// Results returns the result of each done run, by run index.
func (o *Outcome) Results() []*result.Result { return o.results }

// SetResult keeps the result of run i (from 0, in the order), done.
func (o *Outcome) SetResult(i int, res *result.Result) { o.results[i] = res }

// SchemaExperiment is the version of experiment.json that loadlab writes.
// v2 leaves a sweep's knee out when there is none (with knee_reason) where v1
// wrote -1: a v1 reader would take a missing knee for the first level, so
// the version changed, and such a reader refuses the file instead.
const SchemaExperiment = "loadlab.experiment/v2"

// SchemaExperimentV1 is the earlier version, still read: its knee of -1
// reads as no knee.
const SchemaExperimentV1 = "loadlab.experiment/v1"

// readableSchema reports whether loadlab reads this experiment.json version.
func readableSchema(s string) bool { return s == SchemaExperiment || s == SchemaExperimentV1 }

// NewOutcome starts an experiment's outcome: its points and room for the
// results of runs runs.
func NewOutcome(h spec.Head, e *spec.Experiment, seed uint64, points []Point, runs int) *Outcome {
	out := &Outcome{
		Schema: SchemaExperiment, Name: h.Name, Plan: h.Text, PlanInputs: h.Inputs, Seed: seed, Vary: string(e.Vary), Repeat: e.Repeat, KneeShare: e.KneeShare, TargetRate: e.TargetRate,
		Points: points, results: make([]*result.Result, runs),
	}
	if e.Warmup > 0 {
		out.Warmup = e.Warmup.String()
	}
	if factor, why := Factor(e); factor != "" {
		out.Compare, out.CompareWhy = factor, string(why)
	}
	out.Params = outcomeParams(e)
	return out
}

// Share makes a run's result hold the outcome's copy of the plan text, which
// every run of the experiment carries (Result.Plan): one copy in memory
// however many runs, not one per run.
func (out *Outcome) Share(res *result.Result) *result.Result {
	if res != nil && res.Plan == out.Plan {
		res.Plan = out.Plan
	}
	return res
}

// Finish lists the runs and computes the verdict; status tells how a run
// ended, if it did.
func (out *Outcome) Finish(e *spec.Experiment, order []Slot, status func(i int) (string, string, bool)) {
	complete := true
	out.Runs = nil
	for _, slot := range order {
		info := RunInfo{Index: slot.Index + 1, Point: out.Points[slot.Point].Key, Rep: slot.Rep, Status: "pending"}
		if st, msg, ok := status(slot.Index); ok {
			info.Status, info.Error = st, msg
			info.Dir = filepath.Join("runs", fmt.Sprintf("%03d", slot.Index+1))
		}
		if res := out.results[slot.Index]; res != nil {
			info.RPS, info.P95 = Throughput(res), res.Summary.Latency.P95
		} else {
			complete = false
		}
		out.Runs = append(out.Runs, info)
	}
	out.Complete = complete
	out.Verdict = AnalyzeSequential(e, out.Points, order, out.results, out.Sequential)
}

// Assemble builds an experiment's outcome from results already in hand,
// one per run in Order(len(Points), repeat, seed): for tools and tests.
func Assemble(h spec.Head, e *spec.Experiment, seed uint64, results []*result.Result) *Outcome {
	points := Points(e)
	order := Order(len(points), e.Repeat, seed)
	out := NewOutcome(h, e, seed, points, len(order))
	copy(out.results, results)
	out.Finish(e, order, func(i int) (string, string, bool) {
		if i < len(results) && results[i] != nil {
			return "done", "", true
		}
		return "", "", false
	})
	return out
}
