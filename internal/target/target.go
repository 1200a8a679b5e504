// Package target is loadlab's tunable test server (`loadlab target`): a real
// HTTP server whose behaviour is set by flags or per request by query
// parameters: a fixed delay with jitter, stalls in which the whole server
// stops answering, CPU work per request, a mix of status codes, a body size,
// and a bound on requests served at once (like Puma's threads). The project's
// tests run load against it; users run it to see what loadlab reports.
package target

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/websocket"
)

// Options set the server's behaviour. Query parameters of the same names
// (delay, jitter, cpu, status, body) override them per request.
type Options struct {
	Delay  time.Duration // every response waits this long
	Jitter time.Duration // plus or minus up to this much, uniformly
	// Stall: every StallEvery, the whole server stops answering for StallFor.
	StallFor, StallEvery time.Duration
	CPU                  time.Duration // CPU time burnt per request
	Status               []StatusWeight
	BodyBytes            int
	// Workers bounds the requests served at once; others wait in line. Zero
	// means no bound.
	Workers int
	// Hold is bytes each request allocates, touches and keeps for the life of
	// the server: a leak of known size, to test memory limits.
	Hold int
	// WorkerMemory is bytes each of Workers allocates, touches and keeps
	// from the start, as a forking server's workers hold a heap each: a
	// server whose memory grows by a known amount per worker.
	WorkerMemory int
}

// StatusWeight is one entry of a status mix: Code with relative Weight.
type StatusWeight struct {
	Code, Weight int
}

// ParseStatusMix reads "200", or "200:90,500:10".
func ParseStatusMix(s string) ([]StatusWeight, error) {
	var mix []StatusWeight
	for part := range strings.SplitSeq(s, ",") {
		code, weight, found := strings.Cut(strings.TrimSpace(part), ":")
		c, err := strconv.Atoi(code)
		if err != nil || c < 100 || c > 599 {
			return nil, fmt.Errorf("bad status %q: want a code from 100 to 599", code)
		}
		w := 1
		if found {
			w, err = strconv.Atoi(weight)
			if err != nil || w < 0 {
				return nil, fmt.Errorf("bad weight %q for status %d", weight, c)
			}
		}
		mix = append(mix, StatusWeight{c, w})
	}
	total := 0
	for _, sw := range mix {
		total += sw.Weight
	}
	if total == 0 {
		return nil, fmt.Errorf("status mix %q has no weight", s)
	}
	return mix, nil
}

// Server is the handler plus the state it shares across requests.
type Server struct {
	opts      Options
	heldMu    sync.Mutex
	held      [][]byte // what Hold keeps
	start     time.Time
	slots     chan struct{}
	body      []byte
	Served    atomic.Int64
	running   atomic.Int64
	wakeDelay atomic.Int64 // ns: how late a nanosleep wakes, on average
}

// New makes a server; its stall clock starts now.
func New(opts Options) (*Server, error) {
	if err := Check(opts); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, start: time.Now()}
	if opts.Workers > 0 {
		s.slots = make(chan struct{}, opts.Workers)
	}
	s.body = fill(opts.BodyBytes)
	for range opts.Workers {
		if opts.WorkerMemory > 0 {
			s.hold(opts.WorkerMemory)
		}
	}
	return s, nil
}

// Check says what is wrong with opts, as New would, without making a server
// (which allocates the workers' memory, never freed).
func Check(opts Options) error {
	for _, o := range []struct {
		name     string
		negative bool
	}{{"delay", opts.Delay < 0}, {"jitter", opts.Jitter < 0}, {"cpu", opts.CPU < 0}, {"body", opts.BodyBytes < 0}, {"workers", opts.Workers < 0}, {"hold", opts.Hold < 0}, {"worker-memory", opts.WorkerMemory < 0}} {
		if o.negative {
			return fmt.Errorf("target: --%s must not be negative", o.name)
		}
	}
	if (opts.StallFor > 0) != (opts.StallEvery > 0) || opts.StallFor >= opts.StallEvery && opts.StallEvery > 0 {
		return fmt.Errorf("target: a stall needs a length shorter than its period, got %v every %v", opts.StallFor, opts.StallEvery)
	}
	if opts.WorkerMemory > 0 && opts.Workers == 0 {
		return fmt.Errorf("target: --worker-memory needs --workers")
	}
	return nil
}

func fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return b
}

