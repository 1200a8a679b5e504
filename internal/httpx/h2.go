package httpx

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// HTTP/2: h2 over TLS (ALPN "h2") and h2c with prior knowledge.
//
// A Conn of an HTTP/2 origin is a stream slot: it carries one exchange at a
// time, as every Conn does, and the slots of one group share one HTTP/2
// connection (an h2Session), each exchange on a stream of its own. Handlers,
// timeouts, the response parser, content decoding, size limits and timing
// phases are those of HTTP/1.1: a response's HEADERS are handed to the
// slot's parser as an HTTP/1.1 head, its DATA as chunks, so every figure,
// check and capture works unchanged.
//
// Engine: every HTTP/2 connection does its I/O the portable engine's way,
// whatever the loop's engine: one goroutine reads the net.Conn (crypto/tls
// over it for h2) and posts what it read to the loop, another writes what
// the loop framed. Frames, HPACK, flow control, SETTINGS and stream state
// live on the loop's goroutine. Why: it is one implementation on every
// platform, with crypto/tls's ALPN as it is, and an HTTP/2 connection
// multiplexes many exchanges, so its two goroutines are paid once per
// connection, not per request (cost measured in docs/benchmarks.md,
// bench/h2.sh).

// h2MaxStreams is the concurrent streams assumed before the server's
// SETTINGS say how many it allows.
const h2MaxStreams = 100

// What loadlab advertises: a stream window of 1 MiB and a connection window
// of 16 MiB. Responses are parsed as they arrive, so the windows bound no
// memory of loadlab's own; large ones keep a fast server from waiting.
const (
	h2StreamWindow = 1 << 20
	h2ConnWindow   = 1 << 24
	h2ReadBuffer   = 16 << 10
	h2ReadAhead    = 64 << 10
	// h2MaxQueued bounds the frames waiting for the writer: a server that
	// stops reading while it sends PINGs or SETTINGS ends in a counted
	// error, not in loadlab's memory.
	h2MaxQueued = 8 << 20
	// h2MaxIdleFrames bounds the frames in a row that carry nothing of a
	// response in flight (PINGs, SETTINGS, unknown types, empty DATA, DATA
	// of streams given up): an endless flood of them is a connection error.
	h2MaxIdleFrames = 10000
	// h2MaxRetries bounds how often one exchange is sent again after a
	// GOAWAY or a REFUSED_STREAM said it was not processed.
	h2MaxRetries = 3
)

// UseHTTP2 makes the origin's connections HTTP/2: h2 negotiated by ALPN over
// TLS for https, h2c with prior knowledge for http. streams is how many
// Conns of one loop share an HTTP/2 connection (concurrent streams on it).
func (t *Origin) UseHTTP2(streams int) {
	t.h2Streams = max(streams, 1)
	if t.TLS != nil {
		t.TLS = t.TLS.Clone()
		t.TLS.NextProtos = []string{"h2"}
	}
}

// HTTP2Streams is the streams per connection of an HTTP/2 origin; zero for HTTP/1.1.
func (t *Origin) HTTP2Streams() int { return t.h2Streams }

// Protocol names what the origin's connections speak: "h2" (HTTP/2 over
// TLS), "h2c" (cleartext HTTP/2) or "http/1.1".
func (t *Origin) Protocol() string {
	switch {
	case t.h2Streams == 0:
		return "http/1.1"
	case t.TLS != nil:
		return "h2"
	}
	return "h2c"
}

// h2Group is the slots of one loop that share an HTTP/2 connection; sess
// is the connection open or opening, replaced after a GOAWAY or a failure.
type h2Group struct {
	loop   *Loop
	origin *Origin
	sess   *h2Session
	slots  int
}

// h2Loop is a loop's HTTP/2 state: the group filling up for each origin,
// and every connection open or opening, closed when the loop stops.
type h2Loop struct {
	filling  map[*Origin]*h2Group
	sessions map[*h2Session]struct{}
}

// closeH2 closes the loop's HTTP/2 connections; Run calls it on its way out.
func (l *Loop) closeH2() {
	if l.h2 == nil {
		return
	}
	for s := range l.h2.sessions {
		s.close()
	}
}

// newH2Conn makes a stream slot, in the loop's group for t that has room.
func (l *Loop) newH2Conn(t *Origin) *Conn {
	if l.h2 == nil {
		l.h2 = &h2Loop{filling: map[*Origin]*h2Group{}, sessions: map[*h2Session]struct{}{}}
	}
	g := l.h2.filling[t]
	if g == nil || g.slots >= t.h2Streams {
		g = &h2Group{loop: l, origin: t}
		l.h2.filling[t] = g
	}
	g.slots++
	c := &Conn{loop: l, origin: t}
	c.sock = &h2Socket{c: c, g: g}
	c.p.MaxHeaderBytes, c.p.MaxBodyBytes = l.opts.MaxHeaderBytes, l.opts.MaxBodyBytes
	return c
}

// session is the group's connection for new streams, opened if need be.
func (g *h2Group) session() *h2Session {
	if s := g.sess; s != nil && s.state != h2Closed && !s.goingAway {
		return s
	}
	g.sess = newH2Session(g)
	return g.sess
}

