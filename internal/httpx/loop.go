package httpx

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure every exchange of a Loop.
type Options struct {
	// Timeout bounds one exchange, from Do (including any connect and TLS
	// handshake) to the last byte of the response. Zero means DefaultTimeout.
	Timeout        time.Duration
	MaxHeaderBytes int   // zero: DefaultMaxHeaderBytes
	MaxBodyBytes   int64 // zero: DefaultMaxBodyBytes
	// Engine is the socket layer; EngineAuto (zero) reads EngineEnv and
	// defaults to epoll on Linux, portable elsewhere.
	Engine Engine
}

// DefaultTimeout bounds an exchange when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// A Handler learns that an exchange finished, successfully or not. It runs on
// the loop's goroutine and may start the next exchange or set a timer.
type Handler interface {
	Done(c *Conn, x *Exchange)
}

// A Timer fires on the loop's goroutine at the time it was set for.
type Timer interface {
	Fire(now time.Duration)
}

// Loop is an event loop that runs many HTTP/1.1 connections on one
// goroutine: no goroutine or buffer per connection on the epoll engine, so
// thousands of connections cost little memory and each request costs little
// CPU, the way wrk does (see the package comment for the engines).
//
// Everything about a Loop and its Conns happens on the goroutine that calls
// Run, except Post and Stop, which any goroutine may call. Times are durations
// since the Loop's epoch (a monotonic clock shared by all loops of a run).
type Loop struct {
	opts   Options
	engine Engine
	epoch  time.Time
	poll   poller

	active []*Conn  // open connections, for the timeout sweep
	spare  [][]byte // buffers for kept headers and bodies, between exchanges
	dec    decoders // content-coding decoders, reset for each body
	timers timerHeap
	h2     *h2Loop // HTTP/2 groups and connections (h2.go)

	sweepEvery time.Duration
	nextSweep  time.Duration

	mu      sync.Mutex
	inbox   []func()
	closed  bool // the poller is closed: nothing is posted or woken any more (under mu)
	woken   atomic.Bool
	stopped atomic.Bool
}

// NewLoop creates a loop. epoch is the zero of its clock.
func NewLoop(epoch time.Time, opts Options) (*Loop, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	engine, err := resolveEngine(opts.Engine)
	if err != nil {
		return nil, err
	}
	l := &Loop{opts: opts, engine: engine, epoch: epoch}
	if l.poll, err = newPoller(l, engine); err != nil {
		return nil, err
	}
	// Sweep for timed-out exchanges often enough that a timeout fires within 5%.
	l.sweepEvery = min(max(opts.Timeout/20, time.Millisecond), 100*time.Millisecond)
	return l, nil
}

// Now is the loop's clock: the time since its epoch.
func (l *Loop) Now() time.Duration { return time.Since(l.epoch) }

// Epoch is the zero of the loop's clock.
func (l *Loop) Epoch() time.Time { return l.epoch }

// Options returns the loop's options.
func (l *Loop) Options() Options { return l.opts }

// Engine is the engine the loop runs on: never EngineAuto.
func (l *Loop) Engine() Engine { return l.engine }

// getBuf lends a buffer for a response's header block or body. Connections
// hold these only while an exchange is in flight, so thousands of idle
// connections (VUs in think time) hold none.
func (l *Loop) getBuf() []byte {
	if n := len(l.spare); n > 0 {
		b := l.spare[n-1]
		l.spare = l.spare[:n-1]
		return b[:0]
	}
	return make([]byte, 0, 1<<10)
}

// putBuf takes a buffer back; a big one is left to the garbage collector.
func (l *Loop) putBuf(b []byte) {
	if b != nil && cap(b) <= 1<<20 && len(l.spare) < 256 {
		l.spare = append(l.spare, b)
	}
}

// At makes t fire at the given time on the loop.
func (l *Loop) At(at time.Duration, t Timer) { l.timers.push(at, t) }

// Post runs f on the loop's goroutine soon. Any goroutine may call it.
//
// Once Run has returned, f is dropped: a goroutine that outlives the loop
// (a socket step's) must not wake a poller whose descriptors are closed and
// may be another file's by then.
func (l *Loop) Post(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.inbox = append(l.inbox, f)
	l.wake()
}

