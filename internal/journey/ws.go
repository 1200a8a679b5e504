package journey

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
)

// WSKind is what one action of a WebSocket step's do: list does.
type WSKind uint8

// The actions.
const (
	WSSend WSKind = iota
	WSReceive
	WSThink
	WSClose
)

// WSAction is one item of a ws step's do: list.
type WSAction struct {
	Kind WSKind
	// send: the message's template; Binary sends its text base64-decoded
	// as a binary message.
	Message *expr.Template
	Binary  bool
	// receive: how long to wait for the message (zero: the step's
	// Timeout), and the checks and captures run on it.
	Timeout time.Duration
	Checks  []Check
	// CheckBase is the index of the first of Checks among the checks of
	// the step's ID (WSStep.CheckNames).
	// Skip passes over the messages that contain it (heartbeats such as
	// ActionCable's {"type":"ping"}): the receive takes the next one.
	Skip      []byte
	Captures  []Capture
	CheckBase int
	// think: a pause of Lo, or a uniform pick in [Lo, Hi].
	Lo, Hi time.Duration
}

// WSStep is a compiled WebSocket step: it opens a socket with the VU's
// cookies and headers and runs its actions in order. It records under
// three engine steps: Handshake (one sample a socket: connect and handshake
// time; a refused handshake is its status), ID (one sample a receive: the
// round trip from the send before it, or from the receive's start; checks
// and captures count here) and Send (one sample a message sent).
type WSStep struct {
	ID, Handshake, Send int
	Name                string
	Target              *httpx.Origin // the http or https origin the ws or wss URL names
	Prefix              string
	Path                *expr.Template
	Headers             []Field
	Actions             []WSAction
	Timeout             time.Duration // the handshake's, and a receive's without one
	Limits              httpx.WSLimits
}

// The checks of a WebSocket step's Handshake and Send steps.
const (
	CheckSocketOpened = "the socket could be opened"
	CheckMessageBuilt = "the message could be built"
)

// CheckNames names the checks of the step's ID by index: each receive's
// checks and captures in turn, from its CheckBase, which it sets. Its
// Handshake step has CheckSocketOpened alone, its Send step
// CheckMessageBuilt.
func (st *WSStep) CheckNames() []string {
	var out []string
	for i := range st.Actions {
		a := &st.Actions[i]
		if a.Kind != WSReceive {
			continue
		}
		a.CheckBase = len(out)
		out = checkNames(out, a.Checks, a.Captures)
	}
	return out
}

// maxSkipped bounds the messages one receive passes over (skip:).
const maxSkipped = 10000

// wsEvent is what a socket step saw, recorded on the loop afterwards.
type wsEvent struct {
	step    int
	sample  bool
	status  int
	failure httpx.Failure
	err     error
	latency time.Duration
	connect time.Duration
	bytes   int64
	// a check: its index, and its name when it failed
	index  int
	check  string
	passed bool
	x      *httpx.Exchange
	sought failure.Sought
}

// wsRec is the Recorder a socket step's checks use off the loop: it keeps
// what they say for the loop.
type wsRec struct{ events []wsEvent }

func (r *wsRec) Check(step, check int, passed bool) {
	r.events = append(r.events, wsEvent{step: step, index: check, passed: passed, check: "-"})
}
func (r *wsRec) KeepsFailure(int) bool { return true }
func (r *wsRec) CheckFailed(step, check int, name string, x *httpx.Exchange, err error, sought failure.Sought) {
	var kept *httpx.Exchange
	if x != nil {
		kept = &httpx.Exchange{Status: x.Status, Body: append([]byte(nil), x.Body...), Err: x.Err}
	}
	r.events = append(r.events, wsEvent{step: step, index: check, check: name, x: kept, err: err, sought: sought})
}

func (r *wsRec) sample(step, status int, err error, latency, connect time.Duration, bytes int64) {
	class := httpx.FailureNone
	var we *httpx.WSError
	if errors.As(err, &we) {
		class = we.Class
	} else if err != nil {
		class = httpx.FailureProtocol
	}
	r.events = append(r.events, wsEvent{step: step, sample: true, status: status, failure: class, err: err, latency: latency, connect: connect, bytes: bytes})
}

// replay records the events on the loop.
func (r *wsRec) replay(v *engine.VU) bool {
	for i := range r.events {
		e := &r.events[i]
		switch {
		case e.sample:
			v.Record(e.step, e.status, e.failure, e.err, e.latency, e.connect, e.bytes)
		case e.check == "-":
			v.Check(e.step, e.index, e.passed)
		default:
			v.CheckFailed(e.step, e.index, e.check, e.x, e.err, e.sought)
		}
	}
	return true
}