// h2Socket is a Conn's half of HTTP/2: its group, the connection it is on
// and the stream of its exchange in flight.
type h2Socket struct {
	c       *Conn
	g       *h2Group
	s       *h2Session
	st      *h2Stream
	queued  []byte // a request waiting for the connection to open
	retries int
}

func (k *h2Socket) attach(s *h2Session) {
	k.s = s
	s.socks[k] = struct{}{}
}

// detach leaves the connection. It stays open for the group's next
// exchanges (a failed exchange closes its Conn, not the connection), until
// the loop stops, unless it is going away and has no stream left.
func (k *h2Socket) detach() {
	s := k.s
	if s == nil {
		return
	}
	delete(s.socks, k)
	k.s, k.queued = nil, nil
	if s.goingAway && s.active == 0 && s.state != h2Closed {
		s.close()
	}
}

func (k *h2Socket) connect() {
	c := k.c
	c.loop.register(c)
	c.state = stateConnecting
	old := k.g.sess
	s := k.g.session()
	if s != old {
		s.opener = k // its exchange times the connect; the others wait for it
	}
	k.attach(s)
	if s.state == h2Open {
		c.opened()
		if c.x != nil {
			// A stream on a connection already open: no connect to time.
			c.x.ConnectStart, c.x.ConnectEnd = 0, 0
		}
	}
}

func (k *h2Socket) write(request []byte) {
	k.retries = 0
	k.submit(request)
}

// submit sends request on a new stream, on the group's connection.
func (k *h2Socket) submit(request []byte) {
	if old := k.st; old != nil {
		old.sock = nil // a stream whose response is complete, ending on the wire
		k.st = nil
	}
	s := k.s
	if s == nil || s.state == h2Closed || s.goingAway {
		k.detach()
		s = k.g.session()
		k.attach(s)
	}
	if s.state != h2Open {
		k.queued = request
		return
	}
	s.submit(k, request)
}

func (k *h2Socket) holdForWrite() bool { return false }

func (k *h2Socket) close() {
	if st := k.st; st != nil {
		k.st = nil
		st.sock = nil
		if k.s != nil {
			k.s.cancel(st)
		}
	}
	k.detach()
}

// retry sends the exchange in flight again on a fresh connection: the
// server said it did not process it (GOAWAY, REFUSED_STREAM).
func (k *h2Socket) retry(st *h2Stream, why error, class Failure) {
	k.st, st.sock = nil, nil
	if k.retries >= h2MaxRetries || k.c.x == nil {
		k.c.fail(why, class)
		return
	}
	k.retries++
	k.submit(st.req)
}

const (
	h2Connecting = iota
	h2Open
	h2Closed
)

// h2Stream is one exchange on the wire.
type h2Stream struct {
	id         uint32
	sock       *h2Socket // nil once its slot gave it up or its response was complete
	req        []byte
	body       []byte // request body not yet sent
	sendWindow int64
	recvWindow int64
	recvUnsent int64 // received, not yet given back by WINDOW_UPDATE
	head       bool  // HEAD, 204 or 304: the response has no body
	gotHeaders bool
	sentEnd    bool
	queued     bool // waiting for a concurrent-stream slot
}

// h2Session is one HTTP/2 connection.
type h2Session struct {
	g     *h2Group
	l     *Loop
	state uint8
	// goingAway: no new streams (a GOAWAY came, or stream IDs ran out).
	goingAway  bool
	goawayCode http2.ErrCode
	cancelDial context.CancelFunc
	opener     *h2Socket // the slot whose exchange opened the connection

	socks   map[*h2Socket]struct{}
	streams map[uint32]*h2Stream
	waiting []*h2Stream // for a concurrent-stream slot
	sending []*h2Stream // with a body waiting for window
	nextID  uint32
	active  int

	// The server's settings.
	maxStreams    uint32
	initialWindow int64
	maxFrame      uint32
	maxHeaderList uint32
	sendWindow    int64
	recvWindow    int64
	recvUnsent    int64

	fr   *http2.Framer
	in   bytes.Reader // the frame being read
	out  []byte       // frames framed on the loop, not yet handed to the writer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	dec  *hpack.Decoder

	// The header block being read.
	hdrStream uint32
	hdrBlock  []byte
	hdrEnd    bool // END_STREAM was on its HEADERS
	status    int
	resp      []byte // the response head as HTTP/1.1, for the slot's parser
	hdrErr    error
	idle      int // frames in a row that carried nothing of a response

	partial []byte // an incomplete frame, waiting for the rest

	// The last request converted, for quick mode's request sent again and again.
	lastReq    []byte
	lastFields []hpack.HeaderField
	lastBody   int // its body's length
	lastErr    error

	// Goroutines' side.
	conn    net.Conn // the TCP connection
	rw      io.ReadWriter
	done    chan struct{}
	resume  chan struct{}
	rmu     sync.Mutex
	rpend   []byte // read, not yet taken by the loop
	rspare  []byte
	rerr    error
	rposted bool // the loop has been told of rpend
	readFn  func()
	inRead  bool
	wmu     sync.Mutex
	wpend   []byte
	wspare  []byte
	wsignal chan struct{}
	werr    error
}

