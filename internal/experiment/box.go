package experiment

import (
	"fmt"
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
	// Text says it all in words, line by line (the verdict's "which box"):
	// first a line for each box, in the order of Boxes, then the rest.
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

// BoxAssumptions are what serving a rate with n boxes assumes.
const BoxAssumptions = "assumes capacity scales out linearly across boxes of a kind and that the load is spread evenly over them; the load balancer, its price and its limits are not included"

// maxCrossoverLines is how many crossovers the text tells; the rest are in
// experiment.json.
const maxCrossoverLines = 6

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
	if line := matchedText(e, prm.Name, points, t, matched, others); line != "" {
		bv.Matched, bv.Unmatched = matched, len(matched) == 0
		n := min(len(bv.Boxes), len(bv.Text))
		bv.Text = slices.Insert(bv.Text, n, line)
	}
	if len(held0) > 0 {
		bv.Unpriced = append(bv.Unpriced, held0...)
		bv.Text = append(bv.Text, fmt.Sprintf("not priced, holding the SLO at no rate searched (even the first rate broke it): %s", strings.Join(held0, ", ")))
	}
	if len(unpriced) > 0 {
		bv.Unpriced = append(bv.Unpriced, unpriced...)
		bv.Text = append(bv.Text, fmt.Sprintf("not priced, with no run done (each failed; see the runs): %s", strings.Join(unpriced, ", ")))
	}
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

// matchedText says what the boxes were compared at: the settings every box
// ran and the points left out, or, with none shared, that each box is at
// its best point of all; "" when the box is the only param.
func matchedText(e *spec.Experiment, box string, points []Point, t *FigureTable, matched []string, others func(Point) string) string {
	if len(e.Params) < 2 {
		return ""
	}
	if len(matched) == 0 {
		return "no setting of the other params was run on every box: each box is at its best point of all, and they compare unlike setups; run the boxes at the same settings (vary: matrix, or points) to compare like with like"
	}
	var left []string
	for i, p := range points {
		if t.Rows[i].N > 0 && !slices.Contains(matched, others(p)) {
			left = append(left, p.Key)
		}
	}
	line := fmt.Sprintf("compared like with like: each box at its best of the settings every box ran (%s)", strings.Join(matched, "; "))
	if len(matched) == 1 {
		line = fmt.Sprintf("compared like with like: every box at %s, the setting of the other params every box ran", matched[0])
	}
	switch {
	case len(left) == 0:
	case len(left) <= 4:
		line += fmt.Sprintf("; left out, run on some boxes only: %s", strings.Join(left, ", "))
	default:
		line += fmt.Sprintf("; left out, run on some boxes only: %s and %d more", strings.Join(left[:3], ", "), len(left)-3)
	}
	return line
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
	bv.Unpriced = idle
	if !(most > 0) {
		bv.Text = []string{"no box served a request: there is nothing to price"}
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
	bv.Text = boxText(bv)
	if len(idle) > 0 {
		bv.Text = append(bv.Text, fmt.Sprintf("not priced, having served nothing: %s", strings.Join(idle, ", ")))
	}
	return bv
}

// boxText says a box verdict in words.
func boxText(bv *BoxVerdict) []string {
	var out []string
	verb := "held"
	if bv.Basis == BasisThroughput {
		verb = "served"
	}
	for _, f := range bv.Boxes {
		v := verb
		if f.AtLeast && bv.Basis == BasisCapacity {
			v = "held at least" // the generator saturated first
		}
		out = append(out, fmt.Sprintf("%s %s %s req/s (%s) at %s/h: %s per million requests",
			f.Box, v, cost.Rate(f.Rate), f.Point, cost.Money(f.PricePerHour), cost.Money(f.PerMillion)))
	}
	if bv.Basis == BasisCapacity {
		out = append(out, "these are capacities under the SLO: the throughput, in requests a second, at the highest rate each box's capacity searches held (the median over its runs)")
	}
	if bv.Basis == BasisThroughput {
		out = append(out, "these are throughputs at the plan's load, not capacities under an SLO: a box may hold more (the load did not saturate it) or less (at that rate latency is past what users accept); run loadlab capacity on each box for the highest rate it holds")
	}
	if len(bv.Options) > 0 {
		var others []string
		for _, o := range bv.Options[1:] {
			others = append(others, fmt.Sprintf("%s (holds %s)", o, cost.Rate(o.Holds)))
		}
		line := fmt.Sprintf("cheapest for %s req/s: %s, holding %s req/s", cost.Rate(bv.TargetRate), bv.Options[0], cost.Rate(bv.Options[0].Holds))
		if len(others) > 0 {
			line += "; then " + strings.Join(others, ", ")
		}
		out = append(out, line)
	}
	for i, c := range bv.Crossovers {
		if i == maxCrossoverLines {
			out = append(out, fmt.Sprintf("(%d more crossovers up to %s req/s in experiment.json)", len(bv.Crossovers)-i, cost.Rate(bv.Horizon)))
			break
		}
		out = append(out, c.String())
	}
	if len(bv.Crossovers) == 0 && len(bv.Bands) > 0 {
		out = append(out, fmt.Sprintf("up to %s req/s, %s boxes are the cheapest at every rate", cost.Rate(bv.Horizon), bv.Bands[0].Cheapest.Box))
	}
	if bv.BandsCut {
		out = append(out, fmt.Sprintf("(the bands stop at %s req/s: past %d, they are not listed)", cost.Rate(bv.Bands[len(bv.Bands)-1].To), cost.MaxBands))
	}
	out = append(out, "this "+BoxAssumptions)
	return out
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
