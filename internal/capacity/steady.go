package capacity

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

// State is what a step's per-second series says so far.
type State int

const (
	Unsettled State = iota // not enough seconds yet, or neither steady nor clearly growing
	Steady                 // keeping up with the offered rate, no upward trend
	Growing                // falling behind: a queue grows, arrivals are dropped, throughput lags
	Failing                // most requests fail: errors exploded
)

func (s State) String() string {
	return [...]string{"unsettled", "steady", "growing", "failing"}[s]
}

// Steadiness tunes how a step's series is judged.
type Steadiness struct {
	// Skip is how many seconds are left out at the start (connections
	// opening, the server warming up); 1 by default.
	Skip int
	// Window is how many of the last whole seconds are judged; 5 by
	// default. A step is judged once it has Skip+Window seconds.
	Window int
	// Alpha is the level of the trend test; 0.05 by default.
	Alpha float64
	// PerJourney is the requests one journey makes (RequestsPerJourney);
	// 1 by default. The offered rate is in journeys a second and the
	// series counts requests, so the throughput is judged against rate ×
	// PerJourney, and dropped arrivals against the journeys the requests
	// stand for.
	PerJourney float64
	// MinResponses is the fewest responses a step must have, after Skip,
	// before it can be judged steady: enough for the highest percentile
	// its SLO judges (ResponsesFor). 0 asks for none beyond the window.
	MinResponses int64
}

// ResponsesFor is the fewest responses a step needs before its pct-th
// percentile (99 for p99) is judged: 1/(1-q) rounded up, so that at least
// one response lies beyond the percentile, and at least 20. p99 takes 100,
// p99.9 takes 1000, p95 and below take 20. A step at 16/s once had its
// p99 rest on 3 to 5 requests: it now runs until it has 100, or StepMax.
func ResponsesFor(pct float64) int64 {
	if !(pct > 0) || pct >= 100 {
		return MinStepResponses
	}
	return max(MinStepResponses, int64(math.Ceil(1/(1-pct/100)-1e-9)))
}

// MinStepResponses is the fewest responses a step is judged on, whatever
// its percentile.
const MinStepResponses = 20

// The rules of Judge, in the order they apply.
const (
	// FailingShare of requests in the window that fail: the step fails.
	FailingShare = 0.5
	// DroppedShare of arrivals in the window dropped for want of a free VU.
	DroppedShare = 0.01
	// BehindShare: throughput below this share of the offered rate.
	BehindShare = 0.90
	// SteadyShare: throughput at least this share of the offered rate.
	SteadyShare = 0.95
	// Growth is how much a trend must add over the window, as a share of
	// the window's median, to count: a significant trend of 2% is drift.
	Growth = 0.25
)