var errH2Closed = errors.New("HTTP/2 connection closed")

func newH2Session(g *h2Group) *h2Session {
	s := &h2Session{
		g: g, l: g.loop,
		socks:         map[*h2Socket]struct{}{},
		streams:       map[uint32]*h2Stream{},
		nextID:        1,
		maxStreams:    h2MaxStreams,
		initialWindow: 65535,
		maxFrame:      16384,
		sendWindow:    65535,
		recvWindow:    h2ConnWindow,
		done:          make(chan struct{}),
		resume:        make(chan struct{}, 1),
		wsignal:       make(chan struct{}, 1),
	}
	s.readFn = s.handleRead
	g.loop.h2.sessions[s] = struct{}{}
	s.fr = http2.NewFramer((*h2Out)(s), &s.in)
	s.fr.SetMaxReadFrameSize(16384)
	s.enc = hpack.NewEncoder(&s.hbuf)
	s.dec = hpack.NewDecoder(4096, s.emit)
	s.dec.SetMaxStringLength(s.maxHeader())
	ctx, cancel := context.WithTimeout(context.Background(), s.l.opts.Timeout)
	s.cancelDial = cancel
	go s.open(ctx, g.origin)
	return s
}

func (s *h2Session) maxHeader() int {
	if n := s.l.opts.MaxHeaderBytes; n > 0 {
		return n
	}
	return DefaultMaxHeaderBytes
}

// h2Out is the Framer's writer: frames go to the loop's out buffer.
type h2Out h2Session

func (o *h2Out) Write(b []byte) (int, error) {
	o.out = append(o.out, b...)
	return len(b), nil
}

// open dials, handshakes and checks that the server speaks h2 (its own
// goroutine).
func (s *h2Session) open(ctx context.Context, t *Origin) {
	defer s.cancelDial()
	d := net.Dialer{KeepAlive: -1}
	raw, err := d.DialContext(ctx, "tcp", t.Addr.String())
	if err != nil {
		s.l.Post(func() { s.openFailed(fmt.Errorf("connect %s: %w", t.Addr, dialError(err)), FailureConnect) })
		return
	}
	var rw io.ReadWriter = raw
	if t.TLS != nil {
		tc := tls.Client(raw, t.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			if strings.Contains(err.Error(), "no application protocol") {
				err = fmt.Errorf("%w: %s does not speak HTTP/2 over TLS (it offers no h2 by ALPN): leave out --http2 or http.version: 2", err, t.Host)
			}
			s.l.Post(func() {
				s.openFailed(fmt.Errorf("tls handshake with %s: %w", t.Host, err), FailureTLS)
			})
			return
		}
		if ctx.Err() != nil {
			raw.Close() // given up meanwhile
			return
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			raw.Close()
			if p == "" {
				p = "none"
			}
			s.l.Post(func() {
				s.openFailed(fmt.Errorf("%s does not speak HTTP/2 over TLS (ALPN chose %s): leave out --http2 or http.version: 2", t.Host, p), FailureTLS)
			})
			return
		}
		rw = tc
	}
	s.rw = rw
	s.l.Post(func() { s.opened(raw) })
}

func (s *h2Session) openFailed(err error, class Failure) {
	if s.state == h2Closed {
		return
	}
	s.fail(err, class)
}

// opened starts the connection: the preface and settings, the goroutines,
// then the streams that waited.
func (s *h2Session) opened(raw net.Conn) {
	if s.state == h2Closed {
		raw.Close()
		return
	}
	s.conn = raw
	s.state = h2Open
	s.out = append(s.out, http2.ClientPreface...)
	s.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(s.maxHeader())},
	)
	s.fr.WriteWindowUpdate(0, h2ConnWindow-65535)
	go s.read()
	go s.write()
	socks := make([]*h2Socket, 0, len(s.socks))
	for k := range s.socks {
		socks = append(socks, k)
	}
	s.inRead = true // one flush for every stream below
	for _, k := range socks {
		if k.s != s || s.state != h2Open {
			continue
		}
		switch {
		case k.c.state == stateConnecting && k.c.x != nil:
			x := k.c.x
			k.c.opened()
			if k != s.opener {
				// One connect is timed per connection, as over HTTP/1.1:
				// the others waited for it, which their latency says.
				x.ConnectStart, x.ConnectEnd = 0, 0
			}
		case k.queued != nil:
			req := k.queued
			k.queued = nil
			s.submit(k, req)
		}
	}
	s.inRead = false
	s.flush()
}

// read reads until an error. What it reads gathers in rpend while the
// loop is busy, and the loop takes all of it at once: over TLS a read
// returns one record, often one small response, and a post to the loop for
// each cost more than the response. Past h2ReadAhead bytes not taken, the
// reader waits for the loop.
func (s *h2Session) read() {
	buf := make([]byte, h2ReadBuffer)
	for {
		n, err := s.rw.Read(buf)
		s.rmu.Lock()
		s.rpend = append(s.rpend, buf[:n]...)
		if err != nil {
			s.rerr = err
		}
		post := !s.rposted
		s.rposted = true
		full := len(s.rpend) >= h2ReadAhead
		s.rmu.Unlock()
		if post {
			s.l.Post(s.readFn)
		}
		if err != nil {
			return
		}
		if full {
			select {
			case <-s.resume:
			case <-s.done:
				return
			}
		}
	}
}

