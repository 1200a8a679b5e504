package engine

import (
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
)

// VU is a virtual user: it runs iterations of a scenario, one step at a time,
// over its own connections. It lives on one worker.
type VU struct {
	w     *worker
	ID    int // unique in the run, from 0
	index int // among its worker's VUs

	running    bool
	thinking   bool
	iterations int64 // started
	scenario   *Scenario
	step       int
	due        time.Duration // when the current request was due

	x     httpx.Exchange
	buf   []byte
	conns []vuConn
}

type vuConn struct {
	target *httpx.Target
	conn   *httpx.Conn
}

func newVU(w *worker, id int) *VU {
	return &VU{w: w, ID: id, index: len(w.vus)}
}

// Iteration is the number of the iteration in progress, from 0.
func (v *VU) Iteration() int64 { return v.iterations - 1 }

// Rand is the VU's worker's random source, for think times and template
// functions.
func (v *VU) Rand() interface{ Int64N(int64) int64 } { return v.w.rng }

func (v *VU) conn(t *httpx.Target) *httpx.Conn {
	for i := range v.conns {
		if v.conns[i].target == t {
			return v.conns[i].conn
		}
	}
	c := v.w.loop.NewConn(t)
	v.conns = append(v.conns, vuConn{t, c})
	return c
}

// begin starts an iteration whose first request is due at due.
func (v *VU) begin(due time.Duration) {
	w := v.w
	v.running = true
	w.active++
	v.iterations++
	v.scenario = w.pick()
	v.step = 0
	v.due = due
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
	if req == nil {
		var err error
		v.buf, err = r.Build(v, v.buf[:0])
		if err != nil {
			return false
		}
		req = v.buf
	}
	x := &v.x
	x.Request, x.Head, x.Keep, x.Idempotent, x.CloseAfter = req, r.Head, r.Keep, r.Idempotent, r.CloseAfter
	v.w.inflight++
	v.conn(r.Target).Do(x, v)
	return true
}

// Done is called by the loop when the VU's exchange ends.
func (v *VU) Done(_ *httpx.Conn, x *httpx.Exchange) {
	w := v.w
	w.inflight--
	step := v.scenario.Steps[v.step]
	s := &w.sample
	s.Step, s.Status, s.Failure = step.ID, x.Status, x.Class
	s.Latency = x.End - v.due
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
	s.Bytes = x.BodyBytes
	w.rec.Record(s)

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