// Stop makes Run return after closing every connection. Exchanges in flight
// are abandoned: their handlers are not called. Any goroutine may call it.
func (l *Loop) Stop() {
	l.stopped.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.wake()
	}
}

func (l *Loop) wake() {
	if l.woken.CompareAndSwap(false, true) {
		l.poll.wake()
	}
}

// Run runs the loop until Stop. On the epoll engine it locks the goroutine
// to its OS thread so that the thread's timer slack can be set small: timers
// then fire within microseconds, which open workloads need to send requests
// on time.
func (l *Loop) Run() error {
	release := l.poll.start()
	defer release()
	defer l.closeAll()
	for !l.stopped.Load() {
		if err := l.poll.wait(l.timeout()); err != nil {
			return err
		}
		now := l.Now()
		l.runTimers(now)
		if now >= l.nextSweep {
			l.sweep(now)
		}
	}
	return nil
}

// timeout is how long Run may wait for events: until the next timer or sweep.
func (l *Loop) timeout() time.Duration {
	wake := time.Duration(-1)
	if at, ok := l.timers.next(); ok {
		wake = at
	}
	if len(l.active) > 0 && (wake < 0 || l.nextSweep < wake) {
		wake = l.nextSweep
	}
	if wake < 0 {
		return -1
	}
	return max(wake-l.Now(), 0)
}

// drainInbox runs what Post queued; the poller calls it once woken.
func (l *Loop) drainInbox() {
	l.woken.Store(false)
	l.mu.Lock()
	fs := l.inbox
	l.inbox = nil
	l.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (l *Loop) runTimers(now time.Duration) {
	for {
		at, ok := l.timers.next()
		if !ok || at > now {
			return
		}
		t := l.timers.pop()
		t.Fire(now)
		if l.stopped.Load() {
			return
		}
	}
}

// sweep fails the exchanges that are past their deadline.
func (l *Loop) sweep(now time.Duration) {
	l.nextSweep = now + l.sweepEvery
	for i := 0; i < len(l.active); i++ {
		c := l.active[i]
		if c.x != nil && now >= c.deadline {
			c.fail(fmt.Errorf("%w after %v", ErrTimeout, l.opts.Timeout), FailureTimeout)
			i-- // fail removed c from active; another conn took its place
		}
	}
}

// register adds c to the open connections; c.close removes it.
func (l *Loop) register(c *Conn) {
	c.live = true
	c.activeIdx = len(l.active)
	l.active = append(l.active, c)
}

func (l *Loop) unregister(c *Conn) {
	c.live = false
	last := l.active[len(l.active)-1]
	l.active[c.activeIdx] = last
	last.activeIdx = c.activeIdx
	l.active = l.active[:len(l.active)-1]
}

func (l *Loop) closeAll() {
	for len(l.active) > 0 {
		c := l.active[len(l.active)-1]
		c.x, c.h = nil, nil
		c.close()
	}
	l.closeH2()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.poll.close()
}

// ErrTimeout is the error of an exchange that did not finish within the timeout.
var ErrTimeout = errors.New("timeout")

// timerHeap is a binary min-heap of timers by time; equal times fire in the
// order they were set.
type timerHeap struct {
	items []timerItem
	seq   uint64
}

type timerItem struct {
	at  time.Duration
	seq uint64
	t   Timer
}

func (h *timerHeap) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (h *timerHeap) push(at time.Duration, t Timer) {
	h.seq++
	h.items = append(h.items, timerItem{at, h.seq, t})
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *timerHeap) next() (time.Duration, bool) {
	if len(h.items) == 0 {
		return 0, false
	}
	return h.items[0].at, true
}

func (h *timerHeap) pop() Timer {
	t := h.items[0].t
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items[last] = timerItem{}
	h.items = h.items[:last]
	i := 0
	for {
		left, right, small := 2*i+1, 2*i+2, i
		if left < len(h.items) && h.less(left, small) {
			small = left
		}
		if right < len(h.items) && h.less(right, small) {
			small = right
		}
		if small == i {
			return t
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
}

// Len is the number of timers set and not yet fired.
func (h *timerHeap) Len() int { return len(h.items) }
