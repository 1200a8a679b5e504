// Package engine runs a Program of VUs against its targets under a workload:
// closed (a fixed or ramping number of VUs, each starting its next iteration
// when the last one ends) or open (iterations start on a schedule whatever the
// server does).
//
// The engine runs one worker per CPU it may use. A worker is an httpx.Loop on
// its own OS thread that owns a share of the VUs and a metrics.Recorder, so
// nothing on the request path takes a lock. Latency is measured from the
// moment a request was due: in an open workload that is its scheduled time,
// even if every connection was busy then, which corrects coordinated omission
// by construction; in a closed workload it is when the VU was ready to send.
package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/schedule"
	execseg "github.com/loadlab/loadlab/internal/segment"
)

// Kind is the shape of a workload.
type Kind int

const (
	Closed Kind = iota // VUs loop: a fixed number, for iterations or a duration
	Ramp               // VUs loop; their number follows stages
	Open               // iterations start on a schedule
)

// Workload says how much load to send and when.
type Workload struct {
	Kind Kind

	// Closed: VUs, each running IterationsPerVU iterations (0: no limit), or
	// all together SharedIterations (0: no limit), until Duration (0: no limit).
	VUs              int
	IterationsPerVU  int64
	SharedIterations int64
	Duration         time.Duration

	// Ramp: the number of VUs over time.
	Ramp *schedule.Ramp

	// Open: when iterations are due, and at most MaxVUs at once. An arrival
	// that finds every VU busy is dropped (counted), unless Queue is set:
	// then it waits for a VU and goes out late (quick mode's --rate with -c).
	Arrivals *schedule.Open
	MaxVUs   int
	Queue    bool

	// Grace is how long requests in flight at the end may take to finish
	// before they are abandoned. Zero means the request timeout.
	Grace time.Duration
}

// Config is everything a run needs.
type Config struct {
	Program  *Program
	Workload Workload
	// Scenarios, if set, gives each scenario of the program a workload of
	// its own, all running at once: Program.Scenarios[i] runs under
	// Scenarios[i], every iteration of its VUs that scenario (weights do
	// not apply), and Workload is not used. A scenario's load that ends
	// first lets its journeys in progress finish while the others go on;
	// the grace period starts when the last one ends.
	Scenarios []Workload
	HTTP      httpx.Options
	// Workers is the number of event loops; zero means GOMAXPROCS, and never
	// more than there are VUs.
	Workers int
	// Warmup is left out of the totals (not of the time series).
	Warmup time.Duration
	// OnPoint, if set, receives the points of the time series as they are
	// made, on a goroutine of its own; one that is slow to return misses
	// points rather than stall the load (see metrics.NewCollector).
	OnPoint func(result.Point)
	// OnInterval, if set, keeps the series per step as well and hears each
	// interval of it, on the collector's goroutine: it must return quickly
	// and not keep the interval (see metrics.Collector.PerStep).
	OnInterval func(*metrics.Interval)
	// Seed makes scenario choice and think times reproducible; zero picks one.
	Seed uint64
	// Segment, when not the whole (the zero value), runs only that
	// execution segment of the workloads (see package segment): of their
	// VU numbers, shared iterations and arrivals, those j with
	// j mod N = K-1. VUs keep their numbers in the whole plan, so {{ vu }}
	// is unique across the N segments. SegmentFits says whether a
	// workload can be split so.
	Segment execseg.Segment
	// StartAt, when set, is the wall-clock instant the schedule starts
	// (time zero); zero starts it now. Outcome.StartLateness says how late
	// the loops got going.
	StartAt time.Time
}

