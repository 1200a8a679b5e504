// Package metrics records what the load engine measures, and merges it.
//
// Each engine worker (one event loop on one OS thread) owns a Recorder and
// records into it without locks: HDR histograms (1 µs to 1 h, 3 significant
// digits) per step and status class, and counters. Once a second the worker
// hands an Interval (its figures for that second, across all steps) to the
// Collector, which builds the time series; at the end the Recorders are
// merged into the run's totals. Memory does not grow with the number of
// requests: a histogram is allocated per (step, class) on first use and is
// fixed-size; the time series adds one small point per second.
package metrics

import (
	"math"
	"math/bits"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/result"
)

// Histogram range and precision: 1 µs to 1 hour at 3 significant digits, so
// every figure is within 0.1% of the value measured.
const (
	lowestMicros  = 1
	highestMicros = 3600 * 1000 * 1000
	sigFigures    = 3
	// Resolution states the precision of every latency figure.
	Resolution = "1 µs, 3 significant digits (HdrHistogram)"
)

// NewHistogram returns an empty histogram of microseconds.
func NewHistogram() *hdr.Histogram { return hdr.New(lowestMicros, highestMicros, sigFigures) }

// micros converts a duration for recording, clamping it into range.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if us < 0 {
		return 0
	}
	if us > highestMicros {
		return highestMicros
	}
	return us
}

// Class is the status class a histogram holds.
type Class uint8

const (
	ClassOK      Class = iota // 1xx, 2xx and 3xx responses
	Class4xx                  // client errors
	Class5xx                  // server errors
	ClassTimeout              // no response within the timeout
	ClassFailed               // no response for another reason: connect error, reset...
	NumClasses
)

var classNames = [NumClasses]string{"ok", "4xx", "5xx", "timeout", "failed"}

func (c Class) String() string { return classNames[c] }

// ClassOf classifies a finished exchange.
func ClassOf(status int, failure result.Failure) Class {
	switch {
	case failure == result.FailureTimeout:
		return ClassTimeout
	case failure != result.FailureNone:
		return ClassFailed
	case status >= 500:
		return Class5xx
	case status >= 400:
		return Class4xx
	}
	return ClassOK
}

// numFailures is the number of failure classes, result.FailureNone included.
const numFailures = int(result.FailureGoaway) + 1

// Sample is one finished exchange, as the engine hands it to a Recorder.
type Sample struct {
	Step    int
	Status  int            // zero when the exchange failed
	Failure result.Failure // result.FailureNone when there was a response
	Err     error          // why there was none
	Latency time.Duration
	Service time.Duration
	TTFB    time.Duration
	Connect time.Duration // zero when the connection was reused
	Bytes   int64
	// Coded says the body came in content codings (httpx.Exchange.Decoded)
	// and Decoded is its size once they were undone.
	Coded   bool
	Decoded int64

	// TLS is the new connection's TLS handshake (zero: none), and
	// TLSResumed says it resumed a session.
	TLS        time.Duration
	TLSResumed bool
	// Reason is the status line's reason phrase, as the server wrote it;
	// valid during Record only.
	Reason []byte
}

// StepTotals are one step's figures.
type StepTotals struct {
	Latency  [NumClasses]*hdr.Histogram
	Service  [NumClasses]*hdr.Histogram
	TTFB     *hdr.Histogram // responses only
	Count    [NumClasses]int64
	Failures [numFailures]int64 // by result.Failure
	// Example is the first failure's message of each class, to say why.
	Example [numFailures]string
	// FirstStatus is the first 4xx and the first 5xx status seen, to say
	// which (0: none).
	FirstStatus [2]int
	Bytes       int64
	// Decoded counts the responses whose body came in a content coding,
	// DecodedBytes their size once decoded and CodedBytes as received.
	Decoded, DecodedBytes, CodedBytes int64
	Checks                            Checks
	// ByCheck counts the outcomes of each of the step's checks, by the
	// check's index (CountChecks sizes it; a check past its end counts in
	// Checks alone).
	ByCheck []Checks
	// FirstFailed is the first check of the step that failed, with what the
	// server answered, to show why; nil when none failed.
	FirstFailed *FailedCheck

	// Connect and TLS time the step's new connections and their TLS
	// handshakes (nil until one), Resumed counts the handshakes that
	// resumed a session.
	Connect, TLS *hdr.Histogram
	Resumed      int64
	// Statuses counts the responses by status code, in the order first seen.
	Statuses []StatusCount
	// FirstReason is the reason phrase of FirstStatus's responses, as the
	// server wrote it.
	FirstReason [2]string
}

