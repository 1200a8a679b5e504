package experiment

import (
	"math"
	"slices"
	"strings"

	"github.com/loadlab/loadlab/internal/cost"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/spec"
)

// BoxPrice is one value of a param of boxes as experiment.json keeps it:
// its limits as written and its price per hour.
type BoxPrice struct {
	Label        string  `json:"label"`
	CPUs         string  `json:"cpus,omitempty"`
	Memory       string  `json:"memory,omitempty"`
	Swap         string  `json:"swap,omitempty"`
	PricePerHour float64 `json:"price_per_hour"`
}

// Basis says what the cost arithmetic takes as the rate one box holds.
type Basis string

const (
	// BasisCapacity: the highest rate one box held under the SLO (a
	// capacity search at its point).
	BasisCapacity Basis = "capacity"
	// BasisThroughput: the throughput one box served at the plan's load,
	// which is not its capacity under an SLO: the load may not have
	// saturated it, or may have pushed latency past what users accept.
	BasisThroughput Basis = "throughput"
)

// BoxVerdict is which box, by price: what each box served (or held) at its
// best point, what a million requests cost on it, and, to serve a target
// rate, how many boxes of each kind and at what price, with the rates at
// which the cheapest kind changes. The arithmetic is package cost's.
type BoxVerdict struct {
	Param string `json:"param"`
	// Basis says whether Rate is each box's capacity under the SLO or its
	// throughput at the plan's load (see Basis).
	Basis Basis        `json:"basis"`
	Boxes []BoxFigures `json:"boxes"`
	// Unpriced are the boxes with no run done (every run failed: at its
	// memory limit, say) or that served nothing, left out of the
	// arithmetic.
	Unpriced []string `json:"unpriced,omitempty"`
	// TargetRate is the plan's target_rate (req/s), and Options each kind
	// of box serving it, cheapest first; absent without target_rate.
	TargetRate float64       `json:"target_rate,omitempty"`
	Options    []cost.Option `json:"options,omitempty"`
	// Bands are the rates up to Horizon by cheapest option: up to the
	// target rate, or 4 times the largest box's rate without one; BandsCut
	// when they stop short of it (cost.MaxBands).
	Horizon    float64          `json:"horizon_rps"`
	Bands      []cost.Band      `json:"bands,omitempty"`
	BandsCut   bool             `json:"bands_cut,omitempty"`
	Crossovers []cost.Crossover `json:"crossovers,omitempty"`
	// Matched are the settings of the other params the boxes were compared
	// at ("workers=2 threads=5"): those every priced box ran. Each box's
	// figures are from its best point among them, so a box swept over
	// threads is not set against another run at one thread count only
	// (vary: one at a time sweeps the baseline box alone). Empty when the
	// box is the only param. Unmatched: no setting was run on every box,
	// and each box is at its best point of all, unlike setups.
	Matched   []string `json:"matched,omitempty"`
	Unmatched bool     `json:"unmatched,omitempty"`
	// LeftOut are the points with runs done at a setting not every box
	// ran, left out of the comparison (in the order of points).
	LeftOut []string `json:"left_out,omitempty"`
	// Why each box of Unpriced is: NoRuns had no run done (each failed),
	// HeldNothing held the SLO at no rate its searches tried (even the
	// first broke it), Idle served nothing.
	NoRuns      []string `json:"no_runs,omitempty"`
	HeldNothing []string `json:"held_nothing,omitempty"`
	Idle        []string `json:"idle,omitempty"`
	// Text says it all in words, line by line (the verdict's "which box"):
	// first a line for each box, in the order of Boxes, then the rest.
	// report.Describe writes it; the analysis leaves it empty.
	Text []string `json:"text"`
}

// BoxFigures are one box's figures at its best point: the point of that
// box with the highest rate, among the settings of the other params every
// box ran (BoxVerdict.Matched).
type BoxFigures struct {
	Box          string  `json:"box"`
	Point        string  `json:"point"`
	PricePerHour float64 `json:"price_per_hour"`
	Throughput   float64 `json:"throughput_rps"` // median over the point's runs
	// Capacity is the highest rate one box held under the SLO, when the
	// point's runs carry one (see capacityOf); 0 otherwise.
	Capacity float64 `json:"capacity_rps,omitempty"`
	// AtLeast says Capacity is a lower bound: a search's generator
	// saturated before the server broke the SLO.
	AtLeast bool `json:"at_least,omitempty"`
	// Rate is what the arithmetic uses: Capacity, or Throughput without one.
	Rate float64 `json:"rate_rps"`
	// PerMillion is the cost of a million requests at Rate:
	// price_per_hour / (rate × 3600) × 1e6.
	PerMillion float64 `json:"per_million"`
	Runs       int     `json:"runs"`
}

