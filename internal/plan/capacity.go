package plan

import (
	"time"

	"github.com/loadlab/loadlab/internal/quantity"
)

// Capacity is a plan's capacity: section: the settings of `loadlab
// capacity` (its flags give the same), and in an experiment (params) a
// capacity search at every point instead of one run (docs/guide/capacity.md).
type Capacity struct {
	Pos Pos
	// SLO are its clauses; empty: the plan's thresholds.
	SLO []Threshold
	// Precision is relative (0.02 for 2%); 0: the command's default.
	Precision    float64
	PrecisionPos Pos
	// Confirm repeats at the answer; ConfirmSet when given (0 is none).
	Confirm    int
	ConfirmSet bool
	// StepMax is the longest a step runs; 0: the command's default.
	StepMax    time.Duration
	StepMaxPos Pos
	// By is what the search varies: "rate" (an open load's, the default)
	// or "vus" (a closed load's).
	By    string
	ByPos Pos
}

var capacityKeys = []string{"slo", "precision", "confirm", "step_max", "by"}

// capacity reads the capacity: section.
func (d *decoder) capacity(p *Plan, n *node) {
	n, ok := d.fields(n, "capacity", capacityKeys...)
	if !ok {
		return
	}
	c := &Capacity{Pos: n.pos, By: "rate", ByPos: n.pos}
	if s := n.get("slo"); s != nil {
		items := []*node{s}
		if s.kind == kindSeq {
			items = s.vals
		}
		for _, it := range items {
			text, ok := d.str(it, "capacity slo clause")
			if !ok {
				continue
			}
			t := Threshold{Text: text, Pos: it.pos}
			if it.quoted {
				t.Pos = t.Pos.Shift(1)
			}
			d.parseThreshold(&t)
			d.checkThresholdFilters(p, &t)
			c.SLO = append(c.SLO, t)
		}
	}
	if s := n.get("precision"); s != nil {
		c.PrecisionPos = s.pos
		if text, ok := d.str(s, "capacity precision"); ok {
			v, err := quantity.ParsePercent(text)
			switch {
			case err != nil:
				d.errorf(s.pos, "capacity precision: %v", err)
			case !(v > 0 && v < 1):
				d.errorf(s.pos, "capacity precision must be over 0%% and under 100%%, such as 2%%, got %s", text)
			default:
				c.Precision = v
			}
		}
	}
	if s := n.get("confirm"); s != nil {
		if v, ok := d.integer(s, "capacity confirm", 0); ok && d.atMost(s, "capacity confirm", v, 100) {
			c.Confirm, c.ConfirmSet = int(v), true
		}
	}
	if s := n.get("step_max"); s != nil {
		c.StepMaxPos = s.pos
		c.StepMax, _ = d.duration(s, "capacity step_max")
	}
	if s := n.get("by"); s != nil {
		c.ByPos = s.pos
		if text, ok := d.str(s, "capacity by"); ok {
			switch text {
			case "rate", "vus":
				c.By = text
			default:
				d.errorf(s.pos, "capacity by must be rate (an open load's arrival rate) or vus (a closed load's VU count), got %q%s", text, didYouMean(text, []string{"rate", "vus"}))
			}
		}
	}
	switch {
	case c.By == "rate" && p.Load.Kind != "" && p.Load.Kind != LoadOpen:
		d.errorf(c.ByPos, "capacity by rate needs an open load to start from, such as load: {open: {rate: 50/s, max_vus: 200}}; the load (%s) is %s (by: vus searches a closed load's VUs)", p.Load.Pos, p.Load.Kind)
	case c.By == "vus" && p.Load.Kind != "" && p.Load.Kind != LoadClosed:
		d.errorf(c.ByPos, "capacity by vus needs a closed load to start from, such as load: {closed: {vus: 10}}; the load (%s) is %s", p.Load.Pos, p.Load.Kind)
	}
	p.Capacity = c
}