// StatusCount is how many responses had one status code.
type StatusCount struct {
	Code int
	N    int64
}

// countStatus adds n responses of status code to counts: a linear search,
// since a step sees few distinct codes.
func countStatus(counts []StatusCount, code int, n int64) []StatusCount {
	for i := range counts {
		if counts[i].Code == code {
			counts[i].N += n
			return counts
		}
	}
	return append(counts, StatusCount{code, n})
}

// Checks count the outcomes of a step's expectations.
type Checks struct{ Passed, Failed int64 }

// FailedCheck is a check that failed and the response it failed on.
type FailedCheck struct {
	Check  string // what was expected: "status 200", "contains order-number"
	Status int    // 0: no response
	Error  string // why there was no response, if there was none
	// Sought is what the check looked for, to show the response around it.
	Sought failure.Sought
	// Response is the response kept whole (its body up to
	// failure.MaxBody), not yet masked; nil when there was none.
	Response *failure.Response
}

// ShownBytes is how much of a response body a failed check shows in the
// summary and reports: the text around what the check looked for.
const ShownBytes = 512

// Counters are run-wide counts that belong to no step.
type Counters struct {
	Iterations int64 // journeys (or quick-mode requests) completed
	Dropped    int64 // arrivals that found no free VU and were not started
	Late       int64 // sent 1 ms or more after their due time
	Waited     int64 // open load with a queue: arrivals that found every VU busy and waited for one
	Unsent     int64 // due within the run but never sent
	Aborted    int64 // iterations that could not go on (a request that could not be built)
}

// maxReasons bounds the distinct abort reasons kept.
const maxReasons = 20

// LateAfter is how far past its due time a request must go out to count as late.
const LateAfter = time.Millisecond

// Recorder holds one worker's measurements. It is not safe for concurrent
// use: one worker owns it.
type Recorder struct {
	Steps    []StepTotals
	Connect  *hdr.Histogram
	TLS      *hdr.Histogram // TLS handshakes of new connections
	Lateness *hdr.Histogram
	Counters Counters
	// Scenarios counts the journeys completed, by scenario index.
	Scenarios []int64
	// Reasons counts why iterations were aborted, by message (at most
	// maxReasons distinct messages; the rest count under "other").
	Reasons map[string]int64

	iv *Interval
	// seen is what the intervals per step (Interval.Steps) have been told
	// of each step's counts so far; nil until the first such interval.
	seen []stepSeen
}

// stepSeen is a step's counts as of the last interval per step.
type stepSeen struct {
	count  [NumClasses]int64
	checks Checks
}

// NewRecorder makes a recorder for a run with the given number of steps.
func NewRecorder(steps int) *Recorder {
	return &Recorder{
		Steps:    make([]StepTotals, steps),
		Connect:  NewHistogram(),
		TLS:      NewHistogram(),
		Lateness: NewHistogram(),
		iv:       newInterval(0),
	}
}

