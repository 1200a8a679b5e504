package httpx

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// TLS over the epoll engine. crypto/tls wants a net.Conn; tlsConn gives it one
// backed by buffers that the loop fills and drains. The handshake runs on its
// own goroutine, whose reads block until the loop brings bytes, because a
// crypto/tls handshake cannot be resumed after a "would block". After the
// handshake every read and write happens on the loop: reads that find no
// buffered bytes return a temporary error, which crypto/tls does not treat as
// fatal, so the record layer simply waits for the next epoll event.
type tlsConn struct {
	s    *epollSocket
	conn *tls.Conn

	mu        sync.Mutex
	in        []byte // ciphertext from the socket not yet read by crypto/tls
	inErr     error  // the socket's end, for the handshake goroutine
	signal    chan struct{}
	blocking  bool // during the handshake: Read waits for bytes
	closed    bool
	out       []byte // ciphertext crypto/tls wrote, for the loop to send
	handshake context.CancelFunc
}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

var errClosed = errors.New("connection closed")

func (s *epollSocket) startTLS() {
	c := s.c
	t := &tlsConn{s: s, signal: make(chan struct{}, 1), blocking: true}
	s.tls = t
	t.conn = tls.Client(t, c.origin.TLS)
	ctx, cancel := context.WithDeadline(context.Background(), c.loop.epoch.Add(c.deadline))
	t.handshake = cancel
	loop := c.loop
	go func() {
		err := t.conn.HandshakeContext(ctx)
		cancel()
		loop.Post(func() { t.handshakeDone(err) })
	}()
}

func (t *tlsConn) handshakeDone(err error) {
	c := t.s.c
	if t.s.tls != t || c.x == nil {
		return // the connection was closed or timed out meanwhile
	}
	if err != nil {
		c.fail(fmt.Errorf("tls handshake with %s: %w", c.origin.Host, err), FailureTLS)
		return
	}
	t.mu.Lock()
	t.blocking = false
	t.mu.Unlock()
	c.x.TLSResumed = t.conn.ConnectionState().DidResume
	c.opened()
	// Bytes that arrived after the handshake's last read (a TLS 1.3 session
	// ticket, say) wait in t.in; the next epoll event will read them.
}

// event handles socket readiness during the handshake.
func (t *tlsConn) event(ev uint32) {
	s := t.s
	if ev&unix.EPOLLOUT != 0 && len(s.out) > 0 {
		s.flush()
		if s.fd < 0 {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
		return
	}
	buf := s.p.buf
	for {
		n, err := rawRead(s.fd, buf)
		if err == unix.EAGAIN {
			return
		}
		if err == unix.EINTR {
			continue
		}
		t.mu.Lock()
		switch {
		case err != nil:
			t.inErr = err
		case n == 0:
			t.inErr = io.EOF
		default:
			t.in = append(t.in, buf[:n]...)
		}
		t.mu.Unlock()
		t.notify()
		if err != nil || n == 0 {
			// Keep the fd until the handshake goroutine reports; stop polling it.
			unix.EpollCtl(s.p.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
			return
		}
	}
}

func (t *tlsConn) notify() {
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// seal encrypts a request for sending.
func (t *tlsConn) seal(plain []byte) []byte {
	t.out = t.out[:0]
	if _, err := t.conn.Write(plain); err != nil {
		return nil
	}
	return t.out
}

// open decrypts ciphertext from the socket and hands the plaintext to the
// response parser. It reports whether the connection still waits for more.
func (t *tlsConn) open(cipher []byte) bool {
	s, c := t.s, t.s.c
	t.in = append(t.in, cipher...)
	plain := s.p.plainBuf()
	for s.fd >= 0 && s.tls == t {
		n, err := t.conn.Read(plain)
		if n > 0 && !c.take(plain[:n]) {
			return false
		}
		var wb wouldBlock
		switch {
		case err == nil:
		case errors.As(err, &wb):
			return true
		case err == io.EOF:
			c.eof()
			return false
		default:
			c.fail(fmt.Errorf("tls: %w", err), FailureReset)
			return false
		}
	}
	return false
}

func (t *tlsConn) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.notify()
	if t.handshake != nil {
		t.handshake()
	}
}

// Read is called by crypto/tls: blocking during the handshake, on the loop after it.
func (t *tlsConn) Read(b []byte) (int, error) {
	for {
		t.mu.Lock()
		if len(t.in) > 0 {
			n := copy(b, t.in)
			t.in = t.in[:copy(t.in, t.in[n:])]
			t.mu.Unlock()
			return n, nil
		}
		if t.closed {
			t.mu.Unlock()
			return 0, errClosed
		}
		if t.inErr != nil {
			err := t.inErr
			t.mu.Unlock()
			return 0, err
		}
		if !t.blocking {
			t.mu.Unlock()
			return 0, wouldBlock{}
		}
		t.mu.Unlock()
		<-t.signal
	}
}

// Write is called by crypto/tls. During the handshake it hands the bytes to
// the loop; after it, it runs on the loop and only buffers them.
func (t *tlsConn) Write(b []byte) (int, error) {
	t.mu.Lock()
	blocking, closed := t.blocking, t.closed
	if !blocking {
		t.out = append(t.out, b...)
		t.mu.Unlock()
		return len(b), nil
	}
	t.mu.Unlock()
	if closed {
		return 0, errClosed
	}
	data := append([]byte(nil), b...)
	s := t.s
	s.c.loop.Post(func() {
		if s.tls != t || s.fd < 0 {
			return
		}
		s.out = append(s.out, data...)
		s.flush()
	})
	return len(b), nil
}

// Close is called by crypto/tls when the handshake's context ends.
func (t *tlsConn) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.notify()
	return nil
}

func (t *tlsConn) LocalAddr() net.Addr              { return nil }
func (t *tlsConn) RemoteAddr() net.Addr             { return nil }
func (t *tlsConn) SetDeadline(time.Time) error      { return nil }
func (t *tlsConn) SetReadDeadline(time.Time) error  { return nil }
func (t *tlsConn) SetWriteDeadline(time.Time) error { return nil }
