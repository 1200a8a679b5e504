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
