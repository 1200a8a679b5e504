//go:build !linux

package httpx

import "net/netip"

// targetSys is empty outside Linux: the portable engine dials Target.Addr.
type targetSys struct{}

func (*targetSys) set(netip.AddrPort) {}
