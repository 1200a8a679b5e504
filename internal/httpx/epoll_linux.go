package httpx

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// epollPoller is the epoll engine's loop half: one epoll instance, an
// eventfd to wake it, and the sockets by file descriptor.
type epollPoller struct {
	l      *Loop
	epfd   int
	wakefd int
	byFD   []*epollSocket // by file descriptor
	events []unix.EpollEvent
	buf    []byte // what every read of the loop reads into
	plain  []byte // decrypted TLS bytes
	pwait2 bool
}

func newEpollPoller(l *Loop) (*epollPoller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return &epollPoller{
		l:      l,
		epfd:   epfd,
		wakefd: wakefd,
		events: make([]unix.EpollEvent, 512),
		buf:    make([]byte, 64<<10),
		pwait2: true,
	}, nil
}

func (p *epollPoller) plainBuf() []byte {
	if p.plain == nil {
		p.plain = make([]byte, 32<<10)
	}
	return p.plain
}

// start locks the loop to its OS thread and sets the thread's timer slack
// to 1 ns, so that the epoll wait's timeout is kept to the microsecond.
func (p *epollPoller) start() func() {
	runtime.LockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return runtime.UnlockOSThread
}

func (p *epollPoller) wait(timeout time.Duration) error {
	n, err := p.epollWait(timeout)
	if err != nil {
		if err == unix.EINTR {
			return nil
		}
		return fmt.Errorf("epoll_wait: %w", err)
	}
	for i := range n {
		ev := &p.events[i]
		fd := int(ev.Fd)
		if fd == p.wakefd {
			var b [8]byte
			unix.Read(p.wakefd, b[:])
			p.l.drainInbox()
			continue
		}
		if fd >= len(p.byFD) || p.byFD[fd] == nil {
			continue
		}
		p.byFD[fd].event(ev.Events)
	}
	return nil
}

// epollWait is epoll_pwait2, whose timeout has nanosecond resolution; before
// Linux 5.11 it falls back to epoll_pwait, whose timeout is whole
// milliseconds.
//
// It is a raw system call even when it sleeps, so the Go runtime sees the
// loop as running, not "in a system call". Otherwise its monitor thread takes
// the loop's P away after 20 µs of sleep and the loop has to get it back on
// waking: thousands of thread hand-offs a second, measured at about a fifth
// more CPU per request. Holding the P while asleep is safe because the engine
// keeps one P more than it has loops for every other goroutine, and a
// stop-the-world signal interrupts the wait (EINTR), after which the loop
// reaches a preemption point at once.
func (p *epollPoller) epollWait(timeout time.Duration) (int, error) {
	if p.pwait2 {
		var ts *unix.Timespec
		if timeout >= 0 {
			t := unix.NsecToTimespec(int64(timeout))
			ts = &t
		}
		r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd), uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), uintptr(unsafe.Pointer(ts)), 0, 8)
		if errno != unix.ENOSYS {
			if errno != 0 {
				return 0, errno
			}
			return int(r), nil
		}
		p.pwait2 = false
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), uintptr(ms), 0, 8)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

func (p *epollPoller) wake() {
	one := uint64(1)
	unix.Write(p.wakefd, (*[8]byte)(unsafe.Pointer(&one))[:])
}

func (p *epollPoller) socket(c *Conn) socket { return &epollSocket{c: c, p: p, fd: -1} }

func (p *epollPoller) close() {
	unix.Close(p.epfd)
	unix.Close(p.wakefd)
}

// epollSocket is one connection on the epoll engine: a non-blocking socket
// read and written with raw system calls when epoll says it is ready.
type epollSocket struct {
	c       *Conn
	p       *epollPoller
	fd      int
	out     []byte    // request bytes not yet written
	file    *BodyFile // the exchange's body from a file, while some is unsent
	fileOff int64     // how much of file is in out or written
	chunk   []byte    // the buffer file is read into; made at its first use
	wantOut bool      // registered for EPOLLOUT
	tls     *tlsConn
}

