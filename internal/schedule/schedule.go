// Package schedule computes when things are due, as pure functions of time
// and counts with no clock of their own: the due time of each arrival of an
// open workload, and the number of VUs a ramping closed workload wants at a
// given moment. The engine asks; tests check the arithmetic without waiting.
//
// Open workloads are described by their arrival rate over time, piecewise
// linear: a constant rate, or stages that ramp or hold. Arrival i (counting
// from 0) is due at the moment the integral of the rate reaches i, so a
// constant rate R over D is exactly floor(R·D) arrivals (ceil when R·D is not
// whole), the first at time 0, and no arrival is ever skipped or doubled.
package schedule

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"time"

	"github.com/loadlab/loadlab/internal/quantity"
	execseg "github.com/loadlab/loadlab/internal/segment"
)

// Rate is a count per period: 7000 per 10 minutes is {7000, 10 * time.Minute}.
// Keeping it as a fraction keeps constant-rate due times exact.
type Rate = quantity.Rate

// Stage moves the rate linearly from where the previous stage left it to
// Target over Over. Holding is a stage whose Target equals the current rate.
type Stage struct {
	Target Rate
	Over   time.Duration
}

// Open is an open workload's arrival schedule.
type Open struct {
	segments []segment
	total    int64 // arrivals in the whole schedule
	// constant holds the exact fraction for a single constant-rate segment.
	constant *Rate
	// seg, when not the whole, makes this schedule one execution segment
	// of the schedule above: its arrival i is that one's seg.Global(i).
	seg execseg.Segment
}

type segment struct {
	start     time.Duration
	length    time.Duration
	r0, r1    float64 // arrivals per second at the start and end
	cumBefore float64 // arrivals due before the segment starts (real-valued)
}

// Constant is an open schedule at rate r for duration d.
func Constant(r Rate, d time.Duration) (*Open, error) {
	if r.Count <= 0 || r.Per <= 0 {
		return nil, fmt.Errorf("rate must be positive, got %v", r)
	}
	if d <= 0 {
		return nil, fmt.Errorf("duration must be positive, got %v", d)
	}
	o, err := Stages(r, []Stage{{Target: r, Over: d}})
	if err != nil {
		return nil, err
	}
	rc := r
	o.constant = &rc
	// Exact count: arrivals i with i·Per/Count < d, that is i < d·Count/Per.
	o.total = int64(math.Ceil(float64(d)*r.Count/float64(r.Per) - 1e-9))
	return o, nil
}

// Stages is an open schedule that starts at rate start and follows stages.
func Stages(start Rate, stages []Stage) (*Open, error) {
	if start.Count < 0 || (start.Count > 0 && start.Per <= 0) {
		return nil, fmt.Errorf("bad start rate %v", start)
	}
	if len(stages) == 0 {
		return nil, errors.New("no stages")
	}
	o := &Open{}
	r := perSecond(start)
	var at time.Duration
	var cum float64
	for i, s := range stages {
		if s.Over <= 0 {
			return nil, fmt.Errorf("stage %d: duration must be positive, got %v", i+1, s.Over)
		}
		if s.Target.Count < 0 || s.Target.Per < 0 {
			return nil, fmt.Errorf("stage %d: rate must not be negative", i+1)
		}
		r1 := perSecond(s.Target)
		o.segments = append(o.segments, segment{start: at, length: s.Over, r0: r, r1: r1, cumBefore: cum})
		cum += (r + r1) / 2 * s.Over.Seconds()
		at += s.Over
		r = r1
	}
	if cum <= 0 {
		return nil, errors.New("the stages have no arrivals: every rate is zero")
	}
	o.total = int64(math.Ceil(cum - 1e-9))
	return o, nil
}

// Total is the number of arrivals in the schedule.
func (o *Open) Total() int64 {
	if !o.seg.Whole() {
		return o.seg.Count(o.total)
	}
	return o.total
}

// Segment is execution segment s of the schedule: the arrivals j of o
// with j mod N = K-1, at o's due times, numbered from 0. Its duration is
// o's. The N segments' due times together are o's, each once.
func (o *Open) Segment(s execseg.Segment) *Open {
	c := *o
	c.seg = s
	return &c
}

// Duration is the length of the schedule.
func (o *Open) Duration() time.Duration {
	last := o.segments[len(o.segments)-1]
	return last.start + last.length
}

