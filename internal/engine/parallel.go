package engine

import (
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
)

// lane is one of a VU's concurrent requests in a parallel step: its
// exchange, its encoded request and, past lane 0, its own connections.
type lane struct {
	v     *VU
	index int
	x     httpx.Exchange
	buf   []byte
	conns []vuConn // lane 0 uses the VU's
	step  *Step    // the request in flight
	due   time.Duration
	hops  int
}

// Lane is the lane of a parallel step whose request the VU's hooks (a
// RequestStep's Build, After and Redirect) are called for now, from 0; -1
// outside a parallel step. A program keeps per-lane what one request
// needs from its Build to its After (its path, for cookies and redirects).
func (v *VU) Lane() int { return v.lane }

func (l *lane) conn(t *httpx.Origin) *httpx.Conn {
	if l.index == 0 {
		return l.v.conn(t)
	}
	for i := range l.conns {
		if l.conns[i].target == t {
			return l.conns[i].conn
		}
	}
	c := l.v.w.loop.NewConn(t)
	l.conns = append(l.conns, vuConn{t, c})
	return c
}

// startParallel starts a parallel step: up to Max of its requests at once.
func (v *VU) startParallel(p *ParallelStep) {
	v.par, v.parNext, v.parBusy, v.parOK = p, 0, 0, true
	n := min(max(p.Max, 1), len(p.Steps))
	for len(v.lanes) < n {
		v.lanes = append(v.lanes, &lane{v: v, index: len(v.lanes)})
	}
	for _, l := range v.lanes[:n] {
		l.due = v.due
		if !v.parStart(l) {
			break
		}
	}
	if v.parBusy == 0 {
		v.parEnd()
	}
}

// parStart sends the group's next request on lane l; false when it sent
// none (none is left, or the group ends early).
func (v *VU) parStart(l *lane) bool {
	if !v.parOK || v.parNext >= len(v.par.Steps) {
		return false
	}
	s := v.par.Steps[v.parNext]
	v.parNext++
	r := s.Request
	l.step, l.hops = s, 0
	req := r.Static
	if req == nil {
		var err error
		v.lane = l.index
		l.buf, err = r.Build(v, l.buf[:0])
		v.lane = -1
		if err != nil {
			v.buildFailed(s.ID, err)
			v.Abort(s.Name + ": " + err.Error())
			v.parOK = false
			return false
		}
		req = l.buf
	}
	v.parBusy++
	l.do(r, r.Target, req)
	return true
}

func (l *lane) do(r *RequestStep, t *httpx.Origin, req []byte) {
	x := &l.x
	x.Request, x.Head, x.Keep, x.Idempotent, x.CloseAfter = req, r.Head, r.Keep, r.Idempotent, r.CloseAfter
	x.BodyFile = nil
	if l.hops == 0 {
		x.BodyFile = r.StaticBody
	}
	l.v.w.inflight++
	l.conn(t).Do(x, l)
}

// Done is called by the loop when the lane's exchange ends.
func (l *lane) Done(_ *httpx.Conn, x *httpx.Exchange) {
	v := l.v
	w := v.w
	w.inflight--
	step := l.step
	r := step.Request
	w.record(step.ID, x, l.due)
	if r.Redirect != nil && isRedirect(x.Status) && l.hops < r.MaxRedirects {
		v.lane = l.index
		next, target, err := r.Redirect(v, x, l.buf[:0])
		v.lane = -1
		switch {
		case err != nil:
			v.redirectFailed(step.ID, x, err)
			if v.parOK {
				v.Abort(step.Name + ": redirect: " + err.Error())
			}
			v.parOK = false
			l.ended()
			return
		case next != nil:
			l.buf = next
			l.hops++
			l.due = w.loop.Now()
			l.do(r, target, next)
			return
		}
	}
	if r.After != nil {
		v.lane = l.index
		ok := r.After(v, x)
		v.lane = -1
		if !ok {
			v.parOK = false
		}
	}
	l.ended()
}

// ended frees the lane for the group's next request, and ends the group
// when it was the last in flight.
func (l *lane) ended() {
	v := l.v
	v.parBusy--
	l.due = v.w.loop.Now()
	if v.parStart(l) {
		return
	}
	if v.parBusy == 0 {
		v.parEnd()
	}
}

// parEnd ends the parallel step: the iteration goes on, or ends early.
func (v *VU) parEnd() {
	ok := v.parOK
	v.par = nil
	v.step++
	if !ok {
		v.w.iterationDone(v, false)
		return
	}
	v.due = v.w.loop.Now()
	v.next()
}