// write writes what the loop framed, as it comes.
func (s *h2Session) write() {
	for {
		select {
		case <-s.wsignal:
		case <-s.done:
			return
		}
		for {
			s.wmu.Lock()
			b := s.wpend
			if len(b) == 0 {
				s.wmu.Unlock()
				break
			}
			s.wpend = s.wspare[:0]
			s.wmu.Unlock()
			_, err := s.rw.Write(b)
			s.wmu.Lock()
			s.wspare = b[:0]
			s.wmu.Unlock()
			if err != nil {
				s.l.Post(func() {
					if s.state != h2Closed {
						s.fail(fmt.Errorf("write: %w", netCause(err)), FailureReset)
					}
				})
				return
			}
		}
	}
}

// flush hands the frames framed so far to the writer.
func (s *h2Session) flush() {
	if len(s.out) == 0 || s.state != h2Open || s.inRead {
		return
	}
	s.wmu.Lock()
	s.wpend = append(s.wpend, s.out...)
	n := len(s.wpend)
	s.wmu.Unlock()
	s.out = s.out[:0]
	select {
	case s.wsignal <- struct{}{}:
	default:
	}
	if n > h2MaxQueued {
		s.connError(http2.ErrCodeEnhanceYourCalm, fmt.Errorf("%w: %d bytes of frames wait for the server to read them", ErrH2Calm, n))
	}
}

// handleRead handles what the reader read, on the loop.
func (s *h2Session) handleRead() {
	if s.state == h2Closed {
		return
	}
	s.rmu.Lock()
	data, err := s.rpend, s.rerr
	s.rpend, s.rposted = s.rspare[:0], false
	s.rmu.Unlock()
	select {
	case s.resume <- struct{}{}:
	default:
	}
	s.inRead = true
	s.frames(data)
	s.inRead = false
	s.rmu.Lock()
	s.rspare = data[:0]
	s.rmu.Unlock()
	if s.state == h2Closed {
		return
	}
	if err != nil {
		s.readEnded(err)
		return
	}
	s.flush()
}

func (s *h2Session) readEnded(err error) {
	switch {
	case s.goingAway && s.active == 0:
		s.close()
	case s.goingAway:
		s.fail(fmt.Errorf("%w (%v) and closed the connection", ErrGoaway, s.goawayCode), FailureGoaway)
	case err == io.EOF:
		s.fail(fmt.Errorf("%w", errH2Closed), FailureReset)
	default:
		s.fail(readError(err, s.g.origin.TLS != nil), FailureReset)
	}
}

// frames reads the whole frames in data; an incomplete one waits in partial.
func (s *h2Session) frames(data []byte) {
	if len(s.partial) > 0 {
		s.partial = append(s.partial, data...)
		data = s.partial
	}
	for s.state != h2Closed {
		if len(data) < 9 {
			break
		}
		n := int(data[0])<<16 | int(data[1])<<8 | int(data[2])
		if n > 16384 {
			s.connError(http2.ErrCodeFrameSize, fmt.Errorf("%w: a %d byte frame, over the 16384 bytes loadlab allows", ErrH2Protocol, n))
			return
		}
		if len(data) < 9+n {
			break
		}
		s.in.Reset(data[:9+n])
		f, err := s.fr.ReadFrame()
		data = data[9+n:]
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				s.streamError(se.StreamID, se.Code, fmt.Errorf("%w: %v", ErrH2Protocol, se))
				continue
			}
			code := http2.ErrCodeProtocol
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				code = http2.ErrCode(ce)
			}
			s.connError(code, fmt.Errorf("%w: %v", ErrH2Protocol, err))
			return
		}
		s.frame(f)
	}
	if s.state == h2Closed {
		return
	}
	// Keep the rest; partial may be data itself, so copy down.
	s.partial = append(s.partial[:0], data...)
}

// Errors of HTTP/2 connections, wrapped by the exchanges' errors.
var (
	ErrH2Protocol  = errors.New("HTTP/2 protocol error")
	ErrH2Calm      = errors.New("HTTP/2 server floods the connection")
	ErrGoaway      = errors.New("the server sent GOAWAY")
	ErrStreamReset = errors.New("the server reset the stream")
)

func (s *h2Session) frame(f http2.Frame) {
	s.idle++
	switch f := f.(type) {
	case *http2.DataFrame:
		s.data(f)
	case *http2.HeadersFrame:
		s.headers(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), f.StreamEnded())
	case *http2.ContinuationFrame:
		s.headers(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), s.hdrEnd)
	case *http2.SettingsFrame:
		s.settings(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			s.fr.WritePing(true, f.Data)
		}
	case *http2.WindowUpdateFrame:
		s.windowUpdate(f)
	case *http2.RSTStreamFrame:
		s.reset(f.StreamID, f.ErrCode)
	case *http2.GoAwayFrame:
		s.goAway(f.LastStreamID, f.ErrCode)
	case *http2.PushPromiseFrame:
		s.connError(http2.ErrCodeProtocol, fmt.Errorf("%w: PUSH_PROMISE, though push is disabled", ErrH2Protocol))
		return
	}
	if s.idle > h2MaxIdleFrames && s.state != h2Closed {
		s.connError(http2.ErrCodeEnhanceYourCalm, fmt.Errorf("%w: %d frames in a row without a response's bytes", ErrH2Calm, s.idle))
	}
}