// ServeHTTP answers every path the same way; /health answers at once, and
// /ws is a WebSocket that echoes every message back at once, whatever its
// Origin (for WebSocket plans, and bench/memory.sh's sockets).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		w.Write([]byte("ok\n"))
		return
	case "/ws":
		// golang.org/x/net/websocket's server frames and unmasks, copying
		// each message back; its handshake takes any Origin (a load tool
		// sends none).
		websocket.Server{
			Handshake: func(*websocket.Config, *http.Request) error { return nil },
			Handler:   func(c *websocket.Conn) { io.Copy(c, c) },
		}.ServeHTTP(w, r)
		return
	}
	o, body, err := s.requestOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-r.Context().Done():
			return
		}
	}
	s.running.Add(1)
	defer s.running.Add(-1)
	s.waitStall()
	if o.CPU > 0 {
		burn(o.CPU)
	}
	if o.Hold > 0 {
		s.hold(o.Hold)
	}
	if d := o.Delay + jitter(o.Jitter); d > 0 {
		s.sleep(d)
	}
	s.waitStall() // a response due during a stall waits for its end too
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(pick(o.Status))
	w.Write(body)
	s.Served.Add(1)
}

// hold allocates n bytes, writes every page so that they count as resident,
// and keeps them.
func (s *Server) hold(n int) {
	b := allocate(n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	s.heldMu.Lock()
	s.held = append(s.held, b)
	s.heldMu.Unlock()
}

// requestOptions applies the query parameters to the server's options.
func (s *Server) requestOptions(r *http.Request) (Options, []byte, error) {
	o, body := s.opts, s.body
	q := r.URL.Query()
	if len(q) == 0 {
		return o, body, nil
	}
	for name, dst := range map[string]*time.Duration{"delay": &o.Delay, "jitter": &o.Jitter, "cpu": &o.CPU} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return o, nil, fmt.Errorf("bad %s %q", name, v)
			}
			*dst = d
		}
	}
	if v := q.Get("status"); v != "" {
		mix, err := ParseStatusMix(v)
		if err != nil {
			return o, nil, err
		}
		o.Status = mix
	}
	if v := q.Get("body"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 64<<20 {
			return o, nil, fmt.Errorf("bad body %q: want bytes from 0 to 67108864", v)
		}
		body = fill(n)
	}
	return o, body, nil
}

// waitStall blocks while the server is in a stall.
func (s *Server) waitStall() {
	if s.opts.StallEvery <= 0 {
		return
	}
	phase := time.Since(s.start) % s.opts.StallEvery
	if phase < s.opts.StallFor {
		time.Sleep(s.opts.StallFor - phase)
	}
}

// sleep waits for d precisely, so that a "20 ms" server answers in 20 ms and
// not 21. Go's timers may wake up to a millisecond late (the runtime polls with
// millisecond timeouts), and a thread woken from a timer arrives some tens or
// hundreds of microseconds late (more on virtual machines). So the last 2 ms
// are a nanosleep that aims early by the wake-up delay seen so far (a moving
// average), and a short spin up to the deadline. Under heavy concurrency the
// spin is skipped, so the delay may then run long by about that wake-up delay.
func (s *Server) sleep(d time.Duration) {
	deadline := time.Now().Add(d)
	if d > 2*time.Millisecond {
		time.Sleep(d - 2*time.Millisecond)
	}
	spin := s.running.Load() <= int64(2*runtime.GOMAXPROCS(0))
	slack := time.Duration(0)
	if spin {
		slack = time.Duration(s.wakeDelay.Load())
	}
	for {
		left := time.Until(deadline)
		if left <= slack {
			break
		}
		aim := left - slack
		before := time.Now()
		nanosleep(aim)
		late := int64(time.Since(before) - aim)
		old := s.wakeDelay.Load()
		s.wakeDelay.Store(min(max(old+(late-old)/8, 0), int64(maxWakeDelay)))
	}
	for time.Now().Before(deadline) {
	}
}

// maxWakeDelay bounds the spin at the end of a delay.
const maxWakeDelay = 500 * time.Microsecond

func jitter(j time.Duration) time.Duration {
	if j <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(2*j+1))) - j
}

func pick(mix []StatusWeight) int {
	if len(mix) == 0 {
		return http.StatusOK
	}
	total := 0
	for _, sw := range mix {
		total += sw.Weight
	}
	n := rand.IntN(total)
	for _, sw := range mix {
		if n < sw.Weight {
			return sw.Code
		}
		n -= sw.Weight
	}
	return mix[len(mix)-1].Code
}

// burn spends d of CPU time on this thread, however busy the machine is.
func burn(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	x := uint64(1)
	for threadCPU()-start < d {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Add(x)
}

var sink atomic.Uint64 // keeps the burn loop from being optimized away

// Serve listens on addr and serves until ctx is done. ready, if not nil, is
// called with the listening address (useful with port 0).
func Serve(ctx context.Context, addr string, opts Options, ready func(net.Addr)) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		return nil
	}
}
