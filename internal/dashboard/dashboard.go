// Package dashboard serves the live page of --dashboard: a self-contained
// HTML page (web/page.html, with the script and styles of web/dist, all
// embedded) fed over Server-Sent Events.
//
// The page's script is web/src (charts drawn with uPlot), bundled by
// scripts/build-dashboard with esbuild from tools/npm at development time;
// the bundle is committed, so go install and go run need no npm, and
// TestBundleIsCurrent fails when it is out of date with its sources.
//
// The board is one more reader of telemetry.Live: a goroutine of its own
// takes a snapshot once a second, turns it into a frame (JSON, encoded
// once) and keeps it in a bounded history. A page, however late it opens,
// gets the whole history and then each new frame; a reconnect with
// Last-Event-ID gets the frames after that id. Nothing a page does reaches
// the load: the handlers only read frames already encoded.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/stats"
	"github.com/loadlab/loadlab/internal/telemetry"
)

// DefaultAddr is where --dashboard serves when given no address.
const DefaultAddr = "127.0.0.1:5665"

// DefaultHistory is how many events the board keeps: an hour of frames.
// Past it, the older half is thinned (every other frame dropped), so that
// memory stays bounded while a page opened late still draws the whole run.
const DefaultHistory = 3600

var (
	//go:embed web/page.html
	page []byte
	//go:embed web/dist/app.js
	appJS []byte
	//go:embed web/dist/app.css
	appCSS []byte
)

// Options configure Start.
type Options struct {
	Addr      string // "" is DefaultAddr; a port alone is on loopback
	Live      *telemetry.Live
	ReportDir string        // served at /report/ (the run's --out), if set
	Quota     int64         // the server's memory_quota in bytes, 0 if none
	Interval  time.Duration // between frames; 0 is a second
	History   int           // events kept; 0 is DefaultHistory
	// Token is the token off loopback; "" makes a random one.
	Token string
}

// Board is a running dashboard.
type Board struct {
	// Addr is the address it listens on; Loopback says only this machine
	// reaches it. Token is empty on loopback; elsewhere the page and the
	// events need it.
	Addr     string
	Loopback bool
	Token    string

	o    Options
	srv  *http.Server
	done chan struct{} // the server has stopped
	stop chan struct{} // the sampler should stop
	quit chan struct{} // the sampler has stopped

	// intervals counts the engine's intervals (Interval) since the last
	// frame.
	intervals atomic.Int64

	mu      sync.Mutex
	events  []event
	seq     int64
	changed chan struct{} // closed and replaced on each new event
	ended   bool
	prev    telemetry.Snapshot
	prevCPU time.Duration
	hasPrev bool
	start   time.Time
	closing bool
	// points are the runs of each point ended so far, in order; endedHere
	// counts the runs ended since the board started (not those an
	// experiment resumed with), for the ETA.
	points    map[string][]Run
	endedHere int
}

type event struct {
	id   int64
	name string // "frame" or "end"
	data []byte
}

// Frame is one second of the run, as the page gets it. Counters are
// totals so far (every run of an experiment); rates and the first set of
// percentiles are over the frame's interval; PAll are over the run so far.
type Frame struct {
	Seq        int64                     `json:"seq"`
	T          float64                   `json:"t"` // seconds since the board started
	Running    bool                      `json:"running"`
	Runs       int64                     `json:"runs"`
	Requests   int64                     `json:"requests"`
	Responses  int64                     `json:"responses"`
	Errors     int64                     `json:"errors"`
	Iterations int64                     `json:"iterations"`
	Dropped    int64                     `json:"dropped"`
	Late       int64                     `json:"late"`
	Bytes      int64                     `json:"bytes"`
	VUs        int64                     `json:"vus"`
	RPS        float64                   `json:"rps"`  // requests finished per second
	P          [3]float64                `json:"p"`    // p50, p95, p99 in ms over the interval
	PAll       [3]float64                `json:"pall"` // over the run so far
	Classes    [metrics.NumClasses]int64 `json:"classes"`
	Checks     [2]int64                  `json:"checks"` // passed, failed
	Steps      []StepFrame               `json:"steps"`
	Server     bool                      `json:"server"`
	ServerCPU  float64                   `json:"server_cpu"` // percent of one core
	ServerRSS  int64                     `json:"server_rss"` // bytes
	Quota      int64                     `json:"quota,omitempty"`
	OwnCPU     float64                   `json:"own_cpu"` // loadlab's, percent of one core
	Cores      int                       `json:"cores"`   // the CPUs loadlab may use (GOMAXPROCS)
}