func (s *h2Session) settings(f *http2.SettingsFrame) {
	if f.IsAck() {
		return
	}
	err := f.ForeachSetting(func(st http2.Setting) error {
		if err := st.Valid(); err != nil {
			return err
		}
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			s.maxStreams = st.Val
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - s.initialWindow
			s.initialWindow = int64(st.Val)
			for _, x := range s.streams {
				x.sendWindow += delta
			}
		case http2.SettingMaxFrameSize:
			s.maxFrame = st.Val
		case http2.SettingMaxHeaderListSize:
			s.maxHeaderList = st.Val
		case http2.SettingHeaderTableSize:
			s.enc.SetMaxDynamicTableSizeLimit(st.Val)
		}
		return nil
	})
	if err != nil {
		code := http2.ErrCodeProtocol
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			code = http2.ErrCode(ce)
		}
		s.connError(code, fmt.Errorf("%w: bad SETTINGS: %v", ErrH2Protocol, err))
		return
	}
	s.fr.WriteSettingsAck()
	s.startWaiting()
	s.pump()
}

func (s *h2Session) windowUpdate(f *http2.WindowUpdateFrame) {
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		s.sendWindow += inc
		if s.sendWindow > 1<<31-1 {
			s.connError(http2.ErrCodeFlowControl, fmt.Errorf("%w: connection window over 2^31-1", ErrH2Protocol))
			return
		}
	} else if st := s.streams[f.StreamID]; st != nil {
		if len(st.body) > 0 {
			s.idle = 0 // a request body on its way is progress too
		}
		st.sendWindow += inc
		if st.sendWindow > 1<<31-1 {
			s.streamError(st.id, http2.ErrCodeFlowControl, fmt.Errorf("%w: stream window over 2^31-1", ErrH2Protocol))
			return
		}
	}
	s.pump()
}

// data hands a DATA frame's bytes to its slot's parser as a chunk.
func (s *h2Session) data(f *http2.DataFrame) {
	n := int64(f.Header().Length)
	s.recvWindow -= n
	if s.recvWindow < 0 {
		s.connError(http2.ErrCodeFlowControl, fmt.Errorf("%w: DATA over the connection window", ErrH2Protocol))
		return
	}
	s.recvUnsent += n
	if s.recvUnsent >= h2ConnWindow/2 {
		s.fr.WriteWindowUpdate(0, uint32(s.recvUnsent))
		s.recvWindow += s.recvUnsent
		s.recvUnsent = 0
	}
	st := s.streams[f.StreamID]
	if st == nil {
		return
	}
	st.recvWindow -= n
	if st.recvWindow < 0 {
		s.streamError(st.id, http2.ErrCodeFlowControl, fmt.Errorf("%w: DATA over the stream window", ErrH2Protocol))
		return
	}
	if !st.gotHeaders {
		s.streamError(st.id, http2.ErrCodeProtocol, fmt.Errorf("%w: DATA before HEADERS", ErrH2Protocol))
		return
	}
	end := f.StreamEnded()
	if !end {
		st.recvUnsent += n
		if st.recvUnsent >= h2StreamWindow/2 {
			s.fr.WriteWindowUpdate(st.id, uint32(st.recvUnsent))
			st.recvWindow += st.recvUnsent
			st.recvUnsent = 0
		}
	}
	if k := st.sock; k != nil && !st.head {
		if b := f.Data(); len(b) > 0 {
			s.idle = 0
			var size [16]byte
			line := strconv.AppendInt(size[:0], int64(len(b)), 16)
			line = append(line, '\r', '\n')
			_ = s.feed(st, line) && s.feed(st, b) && s.feed(st, crlf)
		}
		if end && st.sock != nil {
			s.feed(st, lastChunk)
		}
	}
	if end {
		s.remoteEnd(st)
	}
}

// h2StaticStatus are the statuses of HPACK's static table, entries 8 to 14.
var h2StaticStatus = [...]int{200, 204, 206, 304, 400, 404, 500}

var (
	crlf      = []byte("\r\n")
	lastChunk = []byte("0\r\n\r\n")
)

// feed gives response bytes to the stream's slot. It reports whether the
// slot still waits for more of them; when it does not, the slot is done
// with the stream (its exchange ended, and may have been followed by
// another on a new stream).
func (s *h2Session) feed(st *h2Stream, b []byte) bool {
	k := st.sock
	if k == nil {
		return false
	}
	if k.c.take(b) {
		return true
	}
	if st.sock == k && k.st == st {
		k.st = nil
	}
	st.sock = nil
	return false
}

