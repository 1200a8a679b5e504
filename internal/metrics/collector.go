package metrics

import (
	"sync"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// Collector turns the workers' Intervals into the run's time series. Workers
// call Submit from their own goroutines; the merging happens on the
// collector's goroutine, and onPoint is called on a goroutine of its own,
// so that nothing slow stands between a worker and its event loop: Submit
// would block only if merging fell 64 seconds behind, and a listener that
// blocks (a progress line written to a terminal paused with Ctrl-S) misses
// points instead of stalling the load.
type Collector struct {
	workers int
	in      chan submission
	pool    chan *Interval
	done    chan struct{}

	mu      sync.Mutex
	pending map[int]*slot
	last    *slot // the newest point's figures, to fold a short tail into
	next    int   // the next second to emit
	series  series
	// newest is the newest point, kept out of series until the next one
	// comes so that a short tail can still be folded into it exactly.
	newest  *result.Point
	onPoint func(result.Point)
	// notify holds the newest point onPoint has not heard yet; notified is
	// closed when the goroutine calling onPoint has stopped.
	notify   chan result.Point
	notified chan struct{}
	// steps and onInterval are set by PerStep.
	steps      int
	onInterval func(*Interval)
	// keepHist is set by KeepHistograms.
	keepHist bool
}

type submission struct {
	second int
	length time.Duration
	iv     *Interval
}

type slot struct {
	iv      *Interval
	length  time.Duration
	reports int
}

// NewCollector makes a collector for the given number of workers. onPoint, if
// not nil, is called with each new point, one call at a time on a goroutine
// of its own; a point made while onPoint is still busy with an earlier one
// replaces any other waiting, so a slow onPoint hears the newest point, not
// every one. Close returns after onPoint has heard the last (the series'
// last point), so an onPoint that blocks holds Close up: it must return.
func NewCollector(workers int, onPoint func(result.Point)) *Collector {
	c := &Collector{
		workers: workers,
		in:      make(chan submission, 64*workers),
		pool:    make(chan *Interval, 4*workers),
		done:    make(chan struct{}),
		pending: map[int]*slot{},
		onPoint: onPoint,
	}
	if onPoint != nil {
		c.notify, c.notified = make(chan result.Point, 1), make(chan struct{})
		go c.tellListener()
	}
	go c.run()
	return c
}

// PerStep keeps the intervals' figures per step as well (of steps steps,
// Interval.Steps), and calls onInterval with every interval once all the
// workers' figures for it are merged, in order, the last (a run's short
// tail) included: the sum of what it hears is the run's series. It is
// called on the collector's goroutine, so it must return quickly, and it
// must not keep iv. PerStep must be called before the first NewInterval.
// What it costs a request: a worker puts each latency in its step's
// fixed bucket as well (a few comparisons); it counts the exchanges and
// checks of each step once an interval, at Recorder.Rotate, not per
// request.
func (c *Collector) PerStep(steps int, onInterval func(*Interval)) {
	c.steps, c.onInterval = steps, onInterval
}

// tellListener calls onPoint with each point handed over by tell.
func (c *Collector) tellListener() {
	defer close(c.notified)
	for p := range c.notify {
		c.onPoint(p)
	}
}

// tell hands p to onPoint without waiting for it: a point it has not taken
// yet is replaced. Only the collector's goroutine calls it.
func (c *Collector) tell(p result.Point) {
	for {
		select {
		case c.notify <- p:
			return
		default:
		}
		select {
		case <-c.notify: // stale: the listener has not taken it
		default:
		}
	}
}

// KeepHistograms puts each point's latency histogram in the point
// (result.Point.Hist), for an execution segment's result, whose seconds
// `loadlab merge` merges exactly. It must be called before the first
// Submit. Encoding a second's histogram costs about 10 µs, once a second.
func (c *Collector) KeepHistograms() { c.keepHist = true }

// NewInterval returns an empty interval for a worker's next second.
func (c *Collector) NewInterval() *Interval {
	select {
	case iv := <-c.pool:
		return iv
	default:
		return newInterval(c.steps)
	}
}

// Submit hands over a worker's figures for the given second, whose length is
// normally one second (the last may be shorter). The collector owns iv after.
func (c *Collector) Submit(second int, length time.Duration, iv *Interval) {
	c.in <- submission{second, length, iv}
}

// Close waits until every submitted interval is in the series and onPoint
// has returned from the last point, however long that takes: it does not
// abandon a blocked onPoint. Every worker must have submitted its last
// interval.
func (c *Collector) Close() {
	close(c.in)
	<-c.done
	if c.notify != nil {
		close(c.notify)
		<-c.notified
	}
}

// Series returns the time series so far: a point a second, or a point for
// several seconds once a long run has reached MaxPoints.
func (c *Collector) Series() []result.Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.series
	s.points = append(make([]result.Point, 0, len(s.points)+1), s.points...)
	if c.newest != nil {
		s.add(*c.newest)
	}
	return s.points
}

