package report

import (
	"fmt"
	"strings"

	"github.com/loadlab/loadlab/internal/cost"
	"github.com/loadlab/loadlab/internal/experiment"
)

// BoxAssumptions are what serving a rate with n boxes assumes.
const BoxAssumptions = "assumes capacity scales out linearly across boxes of a kind and that the load is spread evenly over them; the load balancer, its price and its limits are not included"

// maxCrossoverLines is how many crossovers the text tells; the rest are in
// experiment.json.
const maxCrossoverLines = 6

// boxLines are a box verdict's words after its lines of each box, which
// markdown and HTML show as a table instead. BoxText writes the box lines
// first, one per box of Boxes; a Text stored by an older loadlab has the
// same layout.
func boxLines(b *experiment.BoxVerdict) []string {
	if b == nil || len(b.Text) < len(b.Boxes) {
		return nil
	}
	return b.Text[len(b.Boxes):]
}

// BoxText says a box verdict in words, line by line: a line for each box
// of Boxes, in their order, then what they were compared at, the basis of
// the rates, the cheapest option for the target rate, the crossovers and
// bands, what the arithmetic assumes, and the boxes left unpriced and why.
func BoxText(bv *experiment.BoxVerdict) []string {
	var out []string
	if len(bv.Boxes) == 0 {
		out = []string{"no box served a request: there is nothing to price"}
	} else {
		out = boxWords(bv)
		if len(bv.Idle) > 0 {
			out = append(out, fmt.Sprintf("not priced, having served nothing: %s", strings.Join(bv.Idle, ", ")))
		}
	}
	if line := matchedText(bv); line != "" {
		n := min(len(bv.Boxes), len(out))
		out = append(out[:n], append([]string{line}, out[n:]...)...)
	}
	if len(bv.HeldNothing) > 0 {
		out = append(out, fmt.Sprintf("not priced, holding the SLO at no rate searched (even the first rate broke it): %s", strings.Join(bv.HeldNothing, ", ")))
	}
	if len(bv.NoRuns) > 0 {
		out = append(out, fmt.Sprintf("not priced, with no run done (each failed; see the runs): %s", strings.Join(bv.NoRuns, ", ")))
	}
	return out
}

// boxAnswer is the box verdict in one line, for the compact summary: the
// cheapest way to serve the plan's target_rate when it has one, else the
// box whose million requests cost least, with how many were priced; the
// verdict's first line when no box was priced.
func boxAnswer(bv *experiment.BoxVerdict) string {
	text := bv.Text
	if len(text) == 0 {
		text = BoxText(bv)
	}
	if len(bv.Boxes) == 0 || len(text) < len(bv.Boxes) {
		return text[0]
	}
	if len(bv.Options) > 0 {
		o := bv.Options[0]
		return fmt.Sprintf("cheapest for %s req/s: %s, holding %s req/s", cost.Rate(bv.TargetRate), o, cost.Rate(o.Holds))
	}
	best := 0
	for i, f := range bv.Boxes {
		if f.PerMillion < bv.Boxes[best].PerMillion {
			best = i
		}
	}
	if len(bv.Boxes) == 1 {
		return text[best]
	}
	return fmt.Sprintf("cheapest per million requests of the %d priced: %s", len(bv.Boxes), text[best])
}

// matchedText says what the boxes were compared at: the settings every box
// ran and the points left out, or, with none shared, that each box is at
// its best point of all; "" when the box is the only param.
func matchedText(bv *experiment.BoxVerdict) string {
	if len(bv.Matched) == 0 && !bv.Unmatched {
		return ""
	}
	if len(bv.Matched) == 0 {
		return "no setting of the other params was run on every box: each box is at its best point of all, and they compare unlike setups; run the boxes at the same settings (vary: matrix, or points) to compare like with like"
	}
	line := fmt.Sprintf("compared like with like: each box at its best of the settings every box ran (%s)", strings.Join(bv.Matched, "; "))
	if len(bv.Matched) == 1 {
		line = fmt.Sprintf("compared like with like: every box at %s, the setting of the other params every box ran", bv.Matched[0])
	}
	switch left := bv.LeftOut; {
	case len(left) == 0:
	case len(left) <= 4:
		line += fmt.Sprintf("; left out, run on some boxes only: %s", strings.Join(left, ", "))
	default:
		line += fmt.Sprintf("; left out, run on some boxes only: %s and %d more", strings.Join(left[:3], ", "), len(left)-3)
	}
	return line
}

// boxWords are the words on the boxes priced.
func boxWords(bv *experiment.BoxVerdict) []string {
	var out []string
	verb := "held"
	if bv.Basis == experiment.BasisThroughput {
		verb = "served"
	}
	for _, f := range bv.Boxes {
		v := verb
		if f.AtLeast && bv.Basis == experiment.BasisCapacity {
			v = "held at least" // the generator saturated first
		}
		out = append(out, fmt.Sprintf("%s %s %s req/s (%s) at %s/h: %s per million requests",
			f.Box, v, cost.Rate(f.Rate), f.Point, cost.Money(f.PricePerHour), cost.Money(f.PerMillion)))
	}
	if bv.Basis == experiment.BasisCapacity {
		out = append(out, "these are capacities under the SLO: the throughput, in requests a second, at the highest rate each box's capacity searches held (the median over its runs)")
	}
	if bv.Basis == experiment.BasisThroughput {
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
