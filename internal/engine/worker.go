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

	// groups are the workloads this worker runs its share of: one, or
	// one a scenario (Config.Scenarios).
	groups   []*group
	active   int // VUs in an iteration
	inflight int // exchanges in flight
	sample   metrics.Sample

	second    int // of the time series, being recorded now
	stopping  bool
	finished  bool
	end       time.Duration
	abandoned int64
	// peakActive is the most VUs in an iteration at once on this worker.
	peakActive int
	// startedAt is when, after time zero, the worker began its load.
	startedAt time.Duration
	// When the workload's end (or an early stop) came, and each step's
	// responses by then: the load's window, without the drain.
	stoppedAt       time.Duration
	windowResponses []int64

	timers workerTimers
}

// group is a worker's share of one workload: its VUs and its arrivals.
type group struct {
	w        *worker
	spec     *groupSpec
	wl       *Workload
	scenario *Scenario // every iteration's; nil: picked by weight

	vus    []*VU
	idle   []*VU // open: VUs free for the next arrival
	active int   // VUs in an iteration
	peak   int   // the most at once

	// open workloads
	nextArrival  int64 // the next arrival index this worker owns
	arrivalsDone bool
	queued       int64 // arrivals due, waiting for a VU (Queue)
	queueNext    int64 // the oldest queued arrival index

	// ramping workloads
	wanted int // VUs wanted on this worker now

	// When the group's own load ended (its end timer, or the run's stop),
	// and each step's responses by then.
	stopped         bool
	stoppedAt       time.Duration
	windowResponses []int64
	// The group's own counts of what the Recorder counts run-wide.
	dropped, late, unsent int64

	timers groupTimers
}

// workerTimers are the worker's own timers, each a small type so that
// setting one does not allocate.
type workerTimers struct {
	tick   tickTimer
	grace  graceTimer
	warmup warmupTimer
}

// groupTimers are a group's timers.
type groupTimers struct {
	end      endTimer
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
	}
	w.rec.CountChecks(r.cfg.Program.checkCounts())
	w.rec.Rotate(coll.NewInterval(), 0) // the collector's kind: per step or not
	w.timers = workerTimers{tickTimer{w}, graceTimer{w}, warmupTimer{w}}
	n := len(r.workers)
	for _, spec := range r.groups {
		g := &group{w: w, spec: spec, wl: spec.wl, scenario: spec.scenario}
		g.timers = groupTimers{endTimer{g}, arrivalTimer{g}, rampTimer{g}}
		total := spec.maxVUs
		if spec.pooled() {
			total = 0 // made on demand, from the shared pool
		}
		for l := id; l < total; l += n {
			g.vus = append(g.vus, newVU(w, g, spec.vuID(l)))
		}
		g.nextArrival = int64(id)
		w.groups = append(w.groups, g)
	}
	return w
}

// start runs at time zero (or as soon after as the loop gets going).
func (w *worker) start() {
	now := w.loop.Now()
	if now < 0 {
		// Wait for the epoch so that every worker starts together.
		w.loop.At(0, startTimer{w})
		return
	}
	w.startedAt = now
	w.loop.At(time.Second, &w.timers.tick)
	if w.run.cfg.Warmup > 0 {
		w.loop.At(w.run.cfg.Warmup, &w.timers.warmup)
	}
	for _, g := range w.groups {
		g.start(now)
	}
	w.checkDone()
}

func (g *group) start(now time.Duration) {
	w, wl := g.w, g.wl
	switch wl.Kind {
	case Closed:
		if wl.Duration > 0 {
			w.loop.At(wl.Duration, &g.timers.end)
		}
		for _, v := range g.vus {
			if !g.spec.claim() {
				break
			}
			v.begin(now)
		}
	case Ramp:
		w.loop.At(wl.Ramp.Duration(), &g.timers.end)
		g.timers.ramp.Fire(now)
	case Open:
		g.idle = append(g.idle, g.vus...)
		w.loop.At(wl.Arrivals.Duration(), &g.timers.end)
		g.timers.arrivals.Fire(now)
	}
}

type startTimer struct{ w *worker }

func (t startTimer) Fire(time.Duration) { t.w.start() }