// StepFrame is one step's part of a frame.
type StepFrame struct {
	Name    string                    `json:"name"`
	RPS     float64                   `json:"rps"`
	P       [3]float64                `json:"p"`
	PAll    [3]float64                `json:"pall"`
	Classes [metrics.NumClasses]int64 `json:"classes"`
	Checks  [2]int64                  `json:"checks"`
}

// Run is an experiment's run that has ended, sent as a "run" event: the
// runs in their order, each point's figures as its runs end, and when the
// experiment should end at this pace.
type Run struct {
	Run         int        `json:"run"`
	Runs        int        `json:"runs"`
	Point       string     `json:"point"`
	RPS         float64    `json:"rps"`
	P           [3]float64 `json:"p"` // p50, p95, p99 in ms
	ErrorRate   float64    `json:"error_rate"`
	Interrupted bool       `json:"interrupted,omitempty"`
	ETASeconds  float64    `json:"eta_s"` // until the last run ends: the time per run ended since the board started, times the runs left
	// Capacity is a capacity search's answer (the rate a second, or the
	// VUs, as CapacityBy says), when the run is one; 0 otherwise.
	Capacity   float64 `json:"capacity,omitempty"`
	CapacityBy string  `json:"capacity_by,omitempty"`
}

// Point is an experiment's point as its runs end, sent as a "point" event
// after each "run": each figure's median over the runs of the point ended
// so far, with its confidence interval (stats.Summarize, the level of the
// experiment's reports; none until there are runs enough).
type Point struct {
	Point      string   `json:"point"`
	Runs       int      `json:"runs"` // ended so far
	RPS        Figure   `json:"rps"`
	P          []Figure `json:"p"` // p50, p95, p99 in ms
	ErrorRate  Figure   `json:"error_rate"`
	Capacity   *Figure  `json:"capacity,omitempty"`
	CapacityBy string   `json:"capacity_by,omitempty"`
}

// Figure is a median and its interval.
type Figure struct {
	Median  float64 `json:"median"`
	Bounded bool    `json:"bounded"` // Lo and Hi are set: runs enough for the interval
	Lo      float64 `json:"lo,omitempty"`
	Hi      float64 `json:"hi,omitempty"`
}

func figure(samples []float64) Figure {
	s := stats.Summarize(samples, stats.DefaultConfidence)
	return Figure{Median: s.Center, Bounded: s.Bounded, Lo: s.Lo, Hi: s.Hi}
}

