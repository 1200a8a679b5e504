package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Output is a receiver to push to: --push KIND=URL[,native=true].
type Output struct {
	Kind string // "prometheus-rw" or "otlp"
	URL  string
	// Native (prometheus-rw only) sends the latency histograms as native
	// histograms too, besides their classic series.
	Native bool
}

func (o Output) String() string {
	if o.Native {
		return o.Kind + "=" + o.URL + ",native=true"
	}
	return o.Kind + "=" + o.URL
}

// ParseOutput parses KIND=URL[,OPTION...], KIND being prometheus-rw
// (Prometheus remote-write) or otlp (OTLP over HTTP). An otlp URL without a
// path gets the standard /v1/metrics. The one option, native=true, is
// prometheus-rw's: native histograms as well (a comma in the URL itself is
// written %2C).
func ParseOutput(s string) (Output, error) {
	kind, raw, ok := strings.Cut(s, "=")
	if !ok || raw == "" {
		return Output{}, fmt.Errorf("%q: want prometheus-rw=URL or otlp=URL", s)
	}
	if kind != "prometheus-rw" && kind != "otlp" {
		return Output{}, fmt.Errorf("%q: unknown output %q: want prometheus-rw=URL or otlp=URL", s, kind)
	}
	raw, opts, hasOpts := strings.Cut(raw, ",")
	o := Output{Kind: kind}
	if hasOpts {
		for opt := range strings.SplitSeq(opts, ",") {
			k, v, _ := strings.Cut(opt, "=")
			if k != "native" || kind != "prometheus-rw" {
				return Output{}, fmt.Errorf("%q: unknown option %q of %s (prometheus-rw takes native=true)", s, opt, kind)
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Output{}, fmt.Errorf("%q: native=%q: want true or false", s, v)
			}
			o.Native = b
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Output{}, fmt.Errorf("%q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Output{}, fmt.Errorf("%q: the URL must be http:// or https:// with a host", s)
	}
	if kind == "otlp" && (u.Path == "" || u.Path == "/") {
		u.Path = "/v1/metrics"
	}
	o.URL = u.String()
	return o, nil
}

// Push settings. A push carries every series (counters are cumulative), so
// a dropped one loses no count: the next carries it.
const (
	// DefaultPushInterval is how often the figures are pushed.
	DefaultPushInterval = time.Second
	// queueLen bounds the pushes waiting for a slow receiver; more are dropped.
	queueLen = 10
	// pushTimeout is the longest one push may take.
	pushTimeout = 5 * time.Second
)

// PushStats is what became of an output's pushes.
type PushStats struct {
	Output
	Sent, Dropped int64
	// LastErr is the last failed push's error, nil if none failed.
	LastErr error
	// Note says what the receiver changed, if anything: native histograms
	// it refused.
	Note string
}

// String is the summary's line: "prometheus-rw=URL: 31 pushes sent, 0 dropped".
func (s PushStats) String() string {
	line := fmt.Sprintf("%s: %d pushes sent, %d dropped", s.Output, s.Sent, s.Dropped)
	if s.LastErr != nil {
		line += fmt.Sprintf(" (last error: %v)", s.LastErr)
	}
	if s.Note != "" {
		line += "; " + s.Note
	}
	return line
}

// sender sends one snapshot.
type sender func(ctx context.Context, s Snapshot) error

// noter is what a sender has to say at the end (PushStats.Note), if any.
type noter func() string

// Pusher pushes live's figures to one receiver every interval, from
// goroutines of its own: a snapshot is queued without waiting (dropped and
// counted when the queue is full), and one sender sends the queue in order,
// each push bounded by a timeout. A down or slow receiver costs drops,
// never the load's time.
type Pusher struct {
	out      Output
	live     *Live
	send     sender
	note     noter
	queue    chan Snapshot
	stop     chan struct{}
	ticking  sync.WaitGroup
	sending  chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	sent     atomic.Int64
	dropped  atomic.Int64
	mu       sync.Mutex
	lastErr  error
	closeOne sync.Once
	stats    PushStats
}

// StartPush starts pushing live's figures to o every interval (zero:
// DefaultPushInterval).
func StartPush(o Output, live *Live, interval time.Duration) (*Pusher, error) {
	var send sender
	var note noter
	var err error
	switch o.Kind {
	case "prometheus-rw":
		rw := newRemoteWriter(o.URL, o.Native)
		send, note = rw.send, rw.note
	case "otlp":
		send, err = otlpSender(o.URL)
	default:
		err = fmt.Errorf("unknown output %q", o.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("--push %s: %w", o, err)
	}
	p := startPusher(o, live, interval, send)
	p.note = note
	return p, nil
}

func startPusher(o Output, live *Live, interval time.Duration, send sender) *Pusher {
	if interval <= 0 {
		interval = DefaultPushInterval
	}
	p := &Pusher{out: o, live: live, send: send, queue: make(chan Snapshot, queueLen), stop: make(chan struct{}), sending: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.ticking.Add(1)
	go p.tick(interval)
	go p.sendAll()
	return p
}

func (p *Pusher) tick(interval time.Duration) {
	defer p.ticking.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.enqueue(p.live.Snapshot(), false)
		}
	}
}

// enqueue queues s without waiting: when the queue is full, s is dropped,
// or, for the last push, the oldest waiting one is.
func (p *Pusher) enqueue(s Snapshot, last bool) {
	for {
		select {
		case p.queue <- s:
			return
		default:
		}
		if !last {
			p.dropped.Add(1)
			return
		}
		select {
		case <-p.queue:
			p.dropped.Add(1)
		default:
		}
	}
}

func (p *Pusher) sendAll() {
	defer close(p.sending)
	for s := range p.queue {
		if p.ctx.Err() != nil {
			p.dropped.Add(1)
			continue
		}
		ctx, cancel := context.WithTimeout(p.ctx, pushTimeout)
		err := p.send(ctx, s)
		cancel()
		if err != nil {
			p.dropped.Add(1)
			p.mu.Lock()
			p.lastErr = err
			p.mu.Unlock()
			continue
		}
		p.sent.Add(1)
	}
}

// Close pushes the final figures and waits at most wait for the queue to
// be sent; what is still unsent then is dropped. It returns the counts.
func (p *Pusher) Close(wait time.Duration) PushStats {
	p.closeOne.Do(func() {
		close(p.stop)
		p.ticking.Wait()
		p.enqueue(p.live.Snapshot(), true)
		close(p.queue)
		t := time.NewTimer(wait)
		select {
		case <-p.sending:
		case <-t.C:
			p.cancel()
			<-p.sending
		}
		t.Stop()
		p.cancel()
		p.mu.Lock()
		p.stats = PushStats{Output: p.out, Sent: p.sent.Load(), Dropped: p.dropped.Load(), LastErr: p.lastErr}
		if p.note != nil {
			p.stats.Note = p.note()
		}
		p.mu.Unlock()
	})
	return p.stats
}