// Outcome is what a run measured.
type Outcome struct {
	Totals      *metrics.Recorder
	Series      []result.Point
	Started     time.Time     // when the load began
	Elapsed     time.Duration // the measured window: after any warmup, until the last response
	Interrupted bool          // stopped by ctx before its end
	Workers     int
	// InFlight is how many exchanges were abandoned at the end: still in
	// flight when the grace period ran out or the run was interrupted.
	InFlight int64
	// Stopped says why the run ended before its workload did (a unique data
	// source ran out); nil otherwise.
	Stopped error

	// Window is the load's own window, after any warmup: until the
	// workload's end (its duration, its stages, its arrivals) or an early
	// stop, without the grace period that journeys in progress then took
	// to finish (the drain). A load of fixed work (iterations) has no end
	// but its last response: its window is Elapsed.
	Window time.Duration
	// WindowResponses are each step's responses (of any status) that
	// finished within Window.
	WindowResponses []int64

	// Scenarios, with Config.Scenarios, are each scenario's own figures
	// that its steps' totals do not hold, by scenario index; nil otherwise.
	Scenarios []ScenarioOutcome
	// StepSeconds, with Config.Scenarios, are each second's responses (of
	// any status) by step, from the run's first second: what a duet's
	// per-second ratio B/A is made of. nil otherwise.
	StepSeconds [][]int64

	// VUs is the most VUs (connections in quick mode) the workload may run
	// at once; PeakVUs the most that were in an iteration at once: exact
	// for an open load's shared pool, otherwise the sum of each worker's
	// peak, exact with one worker and never below the true peak (so "at
	// most PeakVUs were busy" holds), at no cost shared between workers.
	VUs, PeakVUs int

	// StartLateness is how long after time zero (StartAt, or the epoch the
	// run picked) the last worker began its load.
	StartLateness time.Duration

	warmup time.Duration
}

// ScenarioOutcome is what one scenario's own workload did.
type ScenarioOutcome struct {
	// Window is its load's window, after any warmup: until its own end
	// (its duration, stages or arrivals) or the run's stop;
	// WindowResponses each step's responses within it.
	Window          time.Duration
	WindowResponses []int64
	// Dropped, Late and Unsent count its arrivals as Recorder.Counters
	// does the run's.
	Dropped, Late, Unsent int64
	// VUs is the most VUs its workload may run at once; PeakVUs the most
	// in an iteration at once (the sum of each worker's peak, as
	// Outcome.PeakVUs).
	VUs, PeakVUs int
}

