// Package spec holds the parts of a plan's schema that the analysis reads:
// an experiment's params, their values and boxes, how a matrix compares,
// and positions in a plan file. internal/plan decodes and validates them
// (its types of these names are aliases of these); internal/experiment and
// internal/report read them without linking plan's compiler, and through
// it the engine (internal/layering's test).
package spec

import (
	"fmt"
	"slices"
	"time"
)

// Pos is a place in a plan file. Line and Col count from 1; a zero Line
// means the value came from the command line (Source then says which flag).
type Pos struct {
	File      string
	Line, Col int
	Source    string // "--set load.closed.vus" for command-line values
}

func (p Pos) String() string {
	if p.Line == 0 {
		if p.Source != "" {
			return p.Source
		}
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Shift moves a position n columns to the right, to point inside a string.
func (p Pos) Shift(n int) Pos {
	if p.Line > 0 {
		p.Col += n
	}
	return p
}

// Experiment is a sweep: the plan run at every point of its params,
// several times each.
type Experiment struct {
	Pos      Pos
	Params   []Param
	Vary     Vary
	Baseline map[string]int // param name: index of its baseline value
	// Repeat is the rounds to run; with Auto (repeat: auto), the most
	// (max_repeat), and the experiment stops when the primary figure's
	// change is decided (see experiment.Sequential), or is within
	// MinEffect (min_effect: 2% is 0.02; 0 when absent).
	Repeat    int
	Auto      bool
	MinEffect float64
	Warmup    time.Duration
	WarmupPos Pos
	Cooldown  time.Duration
	Seed      uint64 // zero: pick one (and print it)
	// KneeShare is the share of throughput a step must add to count as a
	// gain (knee: 5% is 0.05); zero: stats.DefaultKneeShare.
	KneeShare float64
	// Compare is the param a matrix studies (its factor): each point is
	// compared with the point that differs only in it, set to its baseline
	// value, at each combination of the other params (the conditions it is
	// studied under), and the recommendation speaks of it alone. Empty
	// unless the plan is a matrix of two params or more, or names one.
	Compare string
	// CompareWhy says how Compare was chosen.
	CompareWhy CompareReason
	// TargetRate is target_rate: the requests per second that the cheapest
	// setup of boxes must serve (0: none); it needs a param of boxes.
	TargetRate    float64
	TargetRatePos Pos
}

// CompareReason says how a matrix's factor was chosen.
type CompareReason string

const (
	CompareNamed    CompareReason = "named"    // the plan's compare:
	CompareBaseline CompareReason = "baseline" // the only param the baseline names
	CompareLast     CompareReason = "last"     // the last param in the file: no compare:, and the baseline names none or several
	// CompareOlder: an experiment.json written before compare: existed,
	// whose matrix was compared along its last param, as it still is.
	CompareOlder CompareReason = "older"
)

// Vary says which points an experiment runs.
type Vary string

const (
	OneAtATime Vary = "one-at-a-time" // the baseline, and each param's other values with the rest at baseline
	Matrix     Vary = "matrix"        // every combination
)

// Param is a swept parameter.
type Param struct {
	Name    string
	Values  []ParamValue
	Numeric bool // every value is a number: knees and scalability fits apply
	// Boxes: every value is a Box (its values name price_per_hour), whose
	// limits the server runs under at its points.
	Boxes bool
	Pos   Pos
}

// ParamValue is one value of a param: Label names it in reports ("jemalloc"),
// Value is what templates get ("/usr/lib/.../libjemalloc.so.2").
type ParamValue struct {
	Label string
	Value any
	Box   *Box // a param of boxes' value; nil otherwise
}

// Box is one value of a param of boxes: the limits its points' server runs
// under (server.limits, set per point) and what such a box costs. A param
// is of boxes when its values name price_per_hour:
//
//	params:
//	  box: { "1x": { cpus: 1, memory: 512MiB, price_per_hour: 0.05 }, "2x": { cpus: 2, memory: 1GiB, price_per_hour: 0.10 } }
//
// Templates still read the value's fields ({{ box.cpus }}).
type Box struct {
	CPUs, Memory, Swap string // as written; "" is a limit the box does not set
	PricePerHour       float64
	Pos                Pos
}

// Head is what an experiment's outcome keeps of its plan: its name, its
// text with secrets masked, and the inputs it read (see plan.Plan.Head).
type Head struct {
	Name   string
	Text   string
	Inputs []string
}

// BoxesSetMemory reports whether every box of some param of boxes sets a
// memory limit, beside which server.limits.swap may be given.
func (e *Experiment) BoxesSetMemory() bool {
	if e == nil {
		return false
	}
	for _, prm := range e.Params {
		if prm.Boxes && !slices.ContainsFunc(prm.Values, func(v ParamValue) bool { return v.Box == nil || v.Box.Memory == "" }) {
			return true
		}
	}
	return false
}

// BaselineParams are the parameter values of the experiment's baseline.
func (e *Experiment) BaselineParams() map[string]any {
	out := map[string]any{}
	for _, prm := range e.Params {
		out[prm.Name] = prm.Values[e.Baseline[prm.Name]].Value
	}
	return out
}

// PointCount is how many points the experiment has, counted without listing
// them; past MaxPoints it stops counting and returns MaxPoints+1.
func (e *Experiment) PointCount() int64 {
	if e.Vary == Matrix {
		n := int64(1)
		for _, prm := range e.Params {
			n *= int64(len(prm.Values))
			if n > MaxPoints {
				return MaxPoints + 1
			}
		}
		return n
	}
	n := int64(1)
	for _, prm := range e.Params {
		n += int64(len(prm.Values)) - 1
	}
	return n
}

// MaxPoints is the most points an experiment's params may make (plan's
// limit, kept here for PointCount).
const MaxPoints = 10_000