// Record adds one finished exchange.
func (r *Recorder) Record(s *Sample) {
	st := &r.Steps[s.Step]
	class := ClassOf(s.Status, s.Failure)
	st.Count[class]++
	iv := r.iv
	iv.Requests++
	if class != ClassFailed && class != ClassTimeout {
		iv.Responses++
	}
	if class == ClassFailed || class == ClassTimeout {
		st.Failures[s.Failure]++
		if st.Example[s.Failure] == "" && s.Err != nil {
			st.Example[s.Failure] = s.Err.Error()
		}
		iv.Errors++
		if class == ClassTimeout {
			// A timeout is a latency too, censored at the timeout: leaving it
			// out would let a server that never answers look fast.
			iv.record(s.Step, micros(s.Latency))
		}
	} else {
		if class != ClassOK {
			iv.Errors++
			if i := int(class - Class4xx); st.FirstStatus[i] == 0 {
				st.FirstStatus[i], st.FirstReason[i] = s.Status, string(s.Reason)
			}
		}
		if st.TTFB == nil {
			st.TTFB = NewHistogram()
		}
		st.TTFB.RecordValue(micros(s.TTFB))
		st.Statuses = countStatus(st.Statuses, s.Status, 1)
		iv.record(s.Step, micros(s.Latency))
	}
	if st.Latency[class] == nil {
		st.Latency[class], st.Service[class] = NewHistogram(), NewHistogram()
	}
	st.Latency[class].RecordValue(micros(s.Latency))
	st.Service[class].RecordValue(micros(s.Service))
	if s.Connect > 0 {
		r.Connect.RecordValue(micros(s.Connect))
		if st.Connect == nil {
			st.Connect = NewHistogram()
		}
		st.Connect.RecordValue(micros(s.Connect))
	}
	if s.TLS > 0 {
		r.TLS.RecordValue(micros(s.TLS))
		if st.TLS == nil {
			st.TLS = NewHistogram()
		}
		st.TLS.RecordValue(micros(s.TLS))
		if s.TLSResumed {
			st.Resumed++
		}
	}
	st.Bytes += s.Bytes
	iv.Bytes += s.Bytes
	if s.Coded {
		st.Decoded++
		st.DecodedBytes += s.Decoded
		st.CodedBytes += s.Bytes
	}
}

// RecordLateness records how long after its due time a request went out.
func (r *Recorder) RecordLateness(late time.Duration) {
	r.Lateness.RecordValue(micros(late))
	if late >= LateAfter {
		r.Counters.Late++
		r.iv.Late++
	}
}

// Waited counts an arrival that found every VU busy and waited for one.
func (r *Recorder) Waited() { r.Counters.Waited++ }

// StepResponses are each step's responses of any status so far.
func (r *Recorder) StepResponses() []int64 {
	out := make([]int64, len(r.Steps))
	for i := range r.Steps {
		c := &r.Steps[i].Count
		out[i] = c[ClassOK] + c[Class4xx] + c[Class5xx]
	}
	return out
}

// Iteration counts a completed journey.
func (r *Recorder) Iteration() {
	r.Counters.Iterations++
	r.iv.Iterations++
}

// IterationOf counts a completed journey of the scenario with this index.
func (r *Recorder) IterationOf(scenario int) {
	r.Iteration()
	for len(r.Scenarios) <= scenario {
		r.Scenarios = append(r.Scenarios, 0)
	}
	r.Scenarios[scenario]++
}

// Dropped counts an arrival that could not start.
func (r *Recorder) Dropped() {
	r.Counters.Dropped++
	r.iv.Dropped++
}

// Abort counts an iteration that could not go on, and why.
func (r *Recorder) Abort(reason string) {
	r.Counters.Aborted++
	if r.Reasons == nil {
		r.Reasons = map[string]int64{}
	}
	if _, ok := r.Reasons[reason]; !ok && len(r.Reasons) >= maxReasons {
		reason = "other"
	}
	r.Reasons[reason]++
}

// Unsent counts requests that were due but never sent.
func (r *Recorder) Unsent(n int64) { r.Counters.Unsent += n }

// CountChecks sizes each step's counts by check: perStep[i] checks for
// step i. Called once, before the run: Check then neither allocates nor
// looks up a name.
func (r *Recorder) CountChecks(perStep []int) {
	for i, n := range perStep {
		if i < len(r.Steps) && n > 0 {
			r.Steps[i].ByCheck = make([]Checks, n)
		}
	}
}

// Check counts the outcome of one expectation of a step, check being its
// index among the step's checks.
func (r *Recorder) Check(step, check int, passed bool) {
	st := &r.Steps[step]
	if passed {
		st.Checks.Passed++
		if uint(check) < uint(len(st.ByCheck)) {
			st.ByCheck[check].Passed++
		}
	} else {
		st.Checks.Failed++
		if uint(check) < uint(len(st.ByCheck)) {
			st.ByCheck[check].Failed++
		}
	}
}

// KeepsFailure reports whether the next failed check of step will be kept
// (it is the step's first): only then need the caller gather what
// CheckFailed keeps.
func (r *Recorder) KeepsFailure(step int) bool { return r.Steps[step].FirstFailed == nil }

