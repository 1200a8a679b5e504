package engine

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
)

// worker owns one event loop and everything that runs on it: a share of the
// VUs, its Recorder, and its share of the arrivals of an open workload.
// Every method runs on the loop's goroutine.
type worker struct {
	run  *run
	id   int
	loop *httpx.Loop
	rec  *metrics.Recorder
	coll *metrics.Collector
	rng  *rand.Rand
	wl   *Workload

	vus      []*VU
	idle     []*VU // open: VUs free for the next arrival
	active   int   // VUs in an iteration
	inflight int   // exchanges in flight
	sample   metrics.Sample

	second    int // of the time series, being recorded now
	stopping  bool
	finished  bool
	end       time.Duration
	abandoned int64
	// peakActive is the most VUs in an iteration at once on this worker.
	peakActive int
	// When the workload's end (or an early stop) came, and each step's
	// responses by then: the load's window, without the drain.
	stoppedAt       time.Duration
	windowResponses []int64

	// open workloads
	nextArrival  int64 // the next arrival index this worker owns
	arrivalsDone bool
	queued       int64 // arrivals due, waiting for a VU (Queue)
	queueNext    int64 // the oldest queued arrival index

	// ramping workloads
	wanted int // VUs wanted on this worker now
	timers workerTimers
}

// workerTimers are the worker's own timers, each a small type so that
// setting one does not allocate.
type workerTimers struct {
	tick     tickTimer
	end      endTimer
	grace    graceTimer
	warmup   warmupTimer
	arrivals arrivalTimer
	ramp     rampTimer
}

func newWorker(r *run, id int, loop *httpx.Loop, coll *metrics.Collector) *worker {
	w := &worker{
		run:  r,
		id:   id,
		loop: loop,
		rec:  metrics.NewRecorder(len(r.cfg.Program.Steps)),
		coll: coll,
		rng:  rand.New(rand.NewPCG(r.cfg.Seed, uint64(id))),
		wl:   &r.cfg.Workload,
	}
	w.rec.Rotate(coll.NewInterval(), 0) // the collector's kind: per step or not
	w.timers = workerTimers{tickTimer{w}, endTimer{w}, graceTimer{w}, warmupTimer{w}, arrivalTimer{w}, rampTimer{w}}
	n := len(r.workers)
	total := r.cfg.maxVUs()
	if r.pooled() {
		total = 0 // made on demand, from the shared pool
	}
	for g := id; g < total; g += n {
		w.vus = append(w.vus, newVU(w, g))
	}
	w.nextArrival = int64(id)
	return w
}

// start runs at time zero (or as soon after as the loop gets going).
func (w *worker) start() {
	wl := w.wl
	now := w.loop.Now()
	if now < 0 {
		// Wait for the epoch so that every worker starts together.
		w.loop.At(0, startTimer{w})
		return
	}
	w.loop.At(time.Second, &w.timers.tick)
	if w.run.cfg.Warmup > 0 {
		w.loop.At(w.run.cfg.Warmup, &w.timers.warmup)
	}
	switch wl.Kind {
	case Closed:
		if wl.Duration > 0 {
			w.loop.At(wl.Duration, &w.timers.end)
		}
		for _, v := range w.vus {
			if !w.run.claim() {
				break
			}
			v.begin(now)
		}
	case Ramp:
		w.loop.At(wl.Ramp.Duration(), &w.timers.end)
		w.timers.ramp.Fire(now)
	case Open:
		w.idle = append(w.idle, w.vus...)
		w.loop.At(wl.Arrivals.Duration(), &w.timers.end)
		w.timers.arrivals.Fire(now)
	}
	w.checkDone()
}

type startTimer struct{ w *worker }

func (t startTimer) Fire(time.Duration) { t.w.start() }

// pick chooses the scenario of the next iteration by weight.
func (w *worker) pick() *Scenario {
	sc := w.run.cfg.Program.Scenarios
	if len(sc) == 1 {
		return sc[0]
	}
	total := 0
	for _, s := range sc {
		total += s.Weight
	}
	n := w.rng.IntN(total)
	for _, s := range sc {
		if n < s.Weight {
			return s
		}
		n -= s.Weight
	}
	return sc[len(sc)-1]
}