// pick chooses the scenario of the next iteration: the group's own, or one
// by weight.
func (g *group) pick() *Scenario {
	if g.scenario != nil {
		return g.scenario
	}
	sc := g.w.run.cfg.Program.Scenarios
	if len(sc) == 1 {
		return sc[0]
	}
	total := 0
	for _, s := range sc {
		total += s.Weight
	}
	n := g.w.rng.IntN(total)
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
	g := v.g
	v.running = false
	w.active--
	g.active--
	now := w.loop.Now()
	again := false
	if !w.stopping && !g.stopped {
		wl := g.wl
		switch wl.Kind {
		case Closed:
			again = (wl.IterationsPerVU == 0 || v.iterations < wl.IterationsPerVU) && g.spec.claim()
		case Ramp:
			again = v.index < g.wanted
		}
	}
	switch {
	case again:
		v.begin(now)
	case g.wl.Kind == Open:
		// In a plan's open load each arrival is a new visitor, who comes
		// with new connections; quick mode's --rate reuses them (keep-alive).
		if !g.wl.Queue {
			v.closeConns()
		}
		g.idle = append(g.idle, v)
		if g.spec.pooled() {
			g.spec.releaseVU(v)
		}
		g.startQueued(now)
	default:
		// A VU that is done leaves, as a user would, and frees the
		// server's keep-alive slot (Puma holds a thread for it).
		v.closeConns()
	}
	w.checkDone()
}

// startQueued gives free VUs to arrivals that waited for one.
func (g *group) startQueued(now time.Duration) {
	for g.queued > 0 && len(g.idle) > 0 {
		due, _ := g.wl.Arrivals.Due(g.queueNext)
		i := g.queueNext
		g.queueNext += int64(len(g.w.run.workers))
		g.queued--
		g.beginArrival(now, due, i)
	}
}

func (g *group) popIdle() *VU {
	n := len(g.idle)
	if n == 0 {
		return nil
	}
	v := g.idle[n-1]
	g.idle = g.idle[:n-1]
	return v
}

// beginArrival begins the group's arrival i (of its segment's schedule).
func (g *group) beginArrival(now, due time.Duration, i int64) {
	v := g.popIdle()
	v.arrival = g.spec.seg.Global(i)
	g.w.rec.RecordLateness(now - due)
	if now-due >= metrics.LateAfter {
		g.late++
	}
	v.begin(due)
}

// checkDone finishes the worker when no more work can come.
func (w *worker) checkDone() {
	if w.finished || w.active > 0 {
		return
	}
	if !w.stopping {
		for _, g := range w.groups {
			if !g.done() {
				return
			}
		}
	}
	w.finish()
}

// done says whether no more work can come to a group that has no VU in an
// iteration.
func (g *group) done() bool {
	switch {
	case g.stopped:
		return true
	case g.wl.Kind == Open:
		return g.arrivalsDone && g.queued == 0
	case g.wl.Kind == Ramp:
		return false // the end timer stops it
	default: // Closed
		// Duration only: the end timer stops it.
		return g.wl.IterationsPerVU != 0 || g.wl.SharedIterations != 0
	}
}

// stop ends the group's load at its end: no new iterations start in it;
// those in progress go on. When every group of the worker has ended, the
// worker stops.
func (g *group) stop() {
	if g.stopped {
		return
	}
	g.end()
	for _, o := range g.w.groups {
		if !o.stopped {
			g.w.checkDone()
			return
		}
	}
	g.w.stop()
}

// end marks the group's load ended: its window, and what it had not sent.
func (g *group) end() {
	w := g.w
	now := w.loop.Now()
	g.stopped = true
	if !w.finished {
		g.stoppedAt, g.windowResponses = now, w.rec.StepResponses()
	}
	// The run's time is up: arrivals still waiting for a connection are
	// not sent late into the grace period, which is for requests in flight;
	// nor are those already due that a schedule far ahead of the machine
	// had no time to take up.
	unsent := g.queued + g.skipDue(now)
	g.unsent += unsent
	w.rec.Unsent(unsent)
	g.queued = 0
}