// CheckFailed counts a failed expectation and, for the step's first, keeps
// f, which the caller made for it (KeepsFailure); f is not read otherwise.
func (r *Recorder) CheckFailed(step, check int, f *FailedCheck) {
	st := &r.Steps[step]
	st.Checks.Failed++
	if uint(check) < uint(len(st.ByCheck)) {
		st.ByCheck[check].Failed++
	}
	if st.FirstFailed == nil {
		st.FirstFailed = f
	}
}

// Rotate ends the current interval and starts next, which must be empty
// (from the Collector's pool). It returns the finished interval.
func (r *Recorder) Rotate(next *Interval, active int64) *Interval {
	r.fold()
	iv := r.iv
	iv.Active = active
	r.iv = next
	return iv
}

// fold adds to the current interval, if it is kept per step, each step's
// exchanges and checks since the last fold. Counting them here, once an
// interval, rather than in Record and Check keeps the figures per step off
// the path of every request.
func (r *Recorder) fold() {
	iv := r.iv
	if iv.Steps == nil {
		return
	}
	if r.seen == nil {
		r.seen = make([]stepSeen, len(r.Steps))
	}
	for i := range r.Steps {
		st, seen, out := &r.Steps[i], &r.seen[i], &iv.Steps[i]
		for c := range NumClasses {
			out.Count[c] += st.Count[c] - seen.count[c]
		}
		out.Checks.Passed += st.Checks.Passed - seen.checks.Passed
		out.Checks.Failed += st.Checks.Failed - seen.checks.Failed
		seen.count, seen.checks = st.Count, st.Checks
	}
}

// ResetTotals forgets everything but the time series: the end of a warmup.
func (r *Recorder) ResetTotals() {
	r.fold() // the series keeps the warmup's counts
	clear(r.seen)
	for i := range r.Steps {
		st := &r.Steps[i]
		for c := range NumClasses {
			if st.Latency[c] != nil {
				st.Latency[c].Reset()
				st.Service[c].Reset()
			}
		}
		if st.TTFB != nil {
			st.TTFB.Reset()
		}
		if st.Connect != nil {
			st.Connect.Reset()
		}
		if st.TLS != nil {
			st.TLS.Reset()
		}
		st.Resumed = 0
		st.Statuses = st.Statuses[:0]
		st.FirstReason = [2]string{}
		st.Count, st.Failures, st.Bytes, st.Checks, st.FirstFailed = [NumClasses]int64{}, [numFailures]int64{}, 0, Checks{}, nil
		st.Decoded, st.DecodedBytes, st.CodedBytes = 0, 0, 0
		clear(st.ByCheck)
		st.Example, st.FirstStatus = [numFailures]string{}, [2]int{}
	}
	r.Connect.Reset()
	r.TLS.Reset()
	r.Lateness.Reset()
	r.Counters = Counters{}
	clear(r.Scenarios)
	r.Reasons = nil
}