// RateAt is the arrival rate per second at time t.
func (o *Open) RateAt(t time.Duration) float64 {
	for _, s := range o.segments {
		if t < s.start+s.length {
			f := float64(t-s.start) / float64(s.length)
			return s.r0 + (s.r1-s.r0)*f
		}
	}
	return 0
}

// Due is when arrival i (from 0) is due. ok is false when i is past the end.
func (o *Open) Due(i int64) (due time.Duration, ok bool) {
	if i < 0 || i >= o.Total() {
		return 0, false
	}
	i = o.seg.Global(i)
	if c := o.constant; c != nil {
		// i·Per/Count in exact integer arithmetic when Count is whole.
		if c.Count == math.Trunc(c.Count) && c.Count < 1<<53 {
			hi, lo := bits.Mul64(uint64(i), uint64(c.Per))
			q, _ := bits.Div64(hi, lo, uint64(c.Count))
			return time.Duration(q), true
		}
		return time.Duration(float64(i) * float64(c.Per) / c.Count), true
	}
	n := float64(i)
	k := sort.Search(len(o.segments), func(k int) bool {
		s := o.segments[k]
		return s.cumBefore+(s.r0+s.r1)/2*s.length.Seconds() > n
	})
	if k == len(o.segments) {
		k = len(o.segments) - 1
	}
	s := o.segments[k]
	tau := solve(s, n-s.cumBefore)
	return s.start + time.Duration(tau*float64(time.Second)), true
}

// solve finds τ in seconds with r0·τ + (r1-r0)·τ²/(2T) = m.
func solve(s segment, m float64) float64 {
	if m <= 0 {
		return 0
	}
	T := s.length.Seconds()
	a := (s.r1 - s.r0) / (2 * T)
	if math.Abs(a) < 1e-12 {
		return min(m/s.r0, T)
	}
	// a·τ² + r0·τ − m = 0; the root in [0, T], written to avoid cancellation.
	disc := s.r0*s.r0 + 4*a*m
	if disc < 0 {
		disc = 0
	}
	tau := 2 * m / (s.r0 + math.Sqrt(disc))
	return min(max(tau, 0), T)
}

// VUStage moves the number of VUs linearly to Target over Over.
type VUStage struct {
	Target int
	Over   time.Duration
}

// Ramp is a closed workload whose number of VUs changes over time.
type Ramp struct {
	start  int
	stages []VUStage
	seg    execseg.Segment // see Segment
}

// Segment is execution segment s of the ramp: of the T VUs r wants at a
// moment (numbered from 0), those j with j mod N = K-1, that is
// s.Count(T). The N segments' counts sum to T at every moment.
func (r *Ramp) Segment(s execseg.Segment) *Ramp {
	c := *r
	c.seg = s
	return &c
}

// NewRamp makes a ramping closed workload.
func NewRamp(start int, stages []VUStage) (*Ramp, error) {
	if start < 0 {
		return nil, fmt.Errorf("VUs must not be negative, got %d", start)
	}
	if len(stages) == 0 {
		return nil, errors.New("no stages")
	}
	for i, s := range stages {
		if s.Over <= 0 {
			return nil, fmt.Errorf("stage %d: duration must be positive, got %v", i+1, s.Over)
		}
		if s.Target < 0 {
			return nil, fmt.Errorf("stage %d: VUs must not be negative, got %d", i+1, s.Target)
		}
	}
	return &Ramp{start: start, stages: stages}, nil
}

// Max is the largest number of VUs the ramp ever wants.
func (r *Ramp) Max() int {
	m := r.start
	for _, s := range r.stages {
		m = max(m, s.Target)
	}
	return r.seg.CountInt(m)
}

// Duration is the length of the ramp.
func (r *Ramp) Duration() time.Duration {
	var d time.Duration
	for _, s := range r.stages {
		d += s.Over
	}
	return d
}

// VUs is how many VUs should be active at time t (rounded down).
func (r *Ramp) VUs(t time.Duration) int { return r.seg.CountInt(r.whole(t)) }

// whole is the whole ramp's VUs at t.
func (r *Ramp) whole(t time.Duration) int {
	from := r.start
	var at time.Duration
	for _, s := range r.stages {
		if t < at+s.Over {
			f := float64(t-at) / float64(s.Over)
			return int(math.Floor(float64(from) + float64(s.Target-from)*f + 1e-9))
		}
		at += s.Over
		from = s.Target
	}
	return from
}

func perSecond(r Rate) float64 {
	if r.Per <= 0 {
		return 0
	}
	return r.PerSecond()
}