// Run runs the program under the workload until it ends or ctx is done.
// Interrupted by ctx, it still returns everything measured so far.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	// The VU numbers of each workload start after the whole plan's of the
	// workloads before it, then each is cut to its segment.
	firsts, wholes := cfg.firstVUs()
	cfg.Scenarios = slices.Clone(cfg.Scenarios) // the caller's stay as they are
	cfg.Workload = cfg.Workload.segment(cfg.Segment)
	for i := range cfg.Scenarios {
		cfg.Scenarios[i] = cfg.Scenarios[i].segment(cfg.Segment)
	}
	w := cfg.Workload
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, cfg.maxVUs()))
	// Keep one P more than there are loops. A loop that sleeps in epoll is
	// "in a system call" to the Go runtime, whose monitor takes its P away
	// after 20 µs unless another P is idle, then has to hand it back when the
	// loop wakes: thousands of thread wake-ups a second, measured at about 18%
	// more CPU per request. The spare P also runs everything that is not a
	// loop (the collector, the progress line, the garbage collector).
	if procs := runtime.GOMAXPROCS(0); procs <= workers {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers + 1))
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	defaultGrace := cfg.HTTP.Timeout
	if defaultGrace <= 0 {
		defaultGrace = httpx.DefaultTimeout
	}
	if w.Grace <= 0 {
		w.Grace = defaultGrace
		cfg.Workload.Grace = w.Grace
	}
	for i := range cfg.Scenarios {
		if cfg.Scenarios[i].Grace <= 0 {
			cfg.Scenarios[i].Grace = defaultGrace
		}
	}

	// The epoch is a little ahead so that every loop is running at time zero.
	epoch := time.Now().Add(5 * time.Millisecond)
	if !cfg.StartAt.IsZero() {
		epoch = cfg.StartAt
	}
	coll := metrics.NewCollector(workers, cfg.OnPoint)
	if !cfg.Segment.Whole() {
		coll.KeepHistograms() // for loadlab merge's exact per-second percentiles
	}
	// Scenarios with loads of their own (a duet's two sides) keep each
	// second's responses by step: an interval's per-step counts, summed
	// once a second on the collector's goroutine.
	var stepSeconds [][]int64
	if onInterval := cfg.OnInterval; cfg.Scenarios != nil || onInterval != nil {
		perSecond := cfg.Scenarios != nil
		coll.PerStep(len(cfg.Program.Steps), func(iv *metrics.Interval) {
			if perSecond {
				sec := make([]int64, len(iv.Steps))
				for i := range iv.Steps {
					sec[i] = iv.Steps[i].Responses()
				}
				stepSeconds = append(stepSeconds, sec)
			}
			if onInterval != nil {
				onInterval(iv)
			}
		})
	}
	run := &run{cfg: &cfg, workers: make([]*worker, workers), epoch: epoch}
	run.groups = cfg.groups(firsts)
	for i, g := range run.groups {
		g.index, g.wholeVUs = i, wholes[i]
	}
	for _, g := range run.groups {
		run.grace = max(run.grace, g.wl.Grace)
	}
	for i := range workers {
		loop, err := httpx.NewLoop(epoch, cfg.HTTP)
		if err != nil {
			for _, wk := range run.workers[:i] {
				wk.loop.Stop()
			}
			coll.Close() // its goroutines, which nothing will feed
			return nil, err
		}
		run.workers[i] = newWorker(run, i, loop, coll)
	}

	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i, wk := range run.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.loop.Post(wk.start)
			errs[i] = wk.loop.Run()
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	interrupted := false
	select {
	case <-finished:
	case <-ctx.Done():
		interrupted = true
		for _, wk := range run.workers {
			wk.loop.Post(wk.interrupt)
		}
		<-finished
	}
	coll.Close()

	out := &Outcome{
		Totals:      metrics.NewRecorder(len(cfg.Program.Steps)),
		Series:      coll.Series(),
		Started:     epoch,
		Interrupted: interrupted,
		Workers:     workers,
		StepSeconds: stepSeconds,
		warmup:      cfg.Warmup,
	}
	out.Totals.CountChecks(cfg.Program.checkCounts())
	var end, windowEnd time.Duration
	out.WindowResponses = make([]int64, len(cfg.Program.Steps))
	if cfg.Scenarios != nil {
		out.Scenarios = make([]ScenarioOutcome, len(run.groups))
		for i, g := range run.groups {
			out.Scenarios[i].VUs = g.maxVUs
			out.Scenarios[i].WindowResponses = make([]int64, len(cfg.Program.Steps))
		}
	}
	for _, wk := range run.workers {
		for i, g := range wk.groups {
			if out.Scenarios == nil {
				break
			}
			so := &out.Scenarios[i]
			so.Dropped += g.dropped
			so.Late += g.late
			so.Unsent += g.unsent
			so.PeakVUs += g.peak
			counts, stoppedAt := g.windowResponses, g.stoppedAt
			if counts == nil {
				counts, stoppedAt = wk.rec.StepResponses(), wk.end
			}
			so.Window = max(so.Window, min(stoppedAt, wk.end)-cfg.Warmup)
			for j, n := range counts {
				so.WindowResponses[j] += n
			}
		}
		out.PeakVUs += wk.peakActive
		out.StartLateness = max(out.StartLateness, wk.startedAt)
		out.Totals.Merge(wk.rec)
		end = max(end, wk.end)
		out.InFlight += wk.abandoned
		// A worker that was stopped counts what had finished then; one that
		// finished its work by itself, everything.
		counts, stoppedAt := wk.windowResponses, wk.stoppedAt
		if counts == nil {
			counts, stoppedAt = wk.rec.StepResponses(), wk.end
		}
		windowEnd = max(windowEnd, min(stoppedAt, wk.end))
		for i, n := range counts {
			out.WindowResponses[i] += n
		}
	}
	out.Elapsed = max(end-cfg.Warmup, 0)
	// Ctrl-C before the workload's end ends the window with the run (no
	// drain); during the drain, the window stays what it was.
	out.Window = max(windowEnd-cfg.Warmup, 0)
	out.Stopped = run.stopReason
	out.VUs = cfg.maxVUs()
	if len(run.groups) == 1 && run.groups[0].pooled() {
		out.PeakVUs = run.groups[0].peakPooled
	}
	for i := range out.Scenarios {
		if g := run.groups[i]; g.pooled() {
			out.Scenarios[i].PeakVUs = g.peakPooled
		}
		out.Scenarios[i].Window = max(out.Scenarios[i].Window, 0)
	}
	return out, errors.Join(errs...)
}

