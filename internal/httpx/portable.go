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
// HTTPS) with two goroutines: one dials, handshakes and then writes the
// requests the loop hands it; the other reads. Both post what happened to
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

// portableReadBuffer is each connection's read buffer.
const portableReadBuffer = 16 << 10

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

// close has nothing to free: closing the connections ended their goroutines.
func (p *portablePoller) close() {}

// The kinds of netEvent.
const (
	evOpened = iota + 1 // dialed and, for HTTPS, handshaken
	evRead              // a read returned: n bytes in the link's buffer, and err
	evWrote             // a write the loop is waiting for (holdForWrite) ended
	evFailed            // dial, handshake or write failed: err and class
)

type netEvent struct {
	link  *netLink
	kind  uint8
	class Class
	n     int
	err   error
	conn  net.Conn // evOpened: the TCP connection, for the loop to close
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
		c.opened()
		if s.link == k && !k.reading {
			k.reading = true
			go k.read(p, k.rw)
		}
	case evFailed:
		c.fail(ev.err, ev.class)
	case evWrote:
		if c.held && c.x != nil {
			c.finish()
		}
		k.resumeReader()
	case evRead:
		if ev.n > 0 {
			c.take(k.buf[:ev.n])
			if s.link != k {
				return // closed, and maybe reopened, by what the bytes ended
			}
		}
		if ev.err != nil {
			if ev.err == io.EOF {
				c.eof()
			} else {
				c.failRead(readError(ev.err, c.target.TLS != nil))
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
	buf    []byte             // the reader's; the loop reads it between evRead and resume
	wbuf   []byte             // the request being written; the writer's until written
	writes chan []byte        // to the writer
	resume chan struct{}      // to the reader: the loop is done with buf
	done   chan struct{}      // closed by the loop when it closes the connection
	state  atomic.Uint32      // writeIdle, writeBusy, writeAwaited
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
		writes: make(chan []byte, 1),
		resume: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	s.link = k
	go k.run(ctx, s.p, c.target)
}

func (s *portableSocket) write(request []byte) {
	k := s.link
	k.wbuf = append(k.wbuf[:0], request...)
	k.state.Store(writeBusy)
	k.writes <- k.wbuf // never blocks: the writer took the last request before it wrote it
}

func (s *portableSocket) holdForWrite() bool {
	return s.link != nil && s.link.state.CompareAndSwap(writeBusy, writeAwaited)
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

// run dials and handshakes, then writes what the loop hands it until the
// connection is closed.
func (k *netLink) run(ctx context.Context, p *portablePoller, t *Target) {
	raw, err := p.dialer.DialContext(ctx, "tcp", t.Addr.String())
	if err != nil {
		k.post(p, netEvent{kind: evFailed, class: ClassConnect, err: fmt.Errorf("connect %s: %w", t.Addr, dialError(err))})
		return
	}
	var rw io.ReadWriter = raw
	if t.TLS != nil {
		tc := tls.Client(raw, t.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			k.post(p, netEvent{kind: evFailed, class: ClassTLS, err: fmt.Errorf("tls handshake with %s: %w", t.Host, err)})
			return
		}
		rw = tc
	}
	k.rw = rw // before the post: the loop starts the reader with it
	k.buf = make([]byte, portableReadBuffer)
	if !k.post(p, netEvent{kind: evOpened, conn: raw}) {
		raw.Close()
		return
	}
	for {
		select {
		case b := <-k.writes:
			if _, err := rw.Write(b); err != nil {
				raw.Close()
				k.post(p, netEvent{kind: evFailed, class: ClassReset, err: fmt.Errorf("write: %w", netCause(err))})
				return
			}
			if k.state.Swap(writeIdle) == writeAwaited {
				if !k.post(p, netEvent{kind: evWrote}) {
					return
				}
			}
		case <-k.done:
			raw.Close()
			return
		}
	}
}

// read reads until an error, one buffer at a time.
func (k *netLink) read(p *portablePoller, r io.Reader) {
	for {
		n, err := r.Read(k.buf)
		if !k.post(p, netEvent{kind: evRead, n: n, err: err}) || err != nil {
			return
		}
		select {
		case <-k.resume:
		case <-k.done:
			return
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
