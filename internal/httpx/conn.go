package httpx

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Class says why an exchange failed to produce a response.
type Class uint8

// The failure classes. A response with a 4xx or 5xx status is not a failure
// here: it is a response, and the caller classifies it by its status.
const (
	ClassNone     Class = iota
	ClassConnect        // could not connect: refused, unreachable, out of sockets
	ClassTimeout        // no whole response within the timeout
	ClassReset          // the connection was closed or reset before the response ended
	ClassProtocol       // the response was not valid HTTP/1.x or was over a size limit
	ClassTLS            // the TLS handshake failed (bad certificate, protocol error)
)

var classNames = [...]string{"", "connect", "timeout", "reset", "protocol", "tls"}

func (c Class) String() string { return classNames[c] }

// Exchange is one request and its response. The caller sets the request
// fields; the loop sets the rest before calling the Handler. An Exchange is
// reused from one request to the next.
type Exchange struct {
	Request    []byte // the encoded request; must stay unchanged until Done
	Head       bool   // a HEAD request: the response has no body
	Keep       bool   // keep the header block and body for the handler to read
	Idempotent bool   // safe to send again on a fresh connection if a reused one was stale
	CloseAfter bool   // the request asked the server to close the connection

	// Times on the loop's clock. ConnectStart and ConnectEnd are zero when the
	// exchange reused a connection.
	Start, ConnectStart, ConnectEnd, Sent, FirstByte, End time.Duration

	Status    int
	Header    []byte // raw header lines, when Keep; valid until the Handler returns
	Body      []byte // the body, when Keep; valid until the Handler returns
	BodyBytes int64
	Err       error
	Class     Class
	Retried   bool // sent a second time because a reused connection was stale
	Reused    bool // went over a connection that had served an earlier exchange
}

func (x *Exchange) reset(now time.Duration) {
	x.Start, x.ConnectStart, x.ConnectEnd, x.Sent, x.FirstByte, x.End = now, 0, 0, 0, 0, 0
	x.Status, x.Header, x.Body, x.BodyBytes = 0, nil, nil, 0
	x.Err, x.Class, x.Retried, x.Reused = nil, ClassNone, false, false
}

// ConnectTime is how long the exchange spent opening its connection.
func (x *Exchange) ConnectTime() time.Duration {
	if x.ConnectEnd == 0 {
		return 0
	}
	return x.ConnectEnd - x.ConnectStart
}

const (
	stateClosed = iota
	stateConnecting
	stateHandshake
	stateOpen
)

// Conn is one client connection to a Target, owned by a Loop. It opens
// lazily on the first Do, carries one exchange at a time, and reopens after
// the server closes it.
type Conn struct {
	loop      *Loop
	target    *Target
	fd        int
	state     uint8
	activeIdx int
	x         *Exchange
	attempts  uint64 // connects begun, to tell a late failure from a new exchange
	h         Handler
	out       []byte // request bytes not yet written
	wantOut   bool   // registered for EPOLLOUT
	mustClose bool
	p         Parser
	uses      int
	deadline  time.Duration
	tls       *tlsConn
}

// NewConn makes a connection to t; nothing is opened until the first Do.
func (l *Loop) NewConn(t *Target) *Conn {
	c := &Conn{loop: l, target: t, fd: -1}
	c.p.MaxHeaderBytes, c.p.MaxBodyBytes = l.opts.MaxHeaderBytes, l.opts.MaxBodyBytes
	return c
}

// Busy reports whether an exchange is in flight.
func (c *Conn) Busy() bool { return c.x != nil }

// Target is where the connection goes.
func (c *Conn) Target() *Target { return c.target }

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
	x := c.x
	x.ConnectStart = c.loop.Now()
	fd, err := unix.Socket(c.target.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if err == unix.EMFILE || err == unix.ENFILE {
			err = fmt.Errorf("%w (raise the open-file limit: ulimit -n)", err)
		}
		c.failLater(fmt.Errorf("connect %s: %w", c.target.Addr, err), ClassConnect)
		return
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	c.fd = fd
	c.loop.register(c)
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(c.loop.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		c.fail(fmt.Errorf("epoll_ctl: %w", err), ClassConnect)
		return
	}
	c.wantOut = true
	c.state = stateConnecting
	err = unix.Connect(fd, c.target.sockaddr)
	switch err {
	case nil:
		c.connected()
	case unix.EINPROGRESS, unix.EINTR:
		// wait for EPOLLOUT
	default:
		c.close() // no event of this socket may come before the failure
		c.failLater(fmt.Errorf("connect %s: %w", c.target.Addr, err), ClassConnect)
	}
}

