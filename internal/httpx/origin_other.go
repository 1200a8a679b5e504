//go:build !linux

package httpx

import "net/netip"

// originSys is empty outside Linux: the portable engine dials Origin.Addr.
type originSys struct{}

func (*originSys) set(netip.AddrPort) {}
