//go:build !linux

package server

import "net/netip"

// ListenerPID finds the process that listens on addr: on Linux only, by
// /proc; elsewhere none is found, and such a server counts among the
// machine's other processes.
func ListenerPID(addr netip.AddrPort) (int, bool) { return 0, false }

// CommandLine names a process by its program: on Linux only.
func CommandLine(pid int) string { return "" }
