// Package capacity finds the highest open-load arrival rate (or closed-load
// VU count, Options.VUs) at which every clause of a service-level objective
// holds. It is a controller over steps,
// each a normal run at one rate whose result is kept (DESIGN.md section 10):
//
//  1. grow: from the plan's rate, multiply by Factor (2) until a step breaks;
//  2. bisect between the highest rate that held and the lowest that broke
//     until they are within Precision (2%) of each other;
//  3. confirm: run Confirm (3) more steps at the highest rate that held; if
//     one breaks, step down by Precision and confirm again (at most twice).
//
// A step holds when its figures are steady (Judge, on the per-second
// series) and every SLO clause holds on its result. The controller, Next,
// is a pure function of the steps made so far: tests drive it without a
// clock or a network, and a search interrupted by Ctrl-C resumes by
// replaying the steps it kept. Run makes the steps with internal/runner.
package capacity

import (
	"errors"
	"fmt"
	"math"
)

// Phase is the part of the search a step belongs to.
type Phase string

const (
	Grow    Phase = "grow"
	Bisect  Phase = "bisect"
	Confirm Phase = "confirm"
)

// Stop names what ended a search before it found its answer.
type Stop string

const (
	ServerCrashed      Stop = "server_crashed"      // the server under test exited mid-step
	GeneratorSaturated Stop = "generator_saturated" // loadlab itself ran out of CPU: the answer is "at least"
)

// Outcome is a finished step as the controller sees it.
type Outcome struct {
	// Rate is the step's arrival rate a second; VUs its VU count in a
	// search by VUs (Options.VUs), where Rate is 0.
	Rate  float64 `json:"rate_per_s,omitempty"`
	VUs   int     `json:"vus,omitempty"`
	Phase Phase   `json:"phase"`
	Holds bool    `json:"holds"`
	// Clause is why the step broke: the SLO clause that failed, or what
	// the series showed ("median latency rose ..."); "" when it held.
	Clause string `json:"clause,omitempty"`
	// Stop, when set, ends the search after this step.
	Stop Stop `json:"stop,omitempty"`
}

// Options tune a search.
type Options struct {
	Start     float64 // the first rate, per second (the plan's)
	Factor    float64 // growth factor; 2 by default
	Precision float64 // relative width of the final bracket; 0.02 by default
	Confirm   int     // repeats at the answer (the command's default is 3); 0 for none
	MaxGrow   int     // most growth steps; 10 by default (a rate 512 times the first)
	// StepDowns is how many times a confirm that broke steps down; 2 by
	// default.
	StepDowns int
	// VUs: the search varies a closed load's VU count, a whole number, and
	// Start, Decision.Rate and Answer.Rate, Above are VU counts. Bisection
	// also ends when the bracket is one VU wide.
	VUs bool
}

// level is what the search varies at the step: its rate, or its VUs.
func (o Outcome) level() float64 {
	if o.VUs > 0 {
		return float64(o.VUs)
	}
	return o.Rate
}

// Unit says a level of the search: "412.5/s", or "40 VUs".
func (o Options) Unit(x float64) string {
	if o.VUs {
		return fmt.Sprintf("%.0f VUs", x)
	}
	return fmt.Sprintf("%.4g/s", x)
}

// The defaults of Options.
const (
	DefaultFactor    = 2
	DefaultPrecision = 0.02
	DefaultConfirm   = 3 // the command's --confirm
	DefaultMaxGrow   = 10
	MinPrecision     = 0.002
)

// WithDefaults fills in what is zero, and checks the rest.
func (o Options) WithDefaults() (Options, error) {
	if o.Factor == 0 {
		o.Factor = DefaultFactor
	}
	if o.Precision == 0 {
		o.Precision = DefaultPrecision
	}
	if o.MaxGrow == 0 {
		o.MaxGrow = DefaultMaxGrow
	}
	if o.StepDowns == 0 {
		o.StepDowns = 2
	}
	switch {
	case o.VUs && (o.Start < 1 || o.Start != math.Trunc(o.Start) || o.Start > 1e6):
		return o, fmt.Errorf("the first VU count must be a whole number from 1, got %g", o.Start)
	case !(o.Start > 0) || math.IsInf(o.Start, 0):
		return o, fmt.Errorf("the first rate must be positive, got %g/s", o.Start)
	case !(o.Factor > 1) || math.IsInf(o.Factor, 0):
		return o, fmt.Errorf("the growth factor must be over 1, got %g", o.Factor)
	case !(o.Precision > 0) || o.Precision >= 1:
		return o, fmt.Errorf("the precision must be over 0%% and under 100%%, got %g%%", 100*o.Precision)
	case o.Precision < MinPrecision:
		// Rates keep 4 significant digits (round): a finer bracket would
		// not narrow.
		return o, fmt.Errorf("the precision must be at least %g%%, got %g%%", 100*MinPrecision, 100*o.Precision)
	case o.Confirm < 0:
		return o, fmt.Errorf("confirm must not be negative, got %d", o.Confirm)
	}
	return o, nil
}

