// Package telemetry makes a run's figures visible while it runs: it keeps
// the live figures (Live, fed once a second from the engine's merged
// series), serves them as Prometheus text (Serve, --metrics-addr), and pushes
// them to Prometheus remote-write and OTLP receivers (StartPush, --push).
// Live owns the figures; the server and the pushers only read snapshots of
// them, on goroutines of their own, so that nothing they do (a slow
// receiver, a scrape) reaches the load.
package telemetry

import (
	"sync"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/metrics"
)

// Bounds are the upper bounds of the latency histograms' buckets, in
// seconds (metrics.StepBounds); a last bucket (+Inf) takes the rest.
var Bounds = func() (out [len(metrics.StepBounds)]float64) {
	for i, us := range metrics.StepBounds {
		out[i] = float64(us) / 1e6
	}
	return out
}()

// Live holds the figures of a command's runs so far: counters that only
// grow (across the runs of an experiment too, and through a warmup, which
// the run's own totals leave out), and gauges of the newest second. It is
// safe for concurrent use.
type Live struct {
	mu      sync.Mutex
	start   time.Time
	steps   map[stepKey]*StepFigures
	order   []*StepFigures
	figures Figures
	// final is set by Finish; scraped is closed by the first scrape after it.
	final   bool
	scraped chan struct{}
	once    sync.Once
}

type stepKey struct{ scenario, step string }

// Figures are the run-wide figures.
type Figures struct {
	Requests, Responses, Errors int64
	Iterations, Dropped, Late   int64
	Bytes                       int64
	VUs                         int64 // in an iteration at the end of the newest second
	Running                     bool
	Runs                        int64 // runs started
	Server                      bool  // the server's figures below are set
	ServerCPU                   float64
	ServerRSS                   int64
}

// StepFigures are one step's figures.
type StepFigures struct {
	Scenario, Step string
	Count          [metrics.NumClasses]int64
	Checks         metrics.Checks
	// Buckets counts the latencies by bucket of Bounds (not cumulative);
	// the last is +Inf. Sum is their sum in seconds.
	Buckets []uint64
	Sum     float64
	// Native counts the same latencies in native buckets of schema
	// metrics.NativeSchema, metrics.NativeMin first; NativeZero those of 0.
	Native     []uint64
	NativeZero uint64
}

// Snapshot is a copy of the figures at one time.
type Snapshot struct {
	Time, Start time.Time
	Figures
	Steps []StepFigures
}

// New makes an empty Live.
func New() *Live {
	return &Live{start: time.Now(), steps: map[stepKey]*StepFigures{}, scraped: make(chan struct{})}
}

// RunStarted marks a run as going.
func (l *Live) RunStarted() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.figures.Running = true
	l.figures.Runs++
}

// RunEnded marks the run as over; VUs read zero.
func (l *Live) RunEnded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.figures.Running = false
	l.figures.VUs = 0
}

// Finish says that no figure will change any more: the next scrape is the
// last one worth waiting for (Server.WaitScraped).
func (l *Live) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.final = true
}

// Interval adds one interval of the series (runner.Options.OnInterval). It
// runs on the engine's collector goroutine, once a second, and holds the
// lock only to add the interval's figures.
func (l *Live) Interval(steps []engine.StepInfo, iv *metrics.Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := &l.figures
	f.Requests += iv.Requests
	f.Responses += iv.Responses
	f.Errors += iv.Errors
	f.Iterations += iv.Iterations
	f.Dropped += iv.Dropped
	f.Late += iv.Late
	f.Bytes += iv.Bytes
	f.VUs = iv.Active
	for i := range iv.Steps {
		in := &iv.Steps[i]
		if in.Count == ([metrics.NumClasses]int64{}) && in.Checks == (metrics.Checks{}) {
			continue
		}
		k := stepKey{}
		if i < len(steps) {
			k = stepKey{steps[i].Scenario, steps[i].Name}
		}
		st := l.steps[k]
		if st == nil {
			st = &StepFigures{Scenario: k.scenario, Step: k.step, Buckets: make([]uint64, metrics.NumStepBuckets), Native: make([]uint64, metrics.NumNativeBuckets)}
			l.steps[k] = st
			l.order = append(l.order, st)
		}
		for c := range in.Count {
			st.Count[c] += in.Count[c]
		}
		st.Checks.Passed += in.Checks.Passed
		st.Checks.Failed += in.Checks.Failed
		for b, n := range in.Buckets {
			st.Buckets[b] += uint64(n)
		}
		st.Sum += float64(in.SumMicros) / 1e6
		for b, n := range in.Native {
			st.Native[b] += uint64(n)
		}
		st.NativeZero += uint64(in.NativeZero)
	}
}

// Server sets the server's newest figures: CPU in percent of one core, RSS
// in bytes.
func (l *Live) Server(cpu float64, rss int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.figures.Server, l.figures.ServerCPU, l.figures.ServerRSS = true, cpu, rss
}

// Snapshot copies the figures.
func (l *Live) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Snapshot{Time: time.Now(), Start: l.start, Figures: l.figures, Steps: make([]StepFigures, len(l.order))}
	for i, st := range l.order {
		s.Steps[i] = *st
		s.Steps[i].Buckets = append([]uint64(nil), st.Buckets...)
		s.Steps[i].Native = append([]uint64(nil), st.Native...)
	}
	return s
}

// scrapedFinal notes a scrape; after Finish, the first closes scraped.
func (l *Live) scrapedFinal() {
	l.mu.Lock()
	final := l.final
	l.mu.Unlock()
	if final {
		l.once.Do(func() { close(l.scraped) })
	}
}