// Socket is the step in the engine's form.
func (st *WSStep) Socket() *engine.SocketStep {
	return &engine.SocketStep{Run: func(v *engine.VU) func(*engine.VU) bool {
		rec := &wsRec{}
		st.Run(v.State.(*State), rec)
		return rec.replay
	}}
}

// Run runs the step for a VU's state, off the loop, telling rec what
// happened.
func (st *WSStep) Run(s *State, rec *wsRec) {
	// The request target and headers.
	s.path = append(s.path[:0], st.Prefix...)
	start := len(s.path)
	var err error
	if s.path, err = st.Path.Append(s.path, s.vars); err != nil {
		rec.CheckFailed(st.Handshake, 0, CheckSocketOpened, nil, err, failure.Sought{})
		return
	}
	s.path = escapePath(s.path, start)
	s.body = s.body[:0]
	for _, h := range st.Headers {
		s.body = httpx.StartHeader(s.body, h.Name)
		vs := len(s.body)
		if s.body, err = h.Value.Append(s.body, s.vars); err == nil {
			s.body, err = httpx.EndHeader(s.body, vs)
		}
		if err != nil {
			rec.CheckFailed(st.Handshake, 0, CheckSocketOpened, nil, fmt.Errorf("header %s: %w", h.Name, err), failure.Sought{})
			return
		}
	}
	t := st.Target
	s.body = s.jar.AppendHeader(s.body, t.Host, pathOnly(s.path), t.TLS != nil, time.Now())
	c, hs, err := httpx.DialWS(context.Background(), t, string(s.path), s.body, st.Timeout, st.Limits)
	status := hs.Status
	if err != nil {
		var we *httpx.WSError
		if errors.As(err, &we) && we.Status != 0 {
			err = nil // a refused handshake counts by its status
		}
	}
	rec.sample(st.Handshake, status, err, hs.Connect+hs.Handshake, hs.Connect, 0)
	if len(hs.Header) > 0 { // the handshake's cookies, for the steps after it
		s.resp.Reset(hs.Status, hs.Header, nil)
		if s.vals = s.resp.HeaderValues("Set-Cookie", s.vals[:0]); len(s.vals) > 0 {
			s.jar.Store(t.Host, pathOnly(s.path), s.vals, time.Now())
		}
	}
	if c == nil {
		return
	}
	defer c.Close(time.Second)
	var sent time.Time // the send the next receive answers
	msgStep := &Step{ID: st.ID, runner: nil}
	for i := range st.Actions {
		a := &st.Actions[i]
		switch a.Kind {
		case WSSend:
			s.body, err = a.Message.Append(s.body[:0], s.vars)
			op := byte(httpx.WSText)
			msg := s.body
			if err == nil && a.Binary {
				op = httpx.WSBinary
				msg, err = base64.StdEncoding.AppendDecode(nil, s.body)
			}
			if err != nil {
				rec.CheckFailed(st.Send, 0, CheckMessageBuilt, nil, err, failure.Sought{})
				return
			}
			begin := time.Now()
			err = c.WriteMessage(op, msg, begin.Add(st.Timeout))
			rec.sample(st.Send, 101, err, time.Since(begin), 0, int64(len(msg)))
			if err != nil {
				return
			}
			sent = begin
		case WSReceive:
			begin := time.Now()
			from := begin
			if !sent.IsZero() {
				from, sent = sent, time.Time{}
			}
			timeout := a.Timeout
			if timeout <= 0 {
				timeout = st.Timeout
			}
			_, msg, err := c.ReadMessage(begin.Add(timeout))
			for n := 0; err == nil && len(a.Skip) > 0 && bytes.Contains(msg, a.Skip) && n < maxSkipped; n++ {
				_, msg, err = c.ReadMessage(begin.Add(timeout))
			}
			x := &httpx.Exchange{Status: 101, Body: msg, Err: err}
			if err != nil {
				x.Status = 0
			}
			rec.sample(st.ID, x.Status, err, time.Since(from), 0, int64(len(msg)))
			msgStep.Checks, msgStep.Captures, msgStep.CheckBase = a.Checks, a.Captures, a.CheckBase
			msgStep.After(s, rec, x)
			if err != nil {
				return
			}
		case WSThink:
			d := a.Lo
			if a.Hi > a.Lo {
				d += time.Duration(rand.Int64N(int64(a.Hi-a.Lo) + 1))
			}
			time.Sleep(d)
		case WSClose:
			return
		}
	}
}