// Merge adds the measurements of o into r.
func (r *Recorder) Merge(o *Recorder) {
	for i := range r.Steps {
		a, b := &r.Steps[i], &o.Steps[i]
		for c := range NumClasses {
			if b.Latency[c] == nil {
				continue
			}
			if a.Latency[c] == nil {
				a.Latency[c], a.Service[c] = NewHistogram(), NewHistogram()
			}
			a.Latency[c].Merge(b.Latency[c])
			a.Service[c].Merge(b.Service[c])
			a.Count[c] += b.Count[c]
		}
		if b.TTFB != nil {
			if a.TTFB == nil {
				a.TTFB = NewHistogram()
			}
			a.TTFB.Merge(b.TTFB)
		}
		a.Connect = mergeInto(a.Connect, b.Connect)
		a.TLS = mergeInto(a.TLS, b.TLS)
		a.Resumed += b.Resumed
		for _, c := range b.Statuses {
			a.Statuses = countStatus(a.Statuses, c.Code, c.N)
		}
		for k := range b.Failures {
			a.Failures[k] += b.Failures[k]
			if a.Example[k] == "" {
				a.Example[k] = b.Example[k]
			}
		}
		for i, code := range b.FirstStatus {
			if a.FirstStatus[i] == 0 {
				a.FirstStatus[i], a.FirstReason[i] = code, b.FirstReason[i]
			}
		}
		a.Bytes += b.Bytes
		a.Decoded += b.Decoded
		a.DecodedBytes += b.DecodedBytes
		a.CodedBytes += b.CodedBytes
		a.Checks.Passed += b.Checks.Passed
		a.Checks.Failed += b.Checks.Failed
		if len(a.ByCheck) < len(b.ByCheck) {
			a.ByCheck = append(a.ByCheck, make([]Checks, len(b.ByCheck)-len(a.ByCheck))...)
		}
		for k, c := range b.ByCheck {
			a.ByCheck[k].Passed += c.Passed
			a.ByCheck[k].Failed += c.Failed
		}
		if a.FirstFailed == nil {
			a.FirstFailed = b.FirstFailed
		}
	}
	r.Connect.Merge(o.Connect)
	r.TLS.Merge(o.TLS)
	r.Lateness.Merge(o.Lateness)
	r.Counters.Iterations += o.Counters.Iterations
	r.Counters.Dropped += o.Counters.Dropped
	r.Counters.Late += o.Counters.Late
	r.Counters.Waited += o.Counters.Waited
	r.Counters.Unsent += o.Counters.Unsent
	r.Counters.Aborted += o.Counters.Aborted
	for i, n := range o.Scenarios {
		for len(r.Scenarios) <= i {
			r.Scenarios = append(r.Scenarios, 0)
		}
		r.Scenarios[i] += n
	}
	for k, n := range o.Reasons {
		if r.Reasons == nil {
			r.Reasons = map[string]int64{}
		}
		r.Reasons[k] += n
	}
}

// StepBounds are the upper bounds, in microseconds, of the buckets of the
// latencies an interval keeps per step (Interval.Steps): 0.5 ms to 60 s,
// the buckets of the live metrics' histograms; a last bucket takes the rest.
var StepBounds = [...]int64{500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
	1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000}

// NumStepBuckets is the number of buckets of StepBounds, the last included.
const NumStepBuckets = len(StepBounds) + 1

// Native latency buckets: the per-step latencies an interval keeps also in
// the exponential buckets of a Prometheus native histogram of schema
// NativeSchema, in seconds: bucket k holds (2^((k-1)/8), 2^(k/8)], a
// relative width of 2^(1/8)-1 = 9.05%. Interval.Steps keeps the buckets
// NativeMin..NativeMin+NumNativeBuckets-1: 1 µs (k=-159) to 4096 s (k=96);
// a latency of 0 counts in NativeZero, one over 4096 s in the top bucket.
const (
	NativeSchema     = 3
	NativeMin        = -159
	NumNativeBuckets = 256
)

// nativeBounds are the fractions (of math.Frexp) at which a power of two's
// NativeSchema sub-buckets begin: 2^(j/8)/2.
var nativeBounds = func() (b [1 << NativeSchema]float64) {
	for j := range b {
		b[j] = math.Exp2(float64(j)/(1<<NativeSchema)) / 2
	}
	return b
}()

// NativeIndex is the native bucket (of schema NativeSchema) of a positive
// latency in seconds, as Prometheus' client_golang computes it.
func NativeIndex(seconds float64) int {
	frac, exp := math.Frexp(seconds)
	return sort.SearchFloat64s(nativeBounds[:], frac) + (exp-1)*len(nativeBounds)
}

// nativeUpper[i] is the upper bound of native bucket NativeMin+i in whole
// microseconds (rounded down: a latency of whole microseconds is at most
// the bound when at most its floor); nativeStart[n] is the first bucket
// whose bound reaches 2^(n-1) µs, where a latency of bits.Len64 n lies.
var nativeUpper, nativeStart = func() (upper [NumNativeBuckets]int64, start [65]int) {
	for i := range upper {
		upper[i] = int64(math.Floor(math.Exp2(float64(NativeMin+i)/(1<<NativeSchema)) * 1e6))
	}
	for n := range start {
		lo := int64(1) << max(n-1, 0)
		i := 0
		for i < NumNativeBuckets-1 && (n > 63 || upper[i] < lo) {
			i++
		}
		start[n] = i
	}
	return upper, start
}()