func (cfg *Config) check() error {
	if cfg.Program == nil || len(cfg.Program.Scenarios) == 0 {
		return errors.New("engine: no scenarios")
	}
	if err := cfg.Segment.Check(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if cfg.Scenarios == nil {
		if err := cfg.Workload.check(); err != nil {
			return err
		}
		return cfg.Workload.SegmentFits(cfg.Segment)
	}
	if len(cfg.Scenarios) != len(cfg.Program.Scenarios) {
		return fmt.Errorf("engine: %d workloads for %d scenarios", len(cfg.Scenarios), len(cfg.Program.Scenarios))
	}
	for i := range cfg.Scenarios {
		if err := cfg.Scenarios[i].check(); err != nil {
			return fmt.Errorf("scenario %s: %w", cfg.Program.Scenarios[i].Name, err)
		}
		if err := cfg.Scenarios[i].SegmentFits(cfg.Segment); err != nil {
			return fmt.Errorf("scenario %s: %w", cfg.Program.Scenarios[i].Name, err)
		}
	}
	return nil
}

func (w *Workload) check() error {
	switch w.Kind {
	case Closed:
		if w.VUs <= 0 {
			return fmt.Errorf("engine: %d VUs", w.VUs)
		}
		if w.IterationsPerVU <= 0 && w.SharedIterations <= 0 && w.Duration <= 0 {
			return errors.New("engine: a closed workload needs iterations or a duration")
		}
	case Ramp:
		if w.Ramp == nil {
			return errors.New("engine: ramp without stages")
		}
	case Open:
		if w.Arrivals == nil || w.MaxVUs <= 0 {
			return errors.New("engine: open workload without arrivals or VUs")
		}
	}
	return nil
}

// maxVUs is the most VUs of every workload together.
func (cfg *Config) maxVUs() int {
	if cfg.Scenarios == nil {
		return cfg.Workload.maxVUs()
	}
	n := 0
	for i := range cfg.Scenarios {
		n += cfg.Scenarios[i].maxVUs()
	}
	return n
}

func (w *Workload) maxVUs() int {
	switch w.Kind {
	case Ramp:
		return max(w.Ramp.Max(), 1)
	case Open:
		return w.MaxVUs
	}
	return w.VUs
}

// firstVUs are the first VU number of each workload in the whole plan
// (the first's 0, the next's after the first's most VUs, and so on), and
// each one's most VUs in the whole plan.
func (cfg *Config) firstVUs() (firsts, wholes []int) {
	if cfg.Scenarios == nil {
		return []int{0}, []int{cfg.Workload.maxVUs()}
	}
	first := 0
	for i := range cfg.Scenarios {
		n := cfg.Scenarios[i].maxVUs()
		firsts, wholes = append(firsts, first), append(wholes, n)
		first += n
	}
	return firsts, wholes
}

// groups are the run's workloads: the one, or one a scenario, each with
// the VU IDs that are its own (firsts, from firstVUs).
func (cfg *Config) groups(firsts []int) []*groupSpec {
	if cfg.Scenarios == nil {
		return []*groupSpec{newGroupSpec(&cfg.Workload, nil, firsts[0], cfg.Segment)}
	}
	var out []*groupSpec
	for i := range cfg.Scenarios {
		out = append(out, newGroupSpec(&cfg.Scenarios[i], cfg.Program.Scenarios[i], firsts[i], cfg.Segment))
	}
	return out
}

// segment is the workload's execution segment s (see Config.Segment).
func (w Workload) segment(s execseg.Segment) Workload {
	if s.Whole() {
		return w
	}
	switch w.Kind {
	case Closed:
		w.VUs = s.CountInt(w.VUs)
		if w.SharedIterations > 0 {
			w.SharedIterations = s.Count(w.SharedIterations)
			if w.SharedIterations == 0 {
				w.VUs = 0 // none of the iterations is this segment's
			}
		}
	case Ramp:
		w.Ramp = w.Ramp.Segment(s)
	case Open:
		w.Arrivals = w.Arrivals.Segment(s)
		w.MaxVUs = s.CountInt(w.MaxVUs)
	}
	return w
}

// SegmentFits says whether the workload splits into segments of s.N
// that each have a VU for their work: shared iterations and arrivals are
// dealt out to every segment, so the load needs at least N VUs (max_vus).
// Per-VU iterations, a duration or a ramp split whatever their VUs (a
// segment may then have none, and nothing to do).
func (w *Workload) SegmentFits(s execseg.Segment) error {
	if s.Whole() {
		return nil
	}
	switch {
	case w.Kind == Closed && w.SharedIterations > 0 && w.VUs < s.N && w.SharedIterations > int64(w.VUs):
		return fmt.Errorf("segment %v: the load's %d shared iterations go to all %d segments but it has %d VUs; give it at least %d", s, w.SharedIterations, s.N, w.VUs, s.N)
	case w.Kind == Open && w.MaxVUs < s.N && w.Arrivals.Total() > int64(w.MaxVUs):
		return fmt.Errorf("segment %v: the load's arrivals go to all %d segments but it has max_vus %d; give it at least %d", s, s.N, w.MaxVUs, s.N)
	}
	return nil
}

// groupSpec is one workload of the run, and its state the workers share.
type groupSpec struct {
	wl       *Workload
	scenario *Scenario // nil: picked by weight
	firstVU  int
	maxVUs   int
	seg      execseg.Segment
	index    int          // among the run's groups
	wholeVUs int          // maxVUs in the whole plan, every segment's
	shared   atomic.Int64 // shared iterations left
	// An open workload that drops arrivals shares max_vus between its
	// workers: an arrival takes a VU if any is free, on whichever worker
	// it is due, and is dropped only when every VU is busy.
	// The pool is of VU identities: an ID and its iteration count, so
	// that {{ vu }} and {{ iteration }} mean what they do in other
	// workloads whichever worker runs the VU.
	slotMu sync.Mutex
	slots  []vuSlot // free
	// peakPooled is the most VUs of the shared pool taken at once.
	peakPooled int
}

func newGroupSpec(wl *Workload, sc *Scenario, first int, seg execseg.Segment) *groupSpec {
	g := &groupSpec{wl: wl, scenario: sc, firstVU: first, maxVUs: wl.maxVUs(), seg: seg}
	if wl.SharedIterations > 0 {
		g.shared.Store(wl.SharedIterations)
	}
	if g.pooled() {
		// The pool's IDs, the first first, each with the iterations it
		// has begun.
		for l := wl.MaxVUs - 1; l >= 0; l-- {
			g.slots = append(g.slots, vuSlot{id: g.vuID(l)})
		}
	}
	return g
}

// vuID is the number in the whole plan of the group's VU l (from 0) of
// this segment.
func (g *groupSpec) vuID(l int) int { return g.firstVU + int(g.seg.Global(int64(l))) }

// run is the state the workers share.
type run struct {
	cfg     *Config
	workers []*worker
	epoch   time.Time
	groups  []*groupSpec
	grace   time.Duration // the longest of the workloads'

	stopOnce   sync.Once
	stopReason error
}

// pooled says whether the workers share a pool of VUs: an open workload
// that drops what no VU can take.
func (g *groupSpec) pooled() bool { return g.wl.Kind == Open && !g.wl.Queue }

// vuSlot is a VU identity of the shared pool.
type vuSlot struct {
	id         int
	iterations int64
}

// takeVU reserves a VU identity of the shared pool, if one is free.
func (g *groupSpec) takeVU() (vuSlot, bool) {
	g.slotMu.Lock()
	defer g.slotMu.Unlock()
	n := len(g.slots)
	if n == 0 {
		return vuSlot{}, false
	}
	s := g.slots[n-1]
	g.slots = g.slots[:n-1]
	g.peakPooled = max(g.peakPooled, g.wl.MaxVUs-len(g.slots))
	return s, true
}

// releaseVU gives a VU identity back to the shared pool.
func (g *groupSpec) releaseVU(v *VU) {
	g.slotMu.Lock()
	g.slots = append(g.slots, vuSlot{id: v.ID, iterations: v.iterations})
	g.slotMu.Unlock()
}

// stopAll ends the run early and gracefully on every worker: no new
// iterations; those in progress finish within the grace period.
func (r *run) stopAll(reason error) {
	r.stopOnce.Do(func() {
		r.stopReason = reason
		for _, w := range r.workers {
			w.loop.Post(w.stop)
		}
	})
}

// claim takes one shared iteration; false when none is left.
func (g *groupSpec) claim() bool {
	if g.wl.SharedIterations <= 0 {
		return true
	}
	return g.shared.Add(-1) >= 0
}