// MaxSteps is the most steps a search can take: every growth step, the
// bisections from the widest bracket growth leaves, and the confirm repeats
// with their step-downs. The search states it up front.
func (o Options) MaxSteps() int {
	bisect := int(math.Ceil(math.Log2((o.Factor - 1) / o.Precision)))
	if o.VUs {
		bisect++ // a midpoint rounded down may halve the bracket a little less
	}
	return o.MaxGrow + max(bisect, 0) + o.Confirm*(1+o.StepDowns)
}

// Answer is what a search found.
type Answer struct {
	// Rate is the highest rate that held, confirmed unless Note says
	// otherwise; 0 when even the first rate broke. With Options.VUs, Rate
	// and Above are VU counts.
	Rate float64
	// AtLeast: the search stopped before any rate broke (loadlab saturated,
	// or growth reached MaxGrow), so the capacity is Rate or more.
	AtLeast bool
	// Above is the lowest rate that broke above Rate (0: none), and Limit
	// its step's index: the step that names the binding clause.
	Above float64
	Limit int
	// Confirmed counts the confirm repeats at Rate that held, of Confirms.
	Confirmed, Confirms int
	// AtAnswer are the indexes of the steps run at Rate that held.
	AtAnswer []int
	// Note says how the search ended when it is not the plain case.
	Note string
}

// Decision is the controller's next move: a step to make at Rate (a VU
// count with Options.VUs), or Done with the answer.
type Decision struct {
	Done   bool
	Rate   float64
	Phase  Phase
	Answer Answer
}

// ErrReplay is a kept step that is not the one the controller would make:
// the steps were made with other options.
var ErrReplay = errors.New("the kept steps were made with other settings")

// Next is the controller: from the steps made so far, in order, the next
// step to make or the answer. It is a pure function, so a search resumes by
// calling it on the steps it kept.
func Next(o Options, steps []Outcome) (Decision, error) {
	o, err := o.WithDefaults()
	if err != nil {
		return Decision{}, err
	}
	s := &search{o: o, limit: -1}
	for i, st := range steps {
		d := s.propose()
		if d.Done || d.Phase != st.Phase || !near(d.Rate, st.level()) || o.VUs != (st.VUs > 0) {
			return Decision{}, fmt.Errorf("step %d at %s (%s): %w", i+1, o.Unit(st.level()), st.Phase, ErrReplay)
		}
		s.record(i, st)
	}
	return s.propose(), nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b)) }

// search is the controller's state after the steps recorded so far.
type search struct {
	o       Options
	phase   Phase
	grown   int     // growth steps made
	last    float64 // the last growth rate
	lo, hi  float64 // highest that held, lowest that broke (0: none yet)
	limit   int     // the step at hi
	answer  float64 // the rate being confirmed
	held    []int   // steps at answer that held
	confirm int     // confirm repeats made at answer
	okays   int     // of which held
	downs   int     // step-downs made
	done    *Answer
}

func (s *search) propose() Decision {
	if s.done != nil {
		return Decision{Done: true, Answer: *s.done}
	}
	switch s.phase {
	case "", Grow:
		if s.grown == 0 {
			return Decision{Rate: s.o.Start, Phase: Grow}
		}
		return Decision{Rate: s.round(s.last * s.o.Factor), Phase: Grow}
	case Bisect:
		if s.o.VUs {
			return Decision{Rate: math.Floor((s.lo + s.hi) / 2), Phase: Bisect}
		}
		return Decision{Rate: round((s.lo + s.hi) / 2), Phase: Bisect}
	default:
		return Decision{Rate: s.answer, Phase: Confirm}
	}
}