// WithDefaults fills the unset fields with their defaults.
func (o Steadiness) WithDefaults() Steadiness {
	if o.Skip <= 0 {
		o.Skip = 1
	}
	if o.Window < 3 {
		o.Window = 5
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if !(o.PerJourney >= 1) {
		o.PerJourney = 1
	}
	return o
}

// MinDuration is the shortest a step can be: Skip+Window seconds to be
// judged, and one more, as Stepper ends a step only on the same judgement
// twice in a row.
func (o Steadiness) MinDuration() time.Duration {
	o = o.WithDefaults()
	return time.Duration(o.Skip+o.Window+1) * time.Second
}

// Judgement is Judge's answer: a state and, but for Unsettled, why.
type Judgement struct {
	State  State
	Reason string
}

// Judge says whether a step offered rate arrivals a second is steady,
// growing or failing, from its per-second series: the last Window whole
// seconds after the first Skip. In order:
//   - failing: more than half the requests in the window failed;
//   - growing: over 1% of the arrivals were dropped (every VU busy), or the
//     throughput is under 90% of the offered rate, or the median latency or
//     the requests in flight trend upwards (Mann-Kendall, one-sided, at
//     Alpha) by at least a quarter of their median over the window (and by
//     1 ms, or by 5 requests, so that 4 in flight becoming 6 is noise): the
//     queue of an overloaded server grows every second, so its latency
//     rises before any SLO clause breaks;
//   - steady: throughput within 5% of the offered rate and neither trend;
//   - unsettled otherwise.
//
// Rate 0 is a closed load (a search by VUs): there is no offered rate, so
// neither dropped arrivals nor throughput behind it apply, and a step
// without either trend is steady.
func Judge(points []result.Point, rate float64, o Steadiness) Judgement {
	o = o.WithDefaults()
	var whole []result.Point
	for i, p := range points {
		if i >= o.Skip && p.Len >= 0.99 {
			whole = append(whole, p)
		}
	}
	if len(whole) < o.Window {
		return Judgement{State: Unsettled}
	}
	w := whole[len(whole)-o.Window:]
	if j, failing := failingIn(w, last(w)); failing {
		return j
	}
	// A journey of several requests, or with pauses, reaches its steady
	// rate of requests only once journeys have run whole: before the first
	// one completed, the later steps' requests have not begun, so the
	// window would read as behind, and the requests in flight as growing.
	// Judge from the second after the first completed journey on.
	warm := slices.IndexFunc(points, func(p result.Point) bool { return p.Iterations > 0 })
	if warm < 0 {
		return Judgement{State: Unsettled}
	}
	whole = whole[:0:0]
	for i, p := range points {
		if i >= max(o.Skip, warm+1) && p.Len >= 0.99 {
			whole = append(whole, p)
		}
	}
	if len(whole) < o.Window {
		return Judgement{State: Unsettled}
	}
	w = whole[len(whole)-o.Window:]
	var requests, responses, errs, dropped int64
	var seconds float64
	p50 := make([]float64, len(w))
	active := make([]float64, len(w))
	for i, p := range w {
		requests += p.Requests
		responses += p.Responses
		errs += p.Errors
		dropped += p.Dropped
		seconds += p.Len
		p50[i], active[i] = p.P50, float64(p.Active)
	}
	last := last(w)
	if arrivals := int64(math.Round(float64(requests)/o.PerJourney)) + dropped; dropped > 0 && float64(dropped) > DroppedShare*float64(arrivals) {
		return Judgement{Growing, fmt.Sprintf("%d of %d arrivals dropped %s: every VU was busy (the server fell behind, or max_vus is too low)", dropped, arrivals, last)}
	}
	throughput := float64(responses) / seconds
	offered := rate * o.PerJourney // in requests a second
	if throughput < BehindShare*offered {
		of := fmt.Sprintf("the offered %.4g/s", offered)
		if o.PerJourney != 1 {
			of = fmt.Sprintf("the offered %.4g requests/s (%.4g journeys/s × %.4g requests each)", offered, rate, o.PerJourney)
		}
		return Judgement{Growing, fmt.Sprintf("throughput %.4g/s %s, under %.0f%% of %s", throughput, last, 100*BehindShare, of)}
	}
	if g, ok := grows(p50, o.Alpha, 1); ok {
		return Judgement{Growing, fmt.Sprintf("median latency rose from %.4g to %.4g ms %s (Mann-Kendall p=%.3f): a queue is growing", p50[0], p50[len(p50)-1], last, g.PUp)}
	}
	if g, ok := grows(active, o.Alpha, 5); ok {
		return Judgement{Growing, fmt.Sprintf("requests in flight rose from %.0f to %.0f %s (Mann-Kendall p=%.3f): a queue is growing", active[0], active[len(active)-1], last, g.PUp)}
	}
	if throughput >= SteadyShare*offered {
		var got int64
		for i, p := range points {
			if i >= o.Skip {
				got += p.Responses
			}
		}
		if got < o.MinResponses {
			return Judgement{State: Unsettled} // too few for the percentile judged: run on
		}
		return Judgement{Steady, fmt.Sprintf("steady: %.4g/s, no upward trend %s", throughput, last)}
	}
	return Judgement{State: Unsettled}
}

// grows reports a significant upward trend that adds at least Growth of
// the series' median, and at least floor, over the series.
func grows(x []float64, alpha, floor float64) (stats.Trend, bool) {
	t := stats.MannKendall(x)
	if t.PUp >= alpha {
		return t, false
	}
	sorted := slices.Clone(x)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	added := t.Slope * float64(len(x)-1)
	return t, added >= Growth*median && added >= floor
}

func last(w []result.Point) string { return fmt.Sprintf("in the last %d s", len(w)) }

// failingIn says whether more than FailingShare of the window's requests
// failed. It is judged before journeys complete: a journey whose every
// request fails is aborted, and never completes.
func failingIn(w []result.Point, last string) (Judgement, bool) {
	var requests, errs int64
	for _, p := range w {
		requests += p.Requests
		errs += p.Errors
	}
	if requests > 0 && float64(errs) > FailingShare*float64(requests) {
		return Judgement{Failing, fmt.Sprintf("errors exploded: %d of %d requests failed %s", errs, requests, last)}, true
	}
	return Judgement{}, false
}