// iterationDone decides what a VU does after an iteration ends.
func (w *worker) iterationDone(v *VU, completed bool) {
	if completed {
		w.rec.IterationOf(slices.Index(w.run.cfg.Program.Scenarios, v.scenario))
	}
	v.running = false
	w.active--
	now := w.loop.Now()
	again := false
	if !w.stopping {
		wl := w.wl
		switch wl.Kind {
		case Closed:
			again = (wl.IterationsPerVU == 0 || v.iterations < wl.IterationsPerVU) && w.run.claim()
		case Ramp:
			again = v.index < w.wanted
		}
	}
	switch {
	case again:
		v.begin(now)
	case w.wl.Kind == Open:
		// In a plan's open load each arrival is a new visitor, who comes
		// with new connections; quick mode's --rate reuses them (keep-alive).
		if !w.wl.Queue {
			v.closeConns()
		}
		w.idle = append(w.idle, v)
		if w.run.pooled() {
			w.run.releaseVU(v)
		}
		w.startQueued(now)
	default:
		// A VU that is done leaves, as a user would, and frees the
		// server's keep-alive slot (Puma holds a thread for it).
		v.closeConns()
	}
	w.checkDone()
}

// startQueued gives free VUs to arrivals that waited for one.
func (w *worker) startQueued(now time.Duration) {
	for w.queued > 0 && len(w.idle) > 0 {
		due, _ := w.wl.Arrivals.Due(w.queueNext)
		w.queueNext += int64(len(w.run.workers))
		w.queued--
		w.beginArrival(now, due)
	}
}

func (w *worker) popIdle() *VU {
	n := len(w.idle)
	if n == 0 {
		return nil
	}
	v := w.idle[n-1]
	w.idle = w.idle[:n-1]
	return v
}

func (w *worker) beginArrival(now, due time.Duration) {
	v := w.popIdle()
	w.rec.RecordLateness(now - due)
	v.begin(due)
}

// checkDone finishes the worker when no more work can come.
func (w *worker) checkDone() {
	if w.finished || w.active > 0 {
		return
	}
	switch {
	case w.stopping:
	case w.wl.Kind == Open:
		if !w.arrivalsDone || w.queued > 0 {
			return
		}
	case w.wl.Kind == Ramp:
		return // the end timer stops it
	case w.wl.Kind == Closed:
		if w.wl.IterationsPerVU == 0 && w.wl.SharedIterations == 0 {
			return // duration only: the end timer stops it
		}
	}
	w.finish()
}

// stop ends the workload: no new iterations start; those in progress may
// finish within the grace period, as k6's gracefulStop lets them.
func (w *worker) stop() {
	if w.stopping {
		return
	}
	w.stopping = true
	if !w.finished {
		w.stoppedAt, w.windowResponses = w.loop.Now(), w.rec.StepResponses()
	}
	// The run's time is up: arrivals still waiting for a connection are
	// not sent late into the grace period, which is for requests in flight;
	// nor are those already due that a schedule far ahead of the machine
	// had no time to take up.
	w.rec.Unsent(w.queued + w.skipDue(w.loop.Now()))
	w.queued = 0
	if !w.finished {
		w.loop.At(w.loop.Now()+w.wl.Grace, &w.timers.grace)
		w.checkDone()
	}
}

// finish submits the last interval and stops the loop.
func (w *worker) finish() {
	if w.finished {
		return
	}
	w.finished = true
	w.end = w.loop.Now()
	w.abandoned = int64(w.inflight)
	w.rec.Unsent(w.queued)
	length := w.end - time.Duration(w.second)*time.Second
	w.coll.Submit(w.second, max(length, 0), w.rec.Rotate(w.coll.NewInterval(), int64(w.active)))
	w.loop.Stop()
}