func (s *epollSocket) connect() {
	c := s.c
	fd, err := unix.Socket(c.origin.sys.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if err == unix.EMFILE || err == unix.ENFILE {
			err = fmt.Errorf("%w (raise the open-file limit: ulimit -n)", err)
		}
		c.failLater(fmt.Errorf("connect %s: %w", c.origin.Addr, err), FailureConnect)
		return
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	s.fd = fd
	c.loop.register(c)
	for fd >= len(s.p.byFD) {
		s.p.byFD = append(s.p.byFD, make([]*epollSocket, len(s.p.byFD)+64)...)
	}
	s.p.byFD[fd] = s
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(s.p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		c.fail(fmt.Errorf("epoll_ctl: %w", err), FailureConnect)
		return
	}
	s.wantOut = true
	c.state = stateConnecting
	err = unix.Connect(fd, c.origin.sys.own())
	switch err {
	case nil:
		s.connected()
	case unix.EINPROGRESS, unix.EINTR:
		// wait for EPOLLOUT
	default:
		c.close() // no event of this socket may come before the failure
		c.failLater(fmt.Errorf("connect %s: %w", c.origin.Addr, err), FailureConnect)
	}
}

func (s *epollSocket) connected() {
	c := s.c
	if errno, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || errno != 0 {
		if err == nil {
			err = unix.Errno(errno)
		}
		c.fail(fmt.Errorf("connect %s: %w", c.origin.Addr, err), FailureConnect)
		return
	}
	s.setOut(false)
	if c.origin.TLS != nil {
		c.x.ConnectEnd = c.loop.Now()
		c.state = stateHandshake
		s.startTLS()
		return
	}
	c.opened()
}

func (s *epollSocket) setOut(on bool) {
	if s.wantOut == on {
		return
	}
	s.wantOut = on
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	if on {
		events |= unix.EPOLLOUT
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(s.fd)}
	unix.EpollCtl(s.p.epfd, unix.EPOLL_CTL_MOD, s.fd, &ev)
}

func (s *epollSocket) write(request []byte) {
	s.file, s.fileOff = s.c.x.BodyFile, 0
	if s.file != nil && s.file.Size == 0 {
		s.file = nil
	}
	if s.tls != nil {
		s.out = s.tls.seal(request)
	} else {
		s.out = request
	}
	s.flush()
}

// holdForWrite is false: a response that arrives before its request is all
// written is handed over at once, as it always was on this engine. The
// connection then closes: the server answered without reading the rest of
// the body, which will not be sent, so the next request on it would be read
// as body bytes. Closing also drops s.out, which still points into the
// request's bytes, so the handler may reuse them at once.
func (s *epollSocket) holdForWrite() bool {
	if len(s.out) > 0 || s.file != nil {
		s.c.mustClose = true
	}
	return false
}

// flush writes what it can of s.out, and of s.file after it, and waits
// for EPOLLOUT for the rest.
func (s *epollSocket) flush() {
	for len(s.out) > 0 || s.file != nil && s.nextChunk() {
		n, err := rawWrite(s.fd, s.out)
		if err == unix.EAGAIN {
			s.setOut(true)
			return
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			s.c.fail(fmt.Errorf("write: %w", err), FailureReset)
			return
		}
		s.out = s.out[n:]
	}
	if s.fd >= 0 {
		s.setOut(false)
	}
}

// nextChunk reads the next chunk of s.file into s.out (sealed, on TLS).
// It reports false when the read failed, and the exchange with it.
func (s *epollSocket) nextChunk() bool {
	if s.chunk == nil {
		s.chunk = make([]byte, bodyChunk)
	}
	b, err := s.file.readChunk(s.chunk, s.fileOff)
	if err != nil {
		s.file = nil
		s.c.fail(err, FailureReset)
		return false
	}
	s.fileOff += int64(len(b))
	if s.fileOff >= s.file.Size {
		s.file = nil
	}
	if s.tls != nil {
		b = s.tls.seal(b)
	}
	s.out = b
	return true
}

func (s *epollSocket) event(ev uint32) {
	switch s.c.state {
	case stateConnecting:
		s.connected()
		return
	case stateHandshake:
		s.tls.event(ev)
		return
	}
	if ev&unix.EPOLLOUT != 0 && (len(s.out) > 0 || s.file != nil) {
		s.flush()
		if s.fd < 0 {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.readable()
	}
}

func (s *epollSocket) readable() {
	c := s.c
	buf := s.p.buf
	for s.fd >= 0 {
		n, err := rawRead(s.fd, buf)
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
		if s.tls != nil {
			if !s.tls.open(buf[:n]) {
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

func (s *epollSocket) close() {
	if s.fd < 0 {
		return
	}
	s.p.byFD[s.fd] = nil
	unix.Close(s.fd)
	s.fd = -1
	s.out = nil
	s.file = nil
	s.wantOut = false
	if s.tls != nil {
		s.tls.close()
		s.tls = nil
	}
}
