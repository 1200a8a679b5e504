package engine

import (
	"errors"
	"time"

	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
)

// VU is a virtual user: it runs iterations of a scenario, one step at a time,
// over its own connections. It lives on one worker.
type VU struct {
	w     *worker
	g     *group // the workload it runs under
	ID    int    // unique in the run, from 0
	index int    // among its worker's VUs of its group

	running    bool
	thinking   bool
	iterations int64 // started
	// arrival is the whole plan's number of the arrival the iteration in
	// progress began for (an open load), or -1.
	arrival  int64
	scenario *Scenario
	step     int
	due      time.Duration // when the current request was due

	x     httpx.Exchange
	buf   []byte
	conns []vuConn
	hops  int // redirects followed in this step

	// A parallel step in progress (see ParallelStep): its lanes (kept,
	// with their connections, for the VU's later groups), the next of its
	// steps to start, the requests in flight, and whether the iteration
	// goes on after it. lane is the lane whose hooks (Build, After,
	// Redirect) run now, or -1.
	lanes   []*lane
	par     *ParallelStep
	parNext int
	parBusy int
	parOK   bool
	lane    int

	// State is the program's per-VU state (see Program.NewState).
	State any
}

type vuConn struct {
	target *httpx.Origin
	conn   *httpx.Conn
}

func newVU(w *worker, g *group, id int) *VU {
	v := &VU{w: w, g: g, ID: id, index: len(g.vus), arrival: -1, lane: -1}
	if p := w.run.cfg.Program; p.NewState != nil {
		v.State = p.NewState(v)
	}
	return v
}

// Scenario is the scenario of the iteration in progress.
func (v *VU) Scenario() *Scenario { return v.scenario }

// Check records the outcome of one expectation of a step: its check with
// index check (StepInfo.Checks).
func (v *VU) Check(step, check int, passed bool) { v.w.rec.Check(step, check, passed) }

// KeepsFailure reports whether the next failed check of step is the first
// the VU's worker records, whose response CheckFailed keeps: a caller
// gathers what it looked for (Sought) only then.
func (v *VU) KeepsFailure(step int) bool { return v.w.rec.KeepsFailure(step) }

// CheckFailed records a failed expectation of a step with the response it
// failed on (x may be nil: no request went out) and what it looked for, so
// that the first one can be shown. Only the step's first failure on this
// worker copies the response; the others are counted.
// The check is the step's check of that index, named name.
func (v *VU) CheckFailed(step, check int, name string, x *httpx.Exchange, err error, sought failure.Sought) {
	if !v.w.rec.KeepsFailure(step) {
		v.w.rec.CheckFailed(step, check, nil)
		return
	}
	f := &metrics.FailedCheck{Check: name, Sought: sought}
	if x != nil {
		f.Status = x.Status
		if err == nil {
			err = x.Err
		}
		if x.Status != 0 {
			var secrets []string
			if p := v.w.run.cfg.Program; p.Secrets != nil {
				secrets = p.Secrets(v, nil)
			}
			f.Response = failure.Keep(x.Status, x.Header, x.Body, secrets)
			f.Response.Reason = string(x.Reason())
		}
	}
	if err != nil {
		f.Error = err.Error()
	}
	v.w.rec.CheckFailed(step, check, f)
}

// Abort records why an iteration could not go on (a request that could not
// be built, say); the caller then ends the iteration.
func (v *VU) Abort(reason string) { v.w.rec.Abort(reason) }

// Iteration is the number of the iteration in progress, from 0.
func (v *VU) Iteration() int64 { return v.iterations - 1 }

// Unit is the number, in the whole plan, of the unit of work the
// iteration in progress is within its workload (Group): in an open load
// the arrival's number in its schedule; otherwise Iteration × the
// workload's most VUs + the VU's number among them. Units differ between
// the iterations of a workload and between the execution segments of a
// plan, so a data source keyed by them gives every row once across
// segments, as one machine would.
func (v *VU) Unit() int64 {
	if v.arrival >= 0 {
		return v.arrival
	}
	g := v.g.spec
	return v.Iteration()*int64(g.wholeVUs) + int64(v.ID-g.firstVU)
}

// Group is the index of the VU's workload (Config.Scenarios; 0 with one
// workload) and how many the run has.
func (v *VU) Group() (index, count int) { return v.g.spec.index, len(v.w.run.groups) }

// Rand is the VU's worker's random source, for think times and template
// functions.
func (v *VU) Rand() interface{ Int64N(int64) int64 } { return v.w.rng }

func (v *VU) conn(t *httpx.Origin) *httpx.Conn {
	for i := range v.conns {
		if v.conns[i].target == t {
			return v.conns[i].conn
		}
	}
	c := v.w.loop.NewConn(t)
	v.conns = append(v.conns, vuConn{t, c})
	return c
}

// closeConns closes the VU's connections, its lanes' too.
func (v *VU) closeConns() {
	for _, c := range v.conns {
		c.conn.Close()
	}
	for _, l := range v.lanes {
		for _, c := range l.conns {
			c.conn.Close()
		}
	}
}

