package httpx

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// The portable engine. Each connection is a net.Conn (crypto/tls over it for
// HTTPS) with a goroutine that reads it. Another dials and handshakes, and
// one is started for each request to write it, so an idle connection has one
// goroutine, blocked in its read. All of them post what happened to
// the loop's channel of events, and the loop's wait selects on that channel,
// its wake-up channel and a timer for the next timer or sweep. So Handlers,
// Timers, the parser and the connection state machine run on the loop's
// goroutine exactly as on the epoll engine, and a slow server blocks only the
// goroutines of its own connection, never the loop.
//
// The reader reads into its connection's own buffer and waits for the loop
// to have parsed it before it reads again; the writer writes a copy of the
// request, so a handler may reuse its request bytes as soon as the exchange
// ends, whatever the writer is doing.

// portableEvents bounds the events waiting for the loop; connections whose
// events do not fit wait to post them.
const portableEvents = 1024

// A connection's read buffer starts small, as most responses are, and grows
// while reads fill it: an idle connection (a VU in think time) holds 4 KiB,
// a connection fetching big bodies reads them 64 KiB at a time.
const (
	portableReadBuffer    = 4 << 10
	portableMaxReadBuffer = 64 << 10
)

type portablePoller struct {
	l      *Loop
	events chan netEvent
	woken  chan struct{}
	timer  *time.Timer
	dialer net.Dialer
}

func newPortablePoller(l *Loop) *portablePoller {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &portablePoller{
		l:      l,
		events: make(chan netEvent, portableEvents),
		woken:  make(chan struct{}, 1),
		timer:  t,
		// No TCP keep-alive probes, as on the epoll engine.
		dialer: net.Dialer{KeepAlive: -1},
	}
}

// start does nothing: the loop's goroutine is not locked to its thread,
// because waking a locked goroutine from a channel costs a thread hand-off.
func (p *portablePoller) start() func() { return func() {} }

// wait handles one event, or the inbox, as soon as there is one within
// timeout, then whatever else is ready, up to the batch an epoll wait takes.
func (p *portablePoller) wait(timeout time.Duration) error {
	switch {
	case timeout == 0:
		select {
		case ev := <-p.events:
			p.handle(ev)
		case <-p.woken:
			p.l.drainInbox()
		default:
			return nil
		}
	case timeout < 0:
		select {
		case ev := <-p.events:
			p.handle(ev)
		case <-p.woken:
			p.l.drainInbox()
		}
	default:
		p.timer.Reset(timeout)
		select {
		case ev := <-p.events:
			p.handle(ev)
		case <-p.woken:
			p.l.drainInbox()
		case <-p.timer.C:
		}
		p.timer.Stop()
	}
	for range 511 {
		select {
		case ev := <-p.events:
			p.handle(ev)
		case <-p.woken:
			p.l.drainInbox()
		default:
			return nil
		}
	}
	return nil
}