// capacityOf is the highest rate a point's runs held under the SLO, in
// requests per second, and whether they carry one: the median over the
// runs that were capacity searches (a plan with params and capacity:) of
// the throughput at each search's answer. The answer itself is in the
// load's own unit (journeys a second by rate, VUs by vus), while the cost
// arithmetic and target_rate are in requests: the throughput of the step
// at the answer, which the run's result is, is the same rate in requests.
// A search with no answer (even its first rate broke the SLO) held
// nothing: 0. atLeast says some answer was a lower bound (the generator
// saturated first).
func capacityOf(rs []*result.Result) (rate float64, ok, atLeast bool) {
	var held []float64
	for _, r := range rs {
		if r == nil || r.Capacity == nil {
			continue
		}
		v := 0.0
		if r.Capacity.Answer() > 0 {
			v = r.Summary.ThroughputRPS
		}
		held = append(held, v)
		atLeast = atLeast || r.Capacity.AtLeast
	}
	if len(held) == 0 {
		return 0, false, false
	}
	slices.Sort(held)
	n := len(held)
	if n%2 == 1 {
		return held[n/2], true, atLeast
	}
	return (held[n/2-1] + held[n/2]) / 2, true, atLeast
}

// boxPrices are a param's boxes as experiment.json keeps them; nil for a
// param that is not of boxes.
func boxPrices(prm spec.Param) []BoxPrice {
	if !prm.Boxes {
		return nil
	}
	var out []BoxPrice
	for _, v := range prm.Values {
		if v.Box != nil {
			out = append(out, BoxPrice{Label: v.Label, CPUs: v.Box.CPUs, Memory: v.Box.Memory, Swap: v.Box.Swap, PricePerHour: v.Box.PricePerHour})
		}
	}
	return out
}

// boxesOf rebuilds a stored param's boxes, for reanalysis.
func boxesOf(op Param, prm *spec.Param) {
	if len(op.Boxes) == 0 {
		return
	}
	prm.Boxes = true
	for _, b := range op.Boxes {
		for i := range prm.Values {
			if prm.Values[i].Label == b.Label {
				prm.Values[i].Box = &spec.Box{CPUs: b.CPUs, Memory: b.Memory, Swap: b.Swap, PricePerHour: b.PricePerHour}
			}
		}
	}
}

// boxVerdict is the verdict on the experiment's first param of boxes; nil
// without one, or when no box has a run done.
func boxVerdict(e *spec.Experiment, points []Point, v *Verdict, byPoint [][]*result.Result) *BoxVerdict {
	var prm *spec.Param
	for i := range e.Params {
		if e.Params[i].Boxes {
			prm = &e.Params[i]
			break
		}
	}
	t := v.Table(FigureThroughput)
	if prm == nil || t == nil {
		return nil
	}
	for _, val := range prm.Values {
		if val.Box == nil {
			return nil
		}
	}
	matched, others := matchedSettings(e, prm.Name, points, t)
	var figs []BoxFigures
	var unpriced, held0 []string
	for _, val := range prm.Values {
		best := BoxFigures{Box: val.Label, PricePerHour: val.Box.PricePerHour}
		for i, p := range points {
			if p.Labels[prm.Name] != val.Label || t.Rows[i].N == 0 {
				continue
			}
			if len(matched) > 0 && !slices.Contains(matched, others(p)) {
				continue
			}
			f := BoxFigures{Box: val.Label, Point: p.Key, PricePerHour: val.Box.PricePerHour, Throughput: t.Rows[i].Median, Runs: t.Rows[i].N}
			if c, ok, least := capacityOf(byPoint[i]); ok {
				f.Capacity, f.AtLeast = c, least
			}
			if best.Point == "" || f.Capacity > best.Capacity || f.Capacity == best.Capacity && f.Throughput > best.Throughput {
				best = f
			}
		}
		if best.Point == "" {
			unpriced = append(unpriced, val.Label)
			continue
		}
		if _, searched, _ := capacityOf(byPoint[pointIndex(points, best.Point)]); searched && best.Capacity == 0 {
			// Its searches found no rate that held the SLO: it serves no
			// target rate at any price, and must not turn the others'
			// capacities into throughputs.
			held0 = append(held0, val.Label)
			continue
		}
		figs = append(figs, best)
	}
	if len(figs) == 0 {
		return nil
	}
	bv := BoxesFrom(prm.Name, figs, e.TargetRate)
	if len(e.Params) >= 2 {
		bv.Matched, bv.Unmatched = matched, len(matched) == 0
		if len(matched) > 0 {
			for i, p := range points {
				if t.Rows[i].N > 0 && !slices.Contains(matched, others(p)) {
					bv.LeftOut = append(bv.LeftOut, p.Key)
				}
			}
		}
	}
	bv.HeldNothing, bv.NoRuns = held0, unpriced
	bv.Unpriced = append(append(bv.Unpriced, held0...), unpriced...)
	return bv
}