// stop ends the workload: no new iterations start; those in progress may
// finish within the grace period, as k6's gracefulStop lets them.
func (w *worker) stop() {
	if w.stopping {
		return
	}
	w.stopping = true
	for _, g := range w.groups {
		if !g.stopped {
			g.end()
		}
	}
	if !w.finished {
		w.stoppedAt, w.windowResponses = w.loop.Now(), w.rec.StepResponses()
		w.loop.At(w.loop.Now()+w.run.grace, &w.timers.grace)
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
	for _, g := range w.groups {
		w.rec.Unsent(g.queued)
		g.unsent += g.queued
	}
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

type endTimer struct{ g *group }

func (t *endTimer) Fire(time.Duration) { t.g.stop() }

type graceTimer struct{ w *worker }

func (t *graceTimer) Fire(time.Duration) { t.w.finish() }

type warmupTimer struct{ w *worker }

func (t *warmupTimer) Fire(time.Duration) {
	t.w.rec.ResetTotals()
	for _, g := range t.w.groups {
		g.dropped, g.late, g.unsent = 0, 0, 0
	}
}

// skipDue passes over this worker's arrivals due by now that were never
// taken up, and returns how many.
func (g *group) skipDue(now time.Duration) int64 {
	if g.wl.Kind != Open || g.arrivalsDone {
		return 0
	}
	step := int64(len(g.w.run.workers))
	due := func(n int64) bool { // are the first n owned arrivals due by now?
		d, ok := g.wl.Arrivals.Due(g.nextArrival + (n-1)*step)
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
	g.nextArrival += lo * step
	return lo
}

// arrivalsPerFire bounds the arrivals one firing of the arrival timer takes.
const arrivalsPerFire = 1024

// arrivalTimer starts the arrivals that are due and sleeps until the next.
type arrivalTimer struct{ g *group }

func (t *arrivalTimer) Fire(now time.Duration) {
	g := t.g
	w := g.w
	step := int64(len(w.run.workers))
	for n := 0; !w.stopping && !g.stopped; n++ {
		if n == arrivalsPerFire {
			// Far behind a schedule (a rate beyond what the machine can
			// do): let the loop see its sockets, the end of the run and a
			// stop before going on.
			w.loop.At(now+1, t)
			return
		}
		due, ok := g.wl.Arrivals.Due(g.nextArrival)
		if !ok {
			g.arrivalsDone = true
			w.checkDone()
			return
		}
		if due > now {
			w.loop.At(due, t)
			return
		}
		i := g.nextArrival
		g.nextArrival += step
		switch {
		case g.spec.pooled():
			slot, ok := g.spec.takeVU()
			if !ok {
				w.rec.Dropped()
				g.dropped++
				break
			}
			if len(g.idle) == 0 {
				v := newVU(w, g, slot.id)
				g.vus = append(g.vus, v)
				g.idle = append(g.idle, v)
			}
			v := g.idle[len(g.idle)-1] // the one beginArrival takes
			v.ID, v.iterations = slot.id, slot.iterations
			g.beginArrival(now, due, i)
		case g.queued == 0 && len(g.idle) > 0:
			g.beginArrival(now, due, i)
		case g.wl.Queue:
			w.rec.Waited()
			if g.queued == 0 {
				g.queueNext = g.nextArrival - step
			}
			g.queued++
		default:
			w.rec.Dropped()
			g.dropped++
		}
		now = w.loop.Now()
	}
}

// rampTimer follows the number of VUs a ramping workload wants.
type rampTimer struct{ g *group }

// rampEvery is how often a ramping workload adjusts its VUs.
const rampEvery = 100 * time.Millisecond

func (t *rampTimer) Fire(now time.Duration) {
	g := t.g
	w := g.w
	if w.stopping || g.stopped {
		return
	}
	n := len(w.run.workers)
	total := g.wl.Ramp.VUs(now)
	// VUs g ≡ id (mod n) with g < total live on this worker.
	g.wanted = 0
	if total > w.id {
		g.wanted = (total - w.id + n - 1) / n
	}
	for _, v := range g.vus[:min(g.wanted, len(g.vus))] {
		if !v.running {
			v.begin(now)
		}
	}
	// VUs above the wanted number stop at the end of their iteration.
	w.loop.At(now+rampEvery, t)
}