func (p *portablePoller) wake() {
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

func (p *portablePoller) socket(c *Conn) socket { return &portableSocket{c: c, p: p} }

// close closes the connections whose opening the loop never handled; the
// goroutines of the others ended when the loop closed them.
func (p *portablePoller) close() {
	for {
		select {
		case ev := <-p.events:
			if ev.kind == evOpened {
				ev.conn.Close()
			}
		default:
			return
		}
	}
}

// The kinds of netEvent.
const (
	evOpened = iota + 1 // dialed and, for HTTPS, handshaken
	evRead              // a read returned: data, in the reader's buffer, and err
	evWrote             // a write the loop is waiting for (holdForWrite) ended
	evFailed            // dial, handshake or write failed: err and class
)

type netEvent struct {
	link  *netLink
	kind  uint8
	class Failure
	data  []byte // evRead: the bytes read, the loop's until it resumes the reader
	err   error
	conn  net.Conn // evOpened: the TCP connection, for the loop to close
	// evOpened: when the TCP connection was up (the handshake followed),
	// and whether the handshake resumed a TLS session.
	tcpUp   time.Duration
	resumed bool
}

func (p *portablePoller) handle(ev netEvent) {
	k := ev.link
	s := k.s
	if s.link != k {
		// The loop closed this connection meanwhile; its goroutines end.
		if ev.kind == evOpened {
			ev.conn.Close()
		}
		return
	}
	c := s.c
	switch ev.kind {
	case evOpened:
		k.conn = ev.conn
		if c.origin.TLS != nil {
			c.x.ConnectEnd, c.x.TLSResumed = ev.tcpUp, ev.resumed
		}
		c.opened()
		if s.link == k && !k.reading {
			k.reading = true
			go k.read(p, k.rw)
		}
	case evFailed:
		if c.held && c.x != nil {
			// The write of a request whose response is complete failed: the
			// server answered early and closed. The response stands.
			c.mustClose = true
			c.finish()
			return
		}
		c.fail(ev.err, ev.class)
	case evWrote:
		if c.held && c.x != nil {
			c.finish()
		}
		k.resumeReader()
	case evRead:
		if len(ev.data) > 0 {
			c.take(ev.data)
			if s.link != k {
				return // closed, and maybe reopened, by what the bytes ended
			}
		}
		if ev.err != nil {
			if ev.err == io.EOF {
				c.eof()
			} else {
				c.failRead(readError(ev.err, c.origin.TLS != nil))
			}
			return
		}
		if !c.held {
			k.resumeReader()
		}
	}
}

// portableSocket is a Conn's half of the portable engine; link is the
// connection open or opening, nil when closed.
type portableSocket struct {
	c    *Conn
	p    *portablePoller
	link *netLink
}

// netLink is one connection of the portable engine, from its dial to its
// close. Its events name it, so that those of a closed connection are known
// and dropped.
type netLink struct {
	s      *portableSocket
	cancel context.CancelFunc // ends the dial and the handshake
	conn   net.Conn           // the TCP connection, once opened; the loop's
	rw     io.ReadWriter      // conn, or the tls.Conn over it; the goroutines'
	wbuf   []byte             // the request being written; the writer's until written
	resume chan struct{}      // to the reader: the loop is done with its buffer
	done   chan struct{}      // closed by the loop when it closes the connection
	state  atomic.Uint32      // writeIdle, writeBusy, writeAwaited
	// written counts the bytes of requests written, for the loop to see
	// whether a held write still makes progress.
	written atomic.Int64
	holds   uint64 // the loop's: holdForWrite calls, to tell a stale watch
	// Used by the loop only.
	reading bool
}

const (
	writeIdle    = iota
	writeBusy    // the writer has a request to write
	writeAwaited // ...and the loop waits for it (holdForWrite)
)

func (s *portableSocket) connect() {
	c := s.c
	c.loop.register(c)
	c.state = stateConnecting
	ctx, cancel := context.WithCancel(context.Background())
	k := &netLink{
		s: s, cancel: cancel,
		resume: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	s.link = k
	go k.open(ctx, s.p, c.origin)
}

// write hands a copy of the request to a goroutine of its own. There is one
// at a time: the next request is written once this one's response is
// complete, which holdForWrite makes wait for the end of this write.
func (s *portableSocket) write(request []byte) {
	k := s.link
	k.wbuf = append(k.wbuf[:0], request...)
	k.state.Store(writeBusy)
	go k.write(s.p, k.wbuf, s.c.x.BodyFile)
}

func (s *portableSocket) holdForWrite() bool {
	k := s.link
	if k == nil || !k.state.CompareAndSwap(writeBusy, writeAwaited) {
		return false
	}
	k.holds++
	s.c.loop.At(s.c.loop.Now()+writeStall, &writeWatch{k: k, hold: k.holds, written: k.written.Load()})
	return true
}

// writeStall is how long a held write may make no progress. A server that
// answered before reading the whole body and keeps reading it lets the write
// end, and the connection is reused; one that never reads the rest would
// leave the response held until the timeout, and the rest of the body
// unsent: after writeStall without a byte written the connection closes
// and the response is handed over.
const writeStall = 500 * time.Millisecond

// writeWatch checks that a held write makes progress.
type writeWatch struct {
	k       *netLink
	hold    uint64
	written int64
}

func (w *writeWatch) Fire(now time.Duration) {
	k := w.k
	s := k.s
	c := s.c
	if s.link != k || k.holds != w.hold || !c.held || c.x == nil {
		return // the write ended, or the connection closed, meanwhile
	}
	if n := k.written.Load(); n != w.written {
		w.written = n
		c.loop.At(now+writeStall, w)
		return
	}
	c.mustClose = true
	c.finish()
}

func (s *portableSocket) close() {
	k := s.link
	if k == nil {
		return
	}
	s.link = nil
	close(k.done)
	k.cancel()
	if k.conn != nil {
		// The TCP connection, not the tls.Conn: closing TLS would first
		// write a close_notify alert, which could block the loop.
		k.conn.Close()
	}
}

func (k *netLink) resumeReader() {
	select {
	case k.resume <- struct{}{}:
	default:
	}
}

// post hands ev to the loop, unless the loop closed the connection.
func (k *netLink) post(p *portablePoller, ev netEvent) bool {
	ev.link = k
	select {
	case p.events <- ev:
		return true
	case <-k.done:
		return false
	}
}

// open dials and handshakes.
func (k *netLink) open(ctx context.Context, p *portablePoller, t *Origin) {
	raw, err := p.dialer.DialContext(ctx, "tcp", t.Addr.String())
	if err != nil {
		k.post(p, netEvent{kind: evFailed, class: FailureConnect, err: fmt.Errorf("connect %s: %w", t.Addr, dialError(err))})
		return
	}
	var rw io.ReadWriter = raw
	opened := netEvent{kind: evOpened, conn: raw}
	if t.TLS != nil {
		opened.tcpUp = p.l.Now()
		tc := tls.Client(raw, t.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			k.post(p, netEvent{kind: evFailed, class: FailureTLS, err: fmt.Errorf("tls handshake with %s: %w", t.Host, err)})
			return
		}
		opened.resumed = tc.ConnectionState().DidResume
		rw = tc
	}
	k.rw = rw // before the post: the loop starts the reader with it
	if !k.post(p, opened) {
		raw.Close()
	}
}

// writeChunk is how much of a request one Write writes, so that the loop
// sees a big body's progress (writeWatch).
const writeChunk = 256 << 10

// write writes one request, and its body from file after it if any.
func (k *netLink) write(p *portablePoller, b []byte, file *BodyFile) {
	var chunk []byte
	for off := int64(0); ; {
		for len(b) > 0 {
			n := min(len(b), writeChunk)
			if _, err := k.rw.Write(b[:n]); err != nil {
				k.post(p, netEvent{kind: evFailed, class: FailureReset, err: fmt.Errorf("write: %w", netCause(err))})
				return
			}
			k.written.Add(int64(n))
			b = b[n:]
		}
		if file == nil || off >= file.Size {
			break
		}
		if chunk == nil {
			chunk = make([]byte, min(bodyChunk, file.Size))
		}
		var err error
		if b, err = file.readChunk(chunk, off); err != nil {
			k.post(p, netEvent{kind: evFailed, class: FailureReset, err: err})
			return
		}
		off += int64(len(b))
	}
	if k.state.Swap(writeIdle) == writeAwaited {
		k.post(p, netEvent{kind: evWrote})
	}
}

// read reads until an error, one buffer at a time: the loop parses what a
// read brought before the next read reuses the buffer.
func (k *netLink) read(p *portablePoller, r io.Reader) {
	buf := make([]byte, portableReadBuffer)
	for {
		n, err := r.Read(buf)
		if !k.post(p, netEvent{kind: evRead, data: buf[:n], err: err}) || err != nil {
			return
		}
		select {
		case <-k.resume:
		case <-k.done:
			return
		}
		if n == len(buf) && len(buf) < portableMaxReadBuffer {
			buf = make([]byte, 4*len(buf))
		}
	}
}

// netCause is the system call's error inside a net error (connection
// refused, reset by peer), so that messages read as on the epoll engine,
// where the errno is all there is.
func netCause(err error) error {
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err
	}
	return err
}

// dialError is a dial's cause, with the hint the epoll engine gives when no
// file descriptor is left.
func dialError(err error) error {
	err = netCause(err)
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return fmt.Errorf("%w (raise the open-file limit: ulimit -n)", err)
	}
	return err
}

// readError words a failed read as the epoll engine does: "read: errno" for
// the socket's errors, "tls: ..." for the TLS record layer's.
func readError(err error, overTLS bool) error {
	var op *net.OpError
	if overTLS && !errors.As(err, &op) {
		return fmt.Errorf("tls: %w", err)
	}
	return fmt.Errorf("read: %w", netCause(err))
}