func (s *search) record(i int, st Outcome) {
	st.Rate = st.level()
	switch st.Phase {
	case Grow:
		s.grown++
		s.last = st.Rate
		if st.Holds {
			s.lo = st.Rate
			s.held = []int{i}
		} else {
			s.hi, s.limit = st.Rate, i
		}
	case Bisect:
		if st.Holds {
			s.lo = st.Rate
			s.held = []int{i}
		} else {
			s.hi, s.limit = st.Rate, i
		}
	case Confirm:
		s.confirm++
		if st.Holds {
			s.held = append(s.held, i)
			s.okays++
		}
	}
	if st.Stop != "" {
		s.finish(st)
		return
	}
	switch {
	case st.Phase == Grow && !st.Holds && s.lo == 0:
		s.done = &Answer{Limit: i, Above: st.Rate, Note: fmt.Sprintf("even the first %s, %s, broke the SLO", s.what(), s.o.Unit(st.Rate))}
	case st.Phase == Grow && st.Holds && s.grown >= s.o.MaxGrow:
		s.done = &Answer{Rate: s.lo, AtLeast: true, Limit: -1, AtAnswer: s.held, Note: fmt.Sprintf("every %s held up to %s after %d growth steps", s.what(), s.o.Unit(s.lo), s.grown)}
	case st.Phase == Confirm && !st.Holds:
		broke := s.answer
		down := round(broke * (1 - s.o.Precision))
		if s.o.VUs {
			down = min(math.Floor(broke*(1-s.o.Precision)), broke-1)
		}
		if s.downs >= s.o.StepDowns || down < 1 && s.o.VUs {
			s.done = &Answer{Rate: s.answer, Above: s.hi, Limit: s.limit, Confirmed: s.okays, Confirms: s.confirm, AtAnswer: s.held,
				Note: fmt.Sprintf("unconfirmed: a confirm repeat at %s broke after %d step-down(s)", s.o.Unit(broke), s.downs)}
			return
		}
		s.downs++
		s.hi, s.limit = broke, i
		s.lo = down
		s.answer, s.held, s.confirm, s.okays = s.lo, nil, 0, 0
	case st.Phase == Confirm:
		if s.confirm >= s.o.Confirm {
			s.finishConfirmed()
		}
	case s.hi > 0 && s.lo > 0 && ((s.hi-s.lo)/s.lo <= s.o.Precision || s.o.VUs && s.hi-s.lo <= 1):
		s.phase, s.answer, s.confirm = Confirm, s.lo, 0
		if s.o.Confirm == 0 {
			s.finishConfirmed()
		}
	case s.hi > 0:
		s.phase = Bisect
	default:
		s.phase = Grow
	}
}

// finishConfirmed ends a search whose answer held every confirm repeat.
func (s *search) finishConfirmed() {
	a := &Answer{Rate: s.answer, Above: s.hi, Limit: s.limit, Confirmed: s.okays, Confirms: s.confirm, AtAnswer: s.held}
	if s.downs > 0 {
		a.Note = fmt.Sprintf("a confirm repeat at %s broke: stepped down to %s", s.o.Unit(s.hi), s.o.Unit(s.answer))
	}
	s.done = a
}

// finish ends a search stopped by st.
func (s *search) finish(st Outcome) {
	a := &Answer{Rate: s.lo, Above: s.hi, Limit: s.limit, AtAnswer: s.held}
	if s.phase == Confirm {
		a.Rate, a.Confirmed, a.Confirms = s.answer, s.okays, s.confirm
	}
	switch st.Stop {
	case GeneratorSaturated:
		a.AtLeast = true
		if st.Holds && st.Rate > a.Rate {
			a.Rate = st.Rate
		}
		a.Note = fmt.Sprintf("loadlab itself was saturated at %s: it cannot offer more here, so the capacity is at least the answer", s.o.Unit(st.Rate))
	case ServerCrashed:
		a.Note = fmt.Sprintf("the server under test crashed at %s", s.o.Unit(st.Rate))
	default:
		a.Note = fmt.Sprintf("stopped at %s: %s", s.o.Unit(st.Rate), st.Stop)
	}
	s.done = a
}

// what names the level: "rate", or "VU count".
func (s *search) what() string {
	if s.o.VUs {
		return "VU count"
	}
	return "rate"
}

// round is round, or for VUs the nearest whole number.
func (s *search) round(x float64) float64 {
	if s.o.VUs {
		return math.Round(x)
	}
	return round(x)
}

// round keeps 4 significant digits: rates a person can read and type
// again, 0.1% apart at most, well inside any precision.
func round(x float64) float64 {
	if x <= 0 {
		return x
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(x)))
	return math.Round(x*scale) / scale
}