// matchedSettings are the settings of the params other than the box param
// (their labels in plan order, "workers=2 threads=5") at which every box
// with a run done has one, in the order of points, and others, which gives
// a point's setting. It is nil when no setting is shared, and when the box
// is the only param (every point then differs in the box alone: nothing to
// match).
func matchedSettings(e *spec.Experiment, box string, points []Point, t *FigureTable) ([]string, func(Point) string) {
	others := func(p Point) string {
		var parts []string
		for _, prm := range e.Params {
			if prm.Name != box {
				parts = append(parts, prm.Name+"="+p.Labels[prm.Name])
			}
		}
		return strings.Join(parts, " ")
	}
	if len(e.Params) < 2 {
		return nil, others
	}
	ran := map[string]map[string]bool{} // setting: boxes run there
	var order []string
	boxes := map[string]bool{}
	for i, p := range points {
		if t.Rows[i].N == 0 {
			continue
		}
		k := others(p)
		if ran[k] == nil {
			ran[k] = map[string]bool{}
			order = append(order, k)
		}
		ran[k][p.Labels[box]] = true
		boxes[p.Labels[box]] = true
	}
	var matched []string
	for _, k := range order {
		if len(ran[k]) == len(boxes) {
			matched = append(matched, k)
		}
	}
	return matched, others
}

// BoxesFrom is the cost verdict on boxes from their figures: each box's
// price, throughput and (when every box has one) capacity; target is the
// rate to serve (0: none). It is what the verdict computes, for any source
// of capacities: a caller that has a capacity per box (from capacity
// searches) sets Capacity and gets the arithmetic on it.
func BoxesFrom(param string, figs []BoxFigures, target float64) *BoxVerdict {
	bv := &BoxVerdict{Param: param, Basis: BasisCapacity, TargetRate: target}
	for _, f := range figs {
		if !(f.Capacity > 0) {
			bv.Basis = BasisThroughput
		}
	}
	var boxes []cost.Box
	var idle []string
	most := 0.0
	for _, f := range figs {
		f.Rate = f.Capacity
		if bv.Basis == BasisThroughput {
			f.Rate = f.Throughput
		}
		if !(f.Rate > 0) {
			idle = append(idle, f.Box) // its cost per request is infinite, which JSON cannot hold
			continue
		}
		f.PerMillion = cost.PerMillion(f.PricePerHour, f.Rate)
		bv.Boxes = append(bv.Boxes, f)
		boxes = append(boxes, cost.Box{Name: f.Box, PricePerHour: f.PricePerHour, Capacity: f.Rate})
		most = math.Max(most, f.Rate)
	}
	bv.Unpriced, bv.Idle = idle, slices.Clone(idle)
	if !(most > 0) {
		return bv
	}
	if target > 0 {
		bv.Options = cost.Cheapest(boxes, target)
		bv.Horizon = target
	} else {
		bv.Horizon = 4 * most
	}
	bv.Bands, bv.BandsCut = cost.Bands(boxes, bv.Horizon)
	bv.Crossovers = cost.Crossovers(boxes, bv.Bands)
	return bv
}

// pointIndex is the index of the point with that key.
func pointIndex(points []Point, key string) int {
	for i, p := range points {
		if p.Key == key {
			return i
		}
	}
	return -1
}