// interrupt stops at once: Ctrl-C.
func (w *worker) interrupt() {
	w.stopping = true
	w.finish()
}

type tickTimer struct{ w *worker }

func (t *tickTimer) Fire(now time.Duration) {
	w := t.w
	if w.finished {
		return
	}
	w.coll.Submit(w.second, time.Second, w.rec.Rotate(w.coll.NewInterval(), int64(w.active)))
	w.second++
	w.loop.At(time.Duration(w.second+1)*time.Second, t)
}

type endTimer struct{ w *worker }

func (t *endTimer) Fire(time.Duration) { t.w.stop() }

type graceTimer struct{ w *worker }

func (t *graceTimer) Fire(time.Duration) { t.w.finish() }

type warmupTimer struct{ w *worker }

func (t *warmupTimer) Fire(time.Duration) { t.w.rec.ResetTotals() }

// skipDue passes over this worker's arrivals due by now that were never
// taken up, and returns how many.
func (w *worker) skipDue(now time.Duration) int64 {
	if w.wl.Kind != Open || w.arrivalsDone {
		return 0
	}
	step := int64(len(w.run.workers))
	due := func(n int64) bool { // are the first n owned arrivals due by now?
		d, ok := w.wl.Arrivals.Due(w.nextArrival + (n-1)*step)
		return ok && d <= now
	}
	// The largest n with due(n), by doubling then bisection.
	lo, hi := int64(0), int64(1)
	for due(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if due(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	w.nextArrival += lo * step
	return lo
}

// arrivalsPerFire bounds the arrivals one firing of the arrival timer takes.
const arrivalsPerFire = 1024

// arrivalTimer starts the arrivals that are due and sleeps until the next.
type arrivalTimer struct{ w *worker }

func (t *arrivalTimer) Fire(now time.Duration) {
	w := t.w
	step := int64(len(w.run.workers))
	for n := 0; !w.stopping; n++ {
		if n == arrivalsPerFire {
			// Far behind a schedule (a rate beyond what the machine can
			// do): let the loop see its sockets, the end of the run and a
			// stop before going on.
			w.loop.At(now+1, t)
			return
		}
		due, ok := w.wl.Arrivals.Due(w.nextArrival)
		if !ok {
			w.arrivalsDone = true
			w.checkDone()
			return
		}
		if due > now {
			w.loop.At(due, t)
			return
		}
		w.nextArrival += step
		switch {
		case w.run.pooled():
			slot, ok := w.run.takeVU()
			if !ok {
				w.rec.Dropped()
				break
			}
			if len(w.idle) == 0 {
				v := newVU(w, slot.id)
				w.vus = append(w.vus, v)
				w.idle = append(w.idle, v)
			}
			v := w.idle[len(w.idle)-1] // the one beginArrival takes
			v.ID, v.iterations = slot.id, slot.iterations
			w.beginArrival(now, due)
		case w.queued == 0 && len(w.idle) > 0:
			w.beginArrival(now, due)
		case w.wl.Queue:
			w.rec.Waited()
			if w.queued == 0 {
				w.queueNext = w.nextArrival - step
			}
			w.queued++
		default:
			w.rec.Dropped()
		}
		now = w.loop.Now()
	}
}

// rampTimer follows the number of VUs a ramping workload wants.
type rampTimer struct{ w *worker }

// rampEvery is how often a ramping workload adjusts its VUs.
const rampEvery = 100 * time.Millisecond

func (t *rampTimer) Fire(now time.Duration) {
	w := t.w
	if w.stopping {
		return
	}
	n := len(w.run.workers)
	total := w.wl.Ramp.VUs(now)
	// VUs g ≡ id (mod n) with g < total live on this worker.
	w.wanted = 0
	if total > w.id {
		w.wanted = (total - w.id + n - 1) / n
	}
	for _, v := range w.vus[:min(w.wanted, len(w.vus))] {
		if !v.running {
			v.begin(now)
		}
	}
	// VUs above the wanted number stop at the end of their iteration.
	w.loop.At(now+rampEvery, t)
}