// nativeBucket is the index into StepInterval.Native of a latency of us > 0
// microseconds: NativeIndex(us/1e6)-NativeMin, clamped to the buckets kept,
// in integer comparisons only (at most 9), off the per-request path's
// floating point.
func nativeBucket(us int64) int {
	if us >= nativeUpper[NumNativeBuckets-1] {
		return NumNativeBuckets - 1
	}
	i := nativeStart[bits.Len64(uint64(us))]
	for nativeUpper[i] < us {
		i++
	}
	return i
}

// Interval is one worker's figures for one interval of the time series,
// across all steps, and, when the collector keeps them (Collector.PerStep),
// per step as well.
type Interval struct {
	Latency    *hdr.Histogram // responses of any status, and timeouts
	Requests   int64
	Responses  int64 // of any status
	Errors     int64 // failures and 4xx/5xx responses
	Bytes      int64
	Late       int64
	Dropped    int64
	Iterations int64
	Active     int64
	// Steps, when not nil, holds the figures by step (by step ID).
	Steps []StepInterval
}

// StepInterval is one step's figures over an interval: its latencies in
// the fixed buckets of StepBounds (a few bytes a step, where a histogram
// of the engine's precision takes 184 KiB, kept for every interval in
// flight), its exchanges by class and its checks.
type StepInterval struct {
	Buckets [NumStepBuckets]int64
	// SumMicros is the sum of the latencies in Buckets.
	SumMicros int64
	// Native counts the same latencies in the native buckets NativeMin...;
	// NativeZero the latencies of 0 µs.
	Native     [NumNativeBuckets]uint32
	NativeZero int64
	Count      [NumClasses]int64
	Checks     Checks
}

// Responses are the step's responses of any status in the interval: its
// exchanges but timeouts and failures.
func (s *StepInterval) Responses() int64 {
	return s.Count[ClassOK] + s.Count[Class4xx] + s.Count[Class5xx]
}

func newInterval(steps int) *Interval {
	iv := &Interval{Latency: NewHistogram()}
	if steps > 0 {
		iv.Steps = make([]StepInterval, steps)
	}
	return iv
}

// record adds a latency of the step, in microseconds.
func (iv *Interval) record(step int, us int64) {
	iv.Latency.RecordValue(us)
	if iv.Steps == nil {
		return
	}
	st := &iv.Steps[step]
	b := 0
	for b < len(StepBounds) && us > StepBounds[b] {
		b++
	}
	st.Buckets[b]++
	st.SumMicros += us
	if us <= 0 {
		st.NativeZero++
		return
	}
	st.Native[nativeBucket(us)]++
}

func (iv *Interval) reset() {
	iv.Latency.Reset()
	clear(iv.Steps)
	*iv = Interval{Latency: iv.Latency, Steps: iv.Steps}
}

func (iv *Interval) add(o *Interval) {
	iv.Latency.Merge(o.Latency)
	if iv.Steps != nil && o.Steps != nil {
		for i := range o.Steps {
			a, b := &iv.Steps[i], &o.Steps[i]
			for k := range b.Buckets {
				a.Buckets[k] += b.Buckets[k]
			}
			a.SumMicros += b.SumMicros
			for k := range b.Native {
				a.Native[k] += b.Native[k]
			}
			a.NativeZero += b.NativeZero
			for c := range NumClasses {
				a.Count[c] += b.Count[c]
			}
			a.Checks.Passed += b.Checks.Passed
			a.Checks.Failed += b.Checks.Failed
		}
	}
	iv.Requests += o.Requests
	iv.Responses += o.Responses
	iv.Errors += o.Errors
	iv.Bytes += o.Bytes
	iv.Late += o.Late
	iv.Dropped += o.Dropped
	iv.Iterations += o.Iterations
	iv.Active += o.Active
}

// mergeInto adds b (nil: nothing) into a, made when nil.
func mergeInto(a, b *hdr.Histogram) *hdr.Histogram {
	if b == nil {
		return a
	}
	if a == nil {
		a = NewHistogram()
	}
	a.Merge(b)
	return a
}