// headers gathers a header block and decodes it once it ends.
func (s *h2Session) headers(id uint32, frag []byte, ended, endStream bool) {
	if s.hdrStream == 0 {
		s.hdrStream, s.hdrEnd = id, endStream
		s.hdrBlock = s.hdrBlock[:0]
		s.status, s.hdrErr = 0, nil
		s.resp = append(s.resp[:0], "HTTP/1.1 000\r\n"...)
	}
	if !ended || len(s.hdrBlock) > 0 {
		if len(s.hdrBlock)+len(frag) > s.maxHeader() {
			s.connError(http2.ErrCodeEnhanceYourCalm, fmt.Errorf("%w: a header block over %d bytes", ErrTooLarge, s.maxHeader()))
			return
		}
		s.hdrBlock = append(s.hdrBlock, frag...)
		if !ended {
			return
		}
		frag = s.hdrBlock
	}
	s.hdrStream = 0
	st := s.streams[id]
	// A response whose header block its handler does not keep (quick mode)
	// needs only its status: when that is the block's first byte, one of
	// HPACK's static entries (200, 204, 206, 304, 400, 404, 500), the rest
	// is decoded for the dynamic table's sake without its strings, which
	// saves the Huffman decoding that was a fifth of loadlab's CPU per
	// request against nginx.
	quiet := st != nil && st.sock != nil && st.sock.c.x != nil && !st.sock.c.x.Keep && len(frag) > 0 && frag[0] >= 0x88 && frag[0] <= 0x8e
	if quiet {
		s.status = h2StaticStatus[frag[0]-0x88]
		s.dec.SetEmitEnabled(false)
		defer s.dec.SetEmitEnabled(true)
	}
	if _, err := s.dec.Write(frag); err != nil {
		s.connError(http2.ErrCodeCompression, fmt.Errorf("%w: HPACK: %v", ErrH2Protocol, err))
		return
	}
	if err := s.dec.Close(); err != nil {
		s.connError(http2.ErrCodeCompression, fmt.Errorf("%w: HPACK: %v", ErrH2Protocol, err))
		return
	}
	if st == nil {
		return
	}
	s.idle = 0
	switch {
	case s.hdrErr != nil:
		s.streamError(id, http2.ErrCodeProtocol, s.hdrErr)
		return
	case st.gotHeaders:
		// Trailers: they end the stream.
		if !endStream {
			s.streamError(id, http2.ErrCodeProtocol, fmt.Errorf("%w: trailers without END_STREAM", ErrH2Protocol))
			return
		}
	case s.status == 0:
		s.streamError(id, http2.ErrCodeProtocol, fmt.Errorf("%w: a response without :status", ErrH2Protocol))
		return
	case s.status < 200:
		if endStream {
			s.streamError(id, http2.ErrCodeProtocol, fmt.Errorf("%w: an interim response ended the stream", ErrH2Protocol))
		}
		return // 100 Continue, 103 Early Hints: the response follows
	default:
		st.gotHeaders = true
		if st.sock != nil {
			copy(s.resp[9:12], strconv.Itoa(s.status))
			st.head = st.head || s.status == 204 || s.status == 304
			if st.head {
				s.resp = append(s.resp, crlf...)
				s.feed(st, s.resp)
			} else {
				s.resp = append(s.resp, "transfer-encoding: chunked\r\n\r\n"...)
				if s.feed(st, s.resp) {
					// The framing is loadlab's, not the server's: the
					// handler sees the header block as the server sent it.
					k := st.sock
					if h := k.c.p.Header; k.c.p.keep && bytes.HasSuffix(h, []byte("transfer-encoding: chunked\r\n")) {
						k.c.p.Header = h[:len(h)-len("transfer-encoding: chunked\r\n")]
					}
				}
			}
		}
	}
	if endStream {
		if st.sock != nil && !st.head {
			s.feed(st, lastChunk)
		}
		s.remoteEnd(st)
	}
}

// emit takes one decoded header field.
func (s *h2Session) emit(f hpack.HeaderField) {
	if s.hdrErr != nil {
		return
	}
	if f.IsPseudo() {
		if f.Name != ":status" || s.status != 0 || len(f.Value) != 3 {
			s.hdrErr = fmt.Errorf("%w: bad pseudo-header %s", ErrH2Protocol, f.Name)
			return
		}
		code, err := strconv.Atoi(f.Value)
		if err != nil || code < 100 {
			s.hdrErr = fmt.Errorf("%w: bad :status %q", ErrH2Protocol, f.Value)
			return
		}
		s.status = code
		return
	}
	if len(s.resp)+len(f.Name)+len(f.Value)+4 > s.maxHeader() {
		s.hdrErr = fmt.Errorf("%w: response header over %d bytes", ErrTooLarge, s.maxHeader())
		return
	}
	if strings.IndexByte(f.Value, '\n') >= 0 || strings.IndexByte(f.Value, '\r') >= 0 || strings.IndexByte(f.Name, ':') >= 0 {
		s.hdrErr = fmt.Errorf("%w: header %q has a line break", ErrH2Protocol, f.Name)
		return
	}
	if f.Name == "transfer-encoding" || f.Name == "connection" {
		s.hdrErr = fmt.Errorf("%w: connection-specific header %s", ErrH2Protocol, f.Name)
		return
	}
	s.resp = append(s.resp, f.Name...)
	s.resp = append(s.resp, ": "...)
	s.resp = append(s.resp, f.Value...)
	s.resp = append(s.resp, crlf...)
}