// End is the last event: the run is over.
type End struct {
	Interrupted bool     `json:"interrupted,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	Report      string   `json:"report,omitempty"` // the report's URL path, if served
	Error       string   `json:"error,omitempty"`
}

// ClassNames are the page's names of the classes, in Frame.Classes order.
var ClassNames = func() (out [metrics.NumClasses]string) {
	for c := range metrics.NumClasses {
		out[c] = metrics.Class(c).String()
	}
	return out
}()

// ListenAddr is the address --dashboard ADDR listens on: "" is DefaultAddr,
// a port alone (":5665", "5665") is on loopback, a host is taken as given.
func ListenAddr(addr string) (string, error) {
	if addr == "" {
		return DefaultAddr, nil
	}
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want HOST:PORT or :PORT, such as %s: %w", DefaultAddr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Start listens (a port in use is an error here, before any load) and
// starts taking frames from o.Live.
func Start(o Options) (*Board, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.History <= 0 {
		o.History = DefaultHistory
	}
	if o.History < 4 {
		o.History = 4
	}
	a, err := ListenAddr(o.Addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s is in use (another loadlab or another server listens there; give another address, such as --dashboard=127.0.0.1:5666): %w", a, err)
		}
		return nil, err
	}
	b := &Board{o: o, Addr: ln.Addr().String(), done: make(chan struct{}), stop: make(chan struct{}), quit: make(chan struct{}), changed: make(chan struct{}), start: time.Now()}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		b.Loopback = tcp.IP.IsLoopback()
	}
	if !b.Loopback && o.Token != "" {
		if len(o.Token) < 16 {
			ln.Close()
			return nil, fmt.Errorf("a token of %d characters is too short to guess hard; give 16 or more", len(o.Token))
		}
		b.Token = o.Token
	} else if !b.Loopback {
		var t [16]byte
		if _, err := rand.Read(t[:]); err != nil {
			ln.Close()
			return nil, fmt.Errorf("making the dashboard's token: %w", err)
		}
		b.Token = hex.EncodeToString(t[:])
	}
	b.srv = &http.Server{Handler: b.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(ln) // ErrServerClosed after Close
	}()
	b.prevCPU, _ = ownCPU()
	b.frame() // a page opened at once has a frame to draw
	go b.sample()
	return b, nil
}

// SetQuota sets the server's memory_quota, in bytes, for the frames to come.
func (b *Board) SetQuota(q int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.o.Quota = q
}

// SetReportDir sets the directory served at /report/ (an experiment's,
// known after Start).
func (b *Board) SetReportDir(dir string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.o.ReportDir = dir
}

// URL is the page's address.
func (b *Board) URL() string {
	host, port, _ := net.SplitHostPort(b.Addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// Interval says that the live figures have taken one more of the engine's
// intervals: call it after telemetry.Live.Interval, on the same goroutine
// (the engine's collector, once a second). It makes a frame at once, from
// a snapshot that holds exactly the intervals counted, so that frames
// follow the engine's seconds rather than a clock of their own, which
// would alias with them (a frame with no interval, then one with two).
// That is a snapshot and an encoding, a fraction of a millisecond, once a
// second and off the workers (BenchmarkFrame).
func (b *Board) Interval() {
	b.intervals.Add(1)
	b.frameOn(true)
}

// sample makes a frame whenever none came for one and a half intervals
// (before the load, between an experiment's runs, after it), until Close.
func (b *Board) sample() {
	defer close(b.quit)
	t := time.NewTicker(b.o.Interval / 2)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.mu.Lock()
			idle := time.Since(b.prev.Time) >= b.o.Interval*3/2
			b.mu.Unlock()
			if idle {
				b.frame()
			}
		case <-b.stop:
			return
		}
	}
}

// frame adds a frame made from a new snapshot.
func (b *Board) frame() { b.frameOn(false) }

// frameOn makes a frame; for an interval, only if no other frame took it
// meanwhile (the idle sampler's, between Interval's count and its lock).
func (b *Board) frameOn(interval bool) {
	// The snapshot is taken under b.mu, so that frames made on two
	// goroutines (an interval's, the idle sampler's) stay in order.
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || interval && b.intervals.Load() == 0 {
		return
	}
	n := b.intervals.Swap(0)
	s := b.o.Live.Snapshot()
	cpu, cpuOK := ownCPU()
	f := Frame{
		T: s.Time.Sub(b.start).Seconds(), Running: s.Running, Runs: s.Runs,
		Requests: s.Requests, Responses: s.Responses, Errors: s.Errors, Iterations: s.Iterations,
		Dropped: s.Dropped, Late: s.Late, Bytes: s.Bytes, VUs: s.VUs,
		Server: s.Server, ServerCPU: s.ServerCPU, ServerRSS: s.ServerRSS, Quota: b.o.Quota,
		Cores: runtime.GOMAXPROCS(0),
	}
	// Rates are over the engine's intervals the frame holds (each
	// b.o.Interval long), or the time since the last frame when it holds
	// none.
	dt := b.o.Interval.Seconds()
	var prevSteps map[string]*telemetry.StepFigures
	if b.hasPrev {
		if n > 0 {
			dt = float64(n) * b.o.Interval.Seconds()
		} else if d := s.Time.Sub(b.prev.Time).Seconds(); d > 0 {
			dt = d
		}
		prevSteps = make(map[string]*telemetry.StepFigures, len(b.prev.Steps))
		for i := range b.prev.Steps {
			prevSteps[stepName(&b.prev.Steps[i])] = &b.prev.Steps[i]
		}
		if d := s.Time.Sub(b.prev.Time).Seconds(); cpuOK && d > 0 {
			f.OwnCPU = 100 * (cpu - b.prevCPU).Seconds() / d
		}
	}
	f.RPS = float64(s.Requests-b.prev.Requests) / dt
	all := make([]uint64, metrics.NumStepBuckets)
	allNow := make([]uint64, metrics.NumStepBuckets)
	for i := range s.Steps {
		st := &s.Steps[i]
		sf := StepFrame{Name: stepName(st), Classes: st.Count, Checks: [2]int64{st.Checks.Passed, st.Checks.Failed}}
		d := append([]uint64(nil), st.Buckets...)
		var n, n0 int64
		for _, c := range st.Count {
			n += c
		}
		if p := prevSteps[sf.Name]; p != nil {
			for j := range d {
				if j < len(p.Buckets) {
					d[j] -= p.Buckets[j]
				}
			}
			for _, c := range p.Count {
				n0 += c
			}
		}
		sf.RPS = float64(n-n0) / dt
		sf.P = percentiles(d)
		sf.PAll = percentiles(st.Buckets)
		for j := range d {
			all[j] += d[j]
			allNow[j] += st.Buckets[j]
		}
		for c := range f.Classes {
			f.Classes[c] += st.Count[c]
		}
		f.Checks[0] += st.Checks.Passed
		f.Checks[1] += st.Checks.Failed
		f.Steps = append(f.Steps, sf)
	}
	f.P, f.PAll = percentiles(all), percentiles(allNow)
	b.prev, b.prevCPU, b.hasPrev = s, cpu, true
	b.seq++
	f.Seq = b.seq
	data, _ := json.Marshal(f) // a Frame always encodes
	b.add(event{id: b.seq, name: "frame", data: data})
}

func stepName(st *telemetry.StepFigures) string {
	if st.Scenario == "" {
		return st.Step
	}
	return st.Scenario + " / " + st.Step
}

// add keeps e, thinning the older half of the history when it is full;
// b.mu is held.
func (b *Board) add(e event) {
	if len(b.events) >= b.o.History {
		half := len(b.events) / 2
		kept := b.events[:0]
		for i, old := range b.events {
			if i >= half || i%2 == 0 || old.name != "frame" {
				kept = append(kept, old)
			}
		}
		clear(b.events[len(kept):])
		b.events = kept
	}
	b.events = append(b.events, e)
	close(b.changed)
	b.changed = make(chan struct{})
}

// percentiles are p50, p95 and p99 in ms of a histogram over
// metrics.StepBounds (its last bucket has no upper bound), interpolated
// within the bucket; zeros when it is empty.
func percentiles(buckets []uint64) (out [3]float64) {
	var n uint64
	for _, c := range buckets {
		n += c
	}
	if n == 0 {
		return out
	}
	for i, q := range [3]float64{0.50, 0.95, 0.99} {
		rank := q * float64(n)
		var cum uint64
		for j, c := range buckets {
			if c == 0 || float64(cum+c) < rank {
				cum += c
				continue
			}
			lo := 0.0
			if j > 0 {
				lo = float64(metrics.StepBounds[j-1])
			}
			if j >= len(metrics.StepBounds) {
				out[i] = lo / 1e3
				break
			}
			hi := float64(metrics.StepBounds[j])
			out[i] = (lo + (hi-lo)*(rank-float64(cum))/float64(c)) / 1e3
			break
		}
	}
	return out
}

// RunStart is an experiment's run as it starts, sent as a "run-start"
// event: the page shows which run of how many is going, at which point.
type RunStart struct {
	Run   int    `json:"run"`
	Runs  int    `json:"runs"`
	Point string `json:"point"`
}

// RunStarted adds an experiment's run that starts.
func (b *Board) RunStarted(r RunStart) { b.emit("run-start", r) }

// Schedule is an experiment's planned order, sent once as a "schedule"
// event before its first run: every run in the order it runs (shuffled
// with the experiment's seed), those a resume found done with their
// figures. It stays in the history, so a page opened late lists the runs
// to come too.
type Schedule struct {
	Runs []Slot `json:"runs"`
}

// Slot is a run of an experiment's planned order.
type Slot struct {
	Run   int    `json:"run"` // from 1
	Point string `json:"point"`
	Rep   int    `json:"rep"` // from 1
	// Done is a run done before (a resume skips it), with its figures.
	Done      bool       `json:"done,omitempty"`
	RPS       float64    `json:"rps,omitempty"`
	P         [3]float64 `json:"p"` // p50, p95, p99 in ms; zeros for a run to come
	ErrorRate float64    `json:"error_rate,omitempty"`
}

// Scheduled adds an experiment's planned order.
func (b *Board) Scheduled(s Schedule) { b.emit("schedule", s) }

// RunEnded adds an experiment's run, with its ETA, then its point's
// figures over its runs ended so far. The ETA is the time since the board
// started over the runs ended since, times the runs left: a run is
// whatever the experiment's point runs (a capacity search is one run, all
// its steps), and runs an experiment resumed with took none of this time.
func (b *Board) RunEnded(r Run) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.endedHere++
	if r.Run > 0 && r.Runs >= r.Run {
		r.ETASeconds = time.Since(b.start).Seconds() / float64(b.endedHere) * float64(r.Runs-r.Run)
	}
	b.seq++
	data, _ := json.Marshal(r)
	b.add(event{id: b.seq, name: "run", data: data})
	if r.Interrupted {
		return
	}
	if b.points == nil {
		b.points = map[string][]Run{}
	}
	runs := append(b.points[r.Point], r)
	b.points[r.Point] = runs
	pt := Point{Point: r.Point, Runs: len(runs), CapacityBy: r.CapacityBy}
	col := func(get func(Run) float64) Figure {
		xs := make([]float64, len(runs))
		for i, x := range runs {
			xs[i] = get(x)
		}
		return figure(xs)
	}
	pt.RPS = col(func(x Run) float64 { return x.RPS })
	for q := range 3 {
		pt.P = append(pt.P, col(func(x Run) float64 { return x.P[q] }))
	}
	pt.ErrorRate = col(func(x Run) float64 { return x.ErrorRate })
	if r.CapacityBy != "" {
		c := col(func(x Run) float64 { return x.Capacity })
		pt.Capacity = &c
	}
	b.seq++
	data, _ = json.Marshal(pt)
	b.add(event{id: b.seq, name: "point", data: data})
}

// End takes a last frame, then says that the run is over: a page shows e
// and links the report. Frames stop.
func (b *Board) End(e End) {
	b.frame()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	if b.o.ReportDir != "" {
		if _, err := os.Stat(filepath.Join(b.o.ReportDir, "report.html")); err == nil {
			e.Report = "/report/report.html"
		}
	}
	b.ended = true
	b.seq++
	data, _ := json.Marshal(e)
	b.add(event{id: b.seq, name: "end", data: data})
}

// Close stops the board: the pages' streams end (a page then says loadlab
// has stopped).
func (b *Board) Close() error {
	b.mu.Lock()
	if !b.closing {
		b.closing = true
		close(b.stop)
		close(b.changed)
		b.changed = make(chan struct{})
	}
	b.mu.Unlock()
	<-b.quit
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := b.srv.Shutdown(ctx)
	if err != nil {
		err = b.srv.Close()
	}
	<-b.done
	return err
}

// eventsAfter are the events kept after id last, the channel closed on the
// next one, and whether the board is closing.
func (b *Board) eventsAfter(last int64) ([]event, chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := len(b.events)
	for i > 0 && b.events[i-1].id > last {
		i--
	}
	return append([]event(nil), b.events[i:]...), b.changed, b.closing
}

func (b *Board) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		w.Write(page)
	})
	for name, f := range map[string]struct {
		typ  string
		data []byte
	}{"app.js": {"text/javascript; charset=utf-8", appJS}, "app.css": {"text/css; charset=utf-8", appCSS}} {
		mux.HandleFunc("GET /"+name, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", f.typ)
			h.Set("Cache-Control", "no-store")
			w.Write(f.data)
		})
	}
	mux.HandleFunc("GET /events", b.serveEvents)
	mux.Handle("GET /report/", b.authorized(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		dir := b.o.ReportDir
		b.mu.Unlock()
		if dir == "" {
			http.NotFound(w, r)
			return
		}
		http.StripPrefix("/report/", http.FileServer(http.Dir(dir))).ServeHTTP(w, r)
	})))
	return b.guard(mux)
}

// pageCSP lets the page load its own script and styles and reach this
// server only; reportCSP is report.html's, under /report/ (its inline
// script and styles, nothing from elsewhere either).
const (
	pageCSP   = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'none'; base-uri 'none'"
	reportCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'none'; base-uri 'none'"
)

// guard sets the headers every answer has: a Content-Security-Policy that
// lets the page reach this server only, and, on loopback, refuses a Host that is not loopback (a page
// elsewhere rebinding a name to 127.0.0.1).
func (b *Board) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if strings.HasPrefix(r.URL.Path, "/report/") {
			h.Set("Content-Security-Policy", reportCSP)
		} else {
			h.Set("Content-Security-Policy", pageCSP)
		}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if b.Loopback && !telemetry.LoopbackHost(r.Host) {
			http.Error(w, "loadlab dashboard: this page answers on loopback only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized refuses a request without the token, when there is one. It
// comes as ?token= (EventSource sends no headers) or a Bearer header.
func (b *Board) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !b.tokenOK(r) {
			http.Error(w, "loadlab dashboard: the token printed in loadlab's terminal is needed", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (b *Board) tokenOK(r *http.Request) bool {
	if b.Token == "" {
		return true
	}
	t := r.URL.Query().Get("token")
	if t == "" {
		t, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(t), []byte(b.Token)) == 1
}

// serveEvents streams the history after Last-Event-ID (all of it without
// one), then each new event, until the page goes, the run has ended and
// every event is sent, or the board closes.
func (b *Board) serveEvents(w http.ResponseWriter, r *http.Request) {
	if !b.tokenOK(r) {
		http.Error(w, "loadlab dashboard: the token printed in loadlab's terminal is needed", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodHead || r.URL.Query().Has("probe") {
		w.WriteHeader(http.StatusNoContent) // the page asks whether it needs the token
		return
	}
	var last int64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		last, _ = strconv.ParseInt(v, 10, 64)
	} else if v := r.URL.Query().Get("last"); v != "" {
		last, _ = strconv.ParseInt(v, 10, 64)
	}
	fl, _ := w.(http.Flusher)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 2000\n\n")
	for {
		evs, changed, closing := b.eventsAfter(last)
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for _, e := range evs {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.id, e.name, e.data); err != nil {
				return
			}
			last = e.id
		}
		if fl != nil {
			fl.Flush()
		}
		if closing {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// Search starts a capacity search's part of the page, as a "search" event:
// what it varies, its SLO and the latency lines to draw, and how many steps
// it takes at most.
type Search struct {
	Name     string    `json:"name"`
	By       string    `json:"by"` // "rate" (arrivals a second) or "vus"
	SLO      []string  `json:"slo"`
	Lines    []SLOLine `json:"lines,omitempty"`
	MaxSteps int       `json:"max_steps"`
	Plan     string    `json:"plan,omitempty"` // the search's plan in words
}

// SLOLine is a latency clause of the SLO, drawn across the curve.
type SLOLine struct {
	Clause   string  `json:"clause"`
	Quantile float64 `json:"quantile,omitempty"` // 95 for p95; 0 for another aggregate
	Ms       float64 `json:"ms"`
}

// SearchStep is a capacity search's step, as a "search-step" event: once
// when it starts (Done false: only Index, Level and Phase are set), once
// when it ends with its verdict and figures. A step resumed from the
// search's directory comes ended at once.
type SearchStep struct {
	Index      int        `json:"index"` // from 1
	MaxSteps   int        `json:"max_steps"`
	Level      float64    `json:"level"` // the offered rate a second, or the VUs
	Unit       string     `json:"unit"`  // "412.5/s", "40 VUs"
	Phase      string     `json:"phase"`
	Done       bool       `json:"done"`
	Kept       bool       `json:"kept,omitempty"` // resumed, not run now
	Holds      bool       `json:"holds"`
	Clause     string     `json:"clause,omitempty"` // why it broke
	Throughput float64    `json:"throughput_per_s"`
	P          [3]float64 `json:"p"` // p50, p95, p99 in ms over the step
	ErrorRate  float64    `json:"error_rate"`
	DurationS  float64    `json:"duration_s"`
}

// SearchEnd is a capacity search's answer, as a "search-end" event; the
// same as its capacity.json's.
type SearchEnd struct {
	Headline string  `json:"headline"`
	Answer   float64 `json:"answer"` // the rate a second, or the VUs; 0 for none
	AtLeast  bool    `json:"at_least,omitempty"`
	Note     string  `json:"note,omitempty"`
	Steps    int     `json:"steps"`
	Report   string  `json:"report,omitempty"` // the search's report.html, if served
	// Dir is the search's directory, when it is not the one served at
	// /report/ but under it (a run of an experiment): the report linked
	// is the one in it.
	Dir string `json:"-"`
}

// SearchStarted adds s.
func (b *Board) SearchStarted(s Search) { b.emit("search", s) }

// SearchStep adds a step's start or end.
func (b *Board) SearchStep(s SearchStep) { b.emit("search-step", s) }

// SearchEnded adds the search's answer, linking its report.html.
func (b *Board) SearchEnded(e SearchEnd) {
	b.mu.Lock()
	dir := b.o.ReportDir
	b.mu.Unlock()
	rel := "."
	if e.Dir != "" && dir != "" {
		r, err := filepath.Rel(dir, e.Dir)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			dir = "" // not under the directory served: no link
		}
		rel = r
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, rel, "report.html")); err == nil {
			e.Report = "/report/" + path.Join(filepath.ToSlash(rel), "report.html")
		}
	}
	b.emit("search-end", e)
}

// emit adds an event of name holding v (which always encodes), unless the
// board has ended. Only frames are thinned from the history, so a page
// opened late still gets every step.
func (b *Board) emit(name string, v any) {
	data, _ := json.Marshal(v)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.seq++
	b.add(event{id: b.seq, name: name, data: data})
}