// failLater fails the exchange from the loop rather than from inside Do: a
// handler that starts the next exchange at once, which fails at once too
// (no file descriptor left), would otherwise recurse without end, and the
// loop would never see the end of the run.
func (c *Conn) failLater(err error, class Class) {
	c.loop.At(c.loop.Now()+1, &failTimer{c: c, attempt: c.attempts, err: err, class: class})
}

type failTimer struct {
	c       *Conn
	attempt uint64
	err     error
	class   Class
}

func (t *failTimer) Fire(time.Duration) {
	if t.c.attempts == t.attempt && t.c.x != nil { // not closed or reused meanwhile
		t.c.fail(t.err, t.class)
	}
}

func (c *Conn) connected() {
	if errno, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || errno != 0 {
		if err == nil {
			err = unix.Errno(errno)
		}
		c.fail(fmt.Errorf("connect %s: %w", c.target.Addr, err), ClassConnect)
		return
	}
	c.setOut(false)
	c.x.ConnectEnd = c.loop.Now()
	if c.target.TLS != nil {
		c.state = stateHandshake
		c.startTLS()
		return
	}
	c.state = stateOpen
	c.send()
}

func (c *Conn) setOut(on bool) {
	if c.wantOut == on {
		return
	}
	c.wantOut = on
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	if on {
		events |= unix.EPOLLOUT
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(c.fd)}
	unix.EpollCtl(c.loop.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
}

func (c *Conn) send() {
	x := c.x
	c.mustClose = false
	c.p.Reset(x.Head, x.Keep)
	if x.Keep && c.p.Header == nil {
		c.p.Header, c.p.Body = c.loop.getBuf(), c.loop.getBuf()
	}
	x.Sent = c.loop.Now()
	if c.tls != nil {
		c.out = c.tls.seal(x.Request)
	} else {
		c.out = x.Request
	}
	c.flush()
}

// flush writes what it can of c.out and waits for EPOLLOUT for the rest.
func (c *Conn) flush() {
	for len(c.out) > 0 {
		n, err := rawWrite(c.fd, c.out)
		if err == unix.EAGAIN {
			c.setOut(true)
			return
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			c.fail(fmt.Errorf("write: %w", err), ClassReset)
			return
		}
		c.out = c.out[n:]
	}
	c.setOut(false)
}

func (c *Conn) event(ev uint32) {
	switch c.state {
	case stateConnecting:
		c.connected()
		return
	case stateHandshake:
		c.tls.event(ev)
		return
	}
	if ev&unix.EPOLLOUT != 0 && len(c.out) > 0 {
		c.flush()
		if c.fd < 0 {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.readable()
	}
}

func (c *Conn) readable() {
	buf := c.loop.buf
	for c.fd >= 0 {
		n, err := rawRead(c.fd, buf)
		switch {
		case err == unix.EAGAIN:
			return
		case err == unix.EINTR:
			continue
		case err != nil:
			c.failRead(fmt.Errorf("read: %w", err))
			return
		case n == 0:
			c.eof()
			return
		}
		if c.tls != nil {
			if !c.tls.open(buf[:n]) {
				return
			}
			continue
		}
		if !c.take(buf[:n]) {
			return
		}
		if n < len(buf) {
			return // most likely drained; epoll says if not
		}
	}
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
		c.fail(err, ClassProtocol)
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
func (c *Conn) failRead(err error) { c.fail(err, ClassReset) }

func (c *Conn) complete() {
	x := c.x
	x.End = c.loop.Now()
	x.Status = c.p.Status
	x.BodyBytes = c.p.BodyBytes
	if x.Keep {
		x.Header, x.Body = c.p.Header, c.p.Body
	}
	c.uses++
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
func (c *Conn) fail(err error, class Class) {
	x := c.x
	stale := c.uses > 0 && !c.p.Started() && (class == ClassReset)
	c.close()
	if x == nil {
		return
	}
	if stale && x.Idempotent && !x.Retried {
		x.Retried = true
		c.connect()
		return
	}
	x.Err, x.Class, x.End = err, class, c.loop.Now()
	c.handOver(x)
}

func (c *Conn) close() {
	if c.fd < 0 {
		return
	}
	c.loop.unregister(c)
	unix.Close(c.fd)
	c.fd = -1
	c.state = stateClosed
	c.uses = 0
	c.out = nil
	c.wantOut = false
	if c.tls != nil {
		c.tls.close()
		c.tls = nil
	}
}
