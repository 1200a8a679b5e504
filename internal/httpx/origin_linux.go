package httpx

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// originSys is an origin's address as the epoll engine connects to it,
// computed once.
type originSys struct {
	family   int
	sockaddr unix.Sockaddr
}

func (s *originSys) set(addr netip.AddrPort) {
	if addr.Addr().Is4() {
		s.family = unix.AF_INET
		s.sockaddr = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
		return
	}
	s.family = unix.AF_INET6
	sa := &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	if z := addr.Addr().Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	s.sockaddr = sa
}

// own is a copy of the address for one connect: unix.Connect writes the
// raw form into the Sockaddr it is given, so loops that shared one raced
// (go test -race ./internal/engine/ said so). One small allocation per
// connection, none per request.
func (s *originSys) own() unix.Sockaddr {
	switch sa := s.sockaddr.(type) {
	case *unix.SockaddrInet4:
		c := *sa
		return &c
	case *unix.SockaddrInet6:
		c := *sa
		return &c
	}
	return s.sockaddr
}