// begin starts an iteration whose first request is due at due.
func (v *VU) begin(due time.Duration) {
	w := v.w
	g := v.g
	v.running = true
	w.active++
	w.peakActive = max(w.peakActive, w.active)
	g.active++
	g.peak = max(g.peak, g.active)
	v.iterations++
	v.scenario = g.pick()
	v.step = 0
	v.due = due
	if begin := w.run.cfg.Program.Begin; begin != nil {
		if err := begin(v); err != nil {
			v.running = false
			w.active--
			g.active--
			w.run.stopAll(err)
			w.checkDone()
			return
		}
	}
	v.next()
}

// next runs steps until one sends a request or pauses, or the iteration ends.
func (v *VU) next() {
	steps := v.scenario.Steps
	for v.step < len(steps) {
		s := steps[v.step]
		if s.Think != nil {
			v.step++
			if d := s.Think(v); d > 0 {
				v.thinking = true
				v.w.loop.At(v.w.loop.Now()+d, v)
				return
			}
			continue
		}
		if s.Socket != nil {
			v.runSocket(s.Socket)
			return
		}
		if s.Parallel != nil {
			v.startParallel(s.Parallel)
			return
		}
		if v.send(s.Request) {
			return
		}
		v.w.iterationDone(v, false)
		return
	}
	v.w.iterationDone(v, true)
}

// send starts the request of a step; false if it could not be built.
func (v *VU) send(r *RequestStep) bool {
	req := r.Static
	v.hops = 0
	if req == nil {
		var err error
		v.buf, err = r.Build(v, v.buf[:0])
		if err != nil {
			step := v.scenario.Steps[v.step]
			v.buildFailed(step.ID, err)
			v.Abort(step.Name + ": " + err.Error())
			return false
		}
		req = v.buf
	}
	v.do(r, r.Target, req)
	return true
}

// ErrRequestTooLarge is a request whose rendered header, URL or body is
// over its limit (http.max_request_header, max_url, max_request_body): it is
// not sent, and counts as a failed result.CheckRequestSize.
var ErrRequestTooLarge = errors.New("request over its size limit")

// buildFailed records the check a request of step id that could not be
// built fails.
func (v *VU) buildFailed(id int, err error) {
	k := checkBuilt
	if errors.Is(err, ErrRequestTooLarge) {
		k = checkSize
	}
	v.CheckFailed(id, v.w.run.cfg.Program.ownCheck(id, k), OwnChecks[k], nil, err, failure.Sought{})
}

// redirectFailed records the check a redirect of step id that could not
// be followed fails.
func (v *VU) redirectFailed(id int, x *httpx.Exchange, err error) {
	v.CheckFailed(id, v.w.run.cfg.Program.ownCheck(id, checkRedirect), CheckRedirect, x, err, failure.Sought{})
}

func (v *VU) do(r *RequestStep, t *httpx.Origin, req []byte) {
	x := &v.x
	x.Request, x.Head, x.Keep, x.Idempotent, x.CloseAfter = req, r.Head, r.Keep, r.Idempotent, r.CloseAfter
	x.BodyFile = nil
	if v.hops == 0 { // a redirect's request carries no body from the file
		x.BodyFile = r.StaticBody
	}
	v.w.inflight++
	v.conn(t).Do(x, v)
}

// record records the sample of an exchange of step id that was due at due.
func (w *worker) record(id int, x *httpx.Exchange, due time.Duration) {
	s := &w.sample
	s.Step, s.Status, s.Failure, s.Err = id, x.Status, x.Failure, x.Err
	s.Latency = x.End - due
	sent := x.Sent
	if sent == 0 {
		sent = x.Start
	}
	s.Service = x.End - sent
	s.TTFB = 0
	if x.FirstByte > 0 {
		s.TTFB = x.FirstByte - sent
	}
	s.Connect = x.ConnectTime()
	s.TLS, s.TLSResumed = x.TLSTime(), x.TLSResumed
	s.Reason = x.Reason()
	s.Bytes, s.Coded, s.Decoded = x.BodyBytes, x.Decoded, x.DecodedBytes
	w.rec.Record(s)
}

func isRedirect(status int) bool {
	switch status {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// Done is called by the loop when the VU's exchange ends.
func (v *VU) Done(_ *httpx.Conn, x *httpx.Exchange) {
	w := v.w
	w.inflight--
	step := v.scenario.Steps[v.step]
	w.record(step.ID, x, v.due)

	if r := step.Request; r.Redirect != nil && isRedirect(x.Status) && v.hops < r.MaxRedirects {
		next, target, err := r.Redirect(v, x, v.buf[:0])
		switch {
		case err != nil:
			v.redirectFailed(step.ID, x, err)
			v.Abort(step.Name + ": redirect: " + err.Error())
			v.step++
			w.iterationDone(v, false)
			return
		case next != nil:
			v.buf = next
			v.hops++
			v.due = w.loop.Now()
			v.do(r, target, next)
			return
		}
	}
	ok := true
	if after := step.Request.After; after != nil {
		ok = after(v, x)
	}
	v.step++
	if !ok {
		w.iterationDone(v, false)
		return
	}
	v.due = w.loop.Now()
	v.next()
}

// Fire ends a pause between steps.
func (v *VU) Fire(now time.Duration) {
	v.thinking = false
	v.due = now
	v.next()
}
