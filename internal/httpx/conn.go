package httpx

import (
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// Failure says why an exchange failed to produce a response: the class
// is result's, so that the analysis reads it without linking this package.
type Failure = result.Failure

// The failure classes (see result.Failure).
const (
	FailureNone     = result.FailureNone
	FailureConnect  = result.FailureConnect
	FailureTimeout  = result.FailureTimeout
	FailureReset    = result.FailureReset
	FailureProtocol = result.FailureProtocol
	FailureTLS      = result.FailureTLS
	FailureStream   = result.FailureStream
	FailureGoaway   = result.FailureGoaway
)

// Exchange is one request and its response. The caller sets the request
// fields; the loop sets the rest before calling the Handler. An Exchange is
// reused from one request to the next.
type Exchange struct {
	Request []byte // the encoded request; must stay unchanged until Done
	// BodyFile, when set, is the body, sent after Request (which is then
	// the head only) from the file, chunk by chunk.
	BodyFile   *BodyFile
	Head       bool // a HEAD request: the response has no body
	Keep       bool // keep the header block and body for the handler to read
	Idempotent bool // safe to send again on a fresh connection if a reused one was stale
	CloseAfter bool // the request asked the server to close the connection

	// Times on the loop's clock. ConnectStart and ConnectEnd are zero when the
	// exchange reused a connection. ConnectEnd is when the TCP connection was
	// up; TLSEnd when its TLS handshake ended (zero for plain HTTP).
	Start, ConnectStart, ConnectEnd, Sent, FirstByte, End time.Duration
	TLSEnd                                                time.Duration
	// TLSResumed says the exchange's new connection resumed a TLS session
	// (an abbreviated handshake, from a ticket) rather than a full one.
	TLSResumed bool

	reason    [maxReason]byte // the status line's reason phrase: Reason
	reasonLen uint8

	Status    int
	Header    []byte // raw header lines, when Keep; valid until the Handler returns
	Body      []byte // the body, when Keep; valid until the Handler returns
	BodyBytes int64  // as received (chunks decoded, content codings not)
	// Decoded says the body came in content codings (gzip, br...) and Body
	// holds it decoded: DecodedBytes long. Bodies are decoded only when
	// kept.
	Decoded      bool
	DecodedBytes int64
	Err          error
	Failure      Failure
	Retried      bool // sent a second time because a reused connection was stale
	Reused       bool // went over a connection that had served an earlier exchange
}

func (x *Exchange) reset(now time.Duration) {
	x.Start, x.ConnectStart, x.ConnectEnd, x.Sent, x.FirstByte, x.End = now, 0, 0, 0, 0, 0
	x.Status, x.Header, x.Body, x.BodyBytes, x.Decoded, x.DecodedBytes = 0, nil, nil, 0, false, 0
	x.Err, x.Failure, x.Retried, x.Reused = nil, FailureNone, false, false
	x.TLSEnd, x.TLSResumed, x.reasonLen = 0, false, 0
}

// Reason is the response's reason phrase as the server wrote it ("Payload
// Too Large"; its first 64 bytes), empty when it wrote none. It is valid
// until the exchange is reused.
func (x *Exchange) Reason() []byte { return x.reason[:x.reasonLen] }

// ConnectTime is how long the exchange spent opening its connection.
func (x *Exchange) ConnectTime() time.Duration {
	if x.ConnectEnd == 0 {
		return 0
	}
	return x.ConnectEnd - x.ConnectStart
}

// TLSTime is how long the exchange spent in its new connection's TLS
// handshake: zero on plain HTTP or a reused connection.
func (x *Exchange) TLSTime() time.Duration {
	if x.TLSEnd == 0 || x.ConnectEnd == 0 {
		return 0
	}
	return x.TLSEnd - x.ConnectEnd
}

const (
	stateClosed = iota
	stateConnecting
	stateHandshake
	stateOpen
)

// Conn is one client connection to an Origin, owned by a Loop. It opens
// lazily on the first Do, carries one exchange at a time, and reopens after
// the server closes it.
type Conn struct {
	loop      *Loop
	origin    *Origin
	sock      socket // the engine's half of the connection
	live      bool   // registered with the loop: open or opening
	state     uint8
	activeIdx int
	x         *Exchange
	attempts  uint64 // connects begun, to tell a late failure from a new exchange
	h         Handler
	mustClose bool
	held      bool // the response is complete; its request is still being written
	p         Parser
	uses      int
	deadline  time.Duration
}

// NewConn makes a connection to t; nothing is opened until the first Do.
func (l *Loop) NewConn(t *Origin) *Conn {
	if t.h2Streams > 0 {
		return l.newH2Conn(t) // a stream slot (h2.go)
	}
	c := &Conn{loop: l, origin: t}
	c.sock = l.poll.socket(c)
	c.p.MaxHeaderBytes, c.p.MaxBodyBytes = l.opts.MaxHeaderBytes, l.opts.MaxBodyBytes
	return c
}

// Busy reports whether an exchange is in flight.
func (c *Conn) Busy() bool { return c.x != nil }

// Origin is where the connection goes.
func (c *Conn) Origin() *Origin { return c.origin }

// Do starts the exchange x; h learns when it ends. The connection must not be
// busy.
func (c *Conn) Do(x *Exchange, h Handler) {
	if c.x != nil {
		panic("httpx: Do on a busy connection")
	}
	now := c.loop.Now()
	x.reset(now)
	c.x, c.h = x, h
	c.deadline = now + c.loop.opts.Timeout
	if c.state == stateOpen {
		x.Reused = c.uses > 0
		c.send()
		return
	}
	c.connect()
}

// Close closes the connection. An exchange in flight is abandoned: its
// handler is not called.
func (c *Conn) Close() {
	c.x, c.h = nil, nil
	c.close()
}

func (c *Conn) connect() {
	c.attempts++
	c.x.ConnectStart = c.loop.Now()
	c.sock.connect()
}

// failLater fails the exchange from the loop rather than from inside Do: a
// handler that starts the next exchange at once, which fails at once too
// (no file descriptor left), would otherwise recurse without end, and the
// loop would never see the end of the run.
func (c *Conn) failLater(err error, class Failure) {
	c.loop.At(c.loop.Now()+1, &failTimer{c: c, attempt: c.attempts, err: err, class: class})
}

type failTimer struct {
	c       *Conn
	attempt uint64
	err     error
	class   Failure
}

func (t *failTimer) Fire(time.Duration) {
	if t.c.attempts == t.attempt && t.c.x != nil { // not closed or reused meanwhile
		t.c.fail(t.err, t.class)
	}
}

// opened is called by the socket once the connection (and its TLS
// handshake) is up: the request goes out.
func (c *Conn) opened() {
	if c.origin.TLS != nil {
		c.x.TLSEnd = c.loop.Now() // the socket set ConnectEnd when TCP was up
	} else {
		c.x.ConnectEnd = c.loop.Now()
	}
	c.state = stateOpen
	c.send()
}

func (c *Conn) send() {
	x := c.x
	c.mustClose = false
	c.p.Reset(x.Head, x.Keep)
	if x.Keep && c.p.Header == nil {
		c.p.Header, c.p.Body = c.loop.getBuf(), c.loop.getBuf()
	}
	x.Sent = c.loop.Now()
	c.sock.write(x.Request)
}

// take parses plain response bytes. It reports whether the connection still
// waits for more of the same response.
func (c *Conn) take(b []byte) bool {
	x := c.x
	if x == nil {
		// Bytes nobody asked for: the server is broken. Do not reuse the connection.
		c.close()
		return false
	}
	if x.FirstByte == 0 {
		x.FirstByte = c.loop.Now()
	}
	used, err := c.p.Feed(b)
	if err != nil {
		c.fail(err, FailureProtocol)
		return false
	}
	if c.p.Done() {
		if used < len(b) {
			c.mustClose = true
		}
		c.complete()
		return false
	}
	return true
}

func (c *Conn) eof() {
	if c.x == nil {
		c.close()
		return
	}
	if err := c.p.EOF(); err != nil {
		c.failRead(err)
		return
	}
	c.mustClose = true
	c.complete()
}

// failRead ends the exchange after the connection broke while reading.
func (c *Conn) failRead(err error) { c.fail(err, FailureReset) }

func (c *Conn) complete() {
	x := c.x
	x.End = c.loop.Now()
	x.Status = c.p.Status
	x.reasonLen = uint8(copy(x.reason[:], c.p.Reason()))
	x.BodyBytes = c.p.BodyBytes
	if x.Keep {
		// A body-less answer (HEAD, 204, 304) may name the coding its body
		// would have had: there is nothing to decode.
		if cs := c.p.Codings(); len(cs) > 0 && len(c.p.Body) > 0 {
			out, err := c.loop.dec.decode(c.loop.getBuf(), c.p.Body, cs, c.p.maxBody())
			if err != nil {
				c.loop.putBuf(out)
				c.fail(err, FailureProtocol)
				return
			}
			c.loop.putBuf(c.p.Body)
			c.p.Body = out
			x.Decoded, x.DecodedBytes = true, int64(len(out))
		}
		x.Header, x.Body = c.p.Header, c.p.Body
	}
	c.uses++
	if c.sock.holdForWrite() {
		// A server that answered before reading the whole request: the
		// handler may change the request's bytes, so it waits for the write.
		c.held = true
		return
	}
	c.finish()
}

// finish hands a complete response over, closing the connection first when
// it cannot carry another exchange.
func (c *Conn) finish() {
	c.held = false
	x := c.x
	if c.p.Close || c.mustClose || x.CloseAfter {
		c.close()
	}
	c.handOver(x)
}

// handOver ends the exchange: the handler runs (and may start the next
// exchange on this connection), then the kept buffers go back to the loop.
func (c *Conn) handOver(x *Exchange) {
	header, body := c.p.Header, c.p.Body
	c.p.Header, c.p.Body = nil, nil
	h := c.h
	c.x, c.h = nil, nil
	h.Done(c, x)
	c.loop.putBuf(header)
	c.loop.putBuf(body)
}

// fail ends the exchange in flight with err. A request that found a reused
// connection already closed by the server (a keep-alive race) is sent once
// more on a fresh connection when that is safe.
func (c *Conn) fail(err error, class Failure) {
	x := c.x
	stale := c.uses > 0 && !c.p.Started() && (class == FailureReset)
	c.close()
	if x == nil {
		return
	}
	if stale && x.Idempotent && !x.Retried {
		x.Retried = true
		c.connect()
		return
	}
	x.Err, x.Failure, x.End = err, class, c.loop.Now()
	c.handOver(x)
}

func (c *Conn) close() {
	if !c.live {
		return
	}
	c.loop.unregister(c)
	c.sock.close()
	c.state = stateClosed
	c.uses = 0
	c.held = false
}