// remoteEnd: the server ended the stream.
func (s *h2Session) remoteEnd(st *h2Stream) {
	if s.streams[st.id] != st {
		return // reset meanwhile, by what its bytes ended
	}
	if !st.sentEnd {
		// The response came before the request's body was all sent.
		s.fr.WriteRSTStream(st.id, http2.ErrCodeNo)
	}
	s.forget(st)
}

// forget removes a stream that ended or was reset.
func (s *h2Session) forget(st *h2Stream) {
	if st.queued {
		st.queued = false
		for i, w := range s.waiting {
			if w == st {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				break
			}
		}
		return
	}
	if _, ok := s.streams[st.id]; !ok {
		return
	}
	delete(s.streams, st.id)
	for i, w := range s.sending {
		if w == st {
			s.sending = append(s.sending[:i], s.sending[i+1:]...)
			break
		}
	}
	s.active--
	if k := st.sock; k != nil && k.st == st {
		k.st = nil
	}
	st.sock = nil
	if s.goingAway && s.active == 0 && len(s.waiting) == 0 {
		s.close()
		return
	}
	s.startWaiting()
}

// cancel resets a stream its slot gave up (a timeout, a response over a limit).
func (s *h2Session) cancel(st *h2Stream) {
	if st.queued {
		s.forget(st)
		return
	}
	if _, ok := s.streams[st.id]; !ok || s.state != h2Open {
		return
	}
	s.fr.WriteRSTStream(st.id, http2.ErrCodeCancel)
	s.forget(st)
	s.flush()
}

// streamError resets a stream for the reason err and fails its exchange.
func (s *h2Session) streamError(id uint32, code http2.ErrCode, err error) {
	st := s.streams[id]
	if st == nil {
		return
	}
	s.fr.WriteRSTStream(id, code)
	k := st.sock
	s.forget(st)
	if k != nil {
		k.c.fail(err, FailureProtocol)
	}
}

// reset: the server sent RST_STREAM.
func (s *h2Session) reset(id uint32, code http2.ErrCode) {
	st := s.streams[id]
	if st == nil {
		return
	}
	k := st.sock
	s.forget(st)
	if k == nil {
		return
	}
	err := fmt.Errorf("%w: %v", ErrStreamReset, code)
	if code == http2.ErrCodeRefusedStream {
		k.retry(st, err, FailureStream)
		return
	}
	k.c.fail(err, FailureStream)
}

// goAway: no streams above last will be processed; they go again on a new
// connection, and this one closes once the others end.
func (s *h2Session) goAway(last uint32, code http2.ErrCode) {
	s.goingAway, s.goawayCode = true, code
	if s.g.sess == s {
		s.g.sess = nil
	}
	var again []*h2Stream
	for id, st := range s.streams {
		if id > last {
			again = append(again, st)
		}
	}
	again = append(again, s.waiting...)
	why := fmt.Errorf("%w (%v)", ErrGoaway, code)
	for _, st := range again {
		k := st.sock
		mine := k != nil && k.st == st
		s.forget(st)
		if mine {
			k.retry(st, why, FailureGoaway)
		}
	}
	if s.state != h2Closed && s.active == 0 {
		s.close()
	}
}

// connError ends the connection for a fault of the server's.
func (s *h2Session) connError(code http2.ErrCode, err error) {
	if s.state == h2Closed {
		return
	}
	s.fr.WriteGoAway(0, code, nil) // loadlab accepts no streams of the server's
	s.inRead = false
	s.flush()
	s.fail(err, FailureProtocol)
}

// fail closes the connection and fails every exchange on it; slots
// without one close too, so that their next exchange opens a new connection.
func (s *h2Session) fail(err error, class Failure) {
	socks := make([]*h2Socket, 0, len(s.socks))
	for k := range s.socks {
		socks = append(socks, k)
	}
	s.shut()
	for _, k := range socks {
		if k.s != s {
			continue
		}
		k.s, k.queued = nil, nil
		if k.st != nil {
			k.st.sock = nil
			k.st = nil
		}
		if k.c.x != nil {
			k.c.fail(err, class)
		} else {
			k.c.close()
		}
	}
}

// close closes a connection nobody needs.
func (s *h2Session) close() {
	s.shut()
	for k := range s.socks {
		if k.s == s {
			k.s = nil
		}
	}
}

func (s *h2Session) shut() {
	if s.state == h2Closed {
		return
	}
	opened := s.state == h2Open
	s.state = h2Closed
	delete(s.l.h2.sessions, s)
	if s.g.sess == s {
		s.g.sess = nil
	}
	s.cancelDial()
	if opened {
		close(s.done)
		s.conn.Close()
	}
	s.streams, s.waiting, s.sending = map[uint32]*h2Stream{}, nil, nil
	s.active = 0
}

// submit starts an exchange on a new stream, or queues it for a
// concurrent-stream slot.
func (s *h2Session) submit(k *h2Socket, request []byte) {
	st := &h2Stream{sock: k, req: request, sendWindow: s.initialWindow, recvWindow: h2StreamWindow}
	k.st = st
	if s.active >= int(s.maxStreams) {
		st.queued = true
		s.waiting = append(s.waiting, st)
		return
	}
	s.start(st)
	s.flush()
}

func (s *h2Session) startWaiting() {
	for len(s.waiting) > 0 && s.active < int(s.maxStreams) && s.state == h2Open && !s.goingAway {
		st := s.waiting[0]
		s.waiting = s.waiting[1:]
		st.queued = false
		s.start(st)
	}
}

// start sends a stream's HEADERS and as much of its body as the windows allow.
func (s *h2Session) start(st *h2Stream) {
	k := st.sock
	fields, body, err := s.convert(st.req)
	if err == nil && s.maxHeaderList > 0 {
		size := uint32(0)
		for _, f := range fields {
			size += f.Size()
		}
		if size > s.maxHeaderList {
			err = fmt.Errorf("%w: the request's header list of %d bytes is over the server's limit of %d", ErrTooLarge, size, s.maxHeaderList)
		}
	}
	if err != nil {
		k.st, st.sock = nil, nil
		k.c.failLater(err, FailureProtocol)
		return
	}
	if s.nextID >= 1<<31-1 {
		// Stream IDs ran out: a new connection takes this and what follows.
		s.goingAway = true
		if s.g.sess == s {
			s.g.sess = nil
		}
		k.st, st.sock = nil, nil
		k.submit(st.req)
		return
	}
	st.id = s.nextID
	s.nextID += 2
	s.streams[st.id] = st
	s.active++
	st.head = len(st.req) >= 5 && string(st.req[:5]) == "HEAD "
	s.hbuf.Reset()
	for _, f := range fields {
		s.enc.WriteField(f)
	}
	block := s.hbuf.Bytes()
	st.body = body
	endStream := len(body) == 0
	first := true
	for first || len(block) > 0 {
		n := min(len(block), int(s.maxFrame))
		frag := block[:n]
		block = block[n:]
		if first {
			s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: frag, EndStream: endStream, EndHeaders: len(block) == 0})
			first = false
		} else {
			s.fr.WriteContinuation(st.id, len(block) == 0, frag)
		}
	}
	if endStream {
		st.sentEnd = true
		return
	}
	s.sending = append(s.sending, st)
	s.pump()
}

// pump sends request bodies as far as the windows allow.
func (s *h2Session) pump() {
	for i := 0; i < len(s.sending); {
		st := s.sending[i]
		for len(st.body) > 0 && st.sendWindow > 0 && s.sendWindow > 0 {
			n := min(int64(len(st.body)), st.sendWindow, s.sendWindow, int64(s.maxFrame))
			chunk := st.body[:n]
			st.body = st.body[n:]
			st.sendWindow -= n
			s.sendWindow -= n
			s.fr.WriteData(st.id, len(st.body) == 0, chunk)
		}
		if len(st.body) == 0 {
			st.sentEnd = true
			s.sending = append(s.sending[:i], s.sending[i+1:]...)
			continue
		}
		i++
	}
}

// convert reads an HTTP/1.1 request as HTTP/2 header fields and a body.
func (s *h2Session) convert(req []byte) ([]hpack.HeaderField, []byte, error) {
	if s.lastReq != nil && len(req) == len(s.lastReq) && bytes.Equal(req, s.lastReq) {
		// The body is this request's bytes, which stay unchanged until its
		// exchange ends.
		return s.lastFields, req[len(req)-s.lastBody:], s.lastErr
	}
	fields, body, err := h1ToH2(req, s.g.origin)
	s.lastReq = append(s.lastReq[:0], req...)
	s.lastFields, s.lastBody, s.lastErr = fields, len(body), err
	return fields, body, err
}

// h1ToH2 turns the request line and headers of an encoded HTTP/1.1 request
// into HTTP/2 header fields; the connection-specific headers are left out.
func h1ToH2(req []byte, t *Origin) ([]hpack.HeaderField, []byte, error) {
	end := bytes.Index(req, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, nil, fmt.Errorf("%w: an unfinished request head", ErrH2Protocol)
	}
	head, body := req[:end+2], req[end+4:]
	line, rest, _ := bytes.Cut(head, crlf)
	method, rest1, ok1 := bytes.Cut(line, []byte(" "))
	target, _, ok2 := bytes.Cut(rest1, []byte(" "))
	if !ok1 || !ok2 {
		return nil, nil, fmt.Errorf("%w: bad request line %q", ErrH2Protocol, clip(line))
	}
	scheme := "http"
	if t.TLS != nil {
		scheme = "https"
	}
	fields := []hpack.HeaderField{{Name: ":method", Value: string(method)}, {Name: ":scheme", Value: scheme}, {Name: ":authority", Value: t.Host}, {Name: ":path", Value: string(target)}}
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, crlf)
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			continue
		}
		n := strings.ToLower(string(name))
		v := string(bytes.TrimSpace(value))
		switch n {
		case "host":
			fields[2].Value = v
			continue
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			continue
		case "te":
			if v != "trailers" {
				continue
			}
		}
		fields = append(fields, hpack.HeaderField{Name: n, Value: v})
	}
	return fields, body, nil
}