// Latest returns the newest point.
func (c *Collector) Latest() (result.Point, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.newest == nil {
		return result.Point{}, false
	}
	return *c.newest, true
}

func (c *Collector) run() {
	defer close(c.done)
	for s := range c.in {
		sl := c.pending[s.second]
		if sl == nil {
			sl = &slot{iv: c.NewInterval()}
			c.pending[s.second] = sl
		}
		sl.iv.add(s.iv)
		sl.length = max(sl.length, s.length)
		sl.reports++
		c.recycle(s.iv)
		c.emit(false)
	}
	c.emit(true)
}

// emit appends the seconds that every worker has reported, in order; at the
// end, whatever is left.
func (c *Collector) emit(final bool) {
	for {
		sl := c.pending[c.next]
		if sl == nil {
			if !final || len(c.pending) == 0 {
				return
			}
			c.next++ // a second nobody reported: a gap, skip it
			continue
		}
		if sl.reports < c.workers && !final {
			return
		}
		delete(c.pending, c.next)
		if c.onInterval != nil {
			c.onInterval(sl.iv)
		}
		// The last interval of a run is usually a sliver (the requests in
		// flight when it ended); a rate over a few milliseconds is noise, so
		// fold it into the second before.
		if final && len(c.pending) == 0 && c.last != nil && sl.length < minTail && sl.length > 0 {
			c.last.iv.add(sl.iv)
			c.last.length += sl.length
			p := point(c.next-1, c.last, c.keepHist)
			c.mu.Lock()
			c.newest = &p
			c.mu.Unlock()
			if c.onPoint != nil {
				c.tell(p) // the second before, now with the tail: the last point
			}
			c.next++
			continue
		}
		p := point(c.next, sl, c.keepHist)
		if c.last != nil {
			c.recycle(c.last.iv)
		}
		c.last = sl
		c.mu.Lock()
		if c.newest != nil {
			c.series.add(*c.newest)
		}
		c.newest = &p
		c.mu.Unlock()
		if c.onPoint != nil {
			c.tell(p)
		}
		c.next++
	}
}

// recycle gives an interval the collector is done with back to the pool.
func (c *Collector) recycle(iv *Interval) {
	iv.reset()
	select {
	case c.pool <- iv:
	default:
	}
}

func point(second int, sl *slot, keepHist bool) result.Point {
	iv := sl.iv
	length := sl.length.Seconds()
	if length <= 0 {
		length = 1
	}
	h := iv.Latency
	p := result.Point{
		T:          float64(second) + length,
		Len:        length,
		Requests:   iv.Requests,
		Responses:  iv.Responses,
		Errors:     iv.Errors,
		RPS:        float64(iv.Responses) / length,
		Late:       iv.Late,
		Dropped:    iv.Dropped,
		Iterations: iv.Iterations,
		Active:     iv.Active,
		Bytes:      iv.Bytes,
	}
	if h.TotalCount() > 0 {
		p.P50 = ms(h.ValueAtQuantile(50))
		p.P90 = ms(h.ValueAtQuantile(90))
		p.P95 = ms(h.ValueAtQuantile(95))
		p.P99 = ms(h.ValueAtQuantile(99))
		p.Max = ms(h.Max())
		if keepHist {
			// An encoding error leaves Hist empty: merge then bounds that
			// second's percentiles, as for a part without histograms.
			p.Hist, _ = Encode(h)
		}
	}
	return p
}

// minTail is the shortest last interval kept as a point of its own.
const minTail = 250 * time.Millisecond

// ms converts recorded microseconds to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }
