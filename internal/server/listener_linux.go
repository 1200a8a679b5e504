package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListenerPID finds the process that listens on addr, on this machine: the
// server of a loopback target that loadlab did not start, whose CPU then
// counts as the server's, not as other processes'. It reads the listening
// sockets of /proc/net/tcp and tcp6 (on addr itself or on a wildcard
// address with its port), then the processes whose file descriptors hold
// one; of several (a forking server's workers share the socket), the
// lowest pid, the parent. False when none is found or it is loadlab.
func ListenerPID(addr netip.AddrPort) (int, bool) {
	inodes := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, inode := range listeningInodes(data, addr) {
			inodes["socket:["+inode+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return 0, false
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	best := 0
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || (best != 0 && pid >= best) {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue // another user's process, or gone
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && inodes[link] {
				best = pid
				break
			}
		}
	}
	if best == 0 || best == os.Getpid() {
		return 0, false
	}
	return best, true
}

// listeningInodes reads a /proc/net/tcp table for the inodes of the
// sockets that listen on addr, or on addr's port at the wildcard address
// of its family.
func listeningInodes(table []byte, addr netip.AddrPort) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		local, ok := parseProcAddr(f[1])
		if !ok || local.Port() != addr.Port() {
			continue
		}
		ip, want := local.Addr().Unmap(), addr.Addr().Unmap()
		if ip == want || ip.IsUnspecified() || (local.Addr().Is6() && local.Addr().IsUnspecified()) {
			out = append(out, f[9])
		}
	}
	return out
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90": the address in
// host byte order, 32-bit words, and the port in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(hexIP)
	port, perr := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word in host order
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip, uint16(port)), true
}

// CommandLine names a process by its program alone (argv[0]'s base name):
// its arguments may hold secrets, and a found server is named, not
// described. "" when it cannot be read.
func CommandLine(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(data) == 0 {
		return ""
	}
	arg0, _, _ := bytes.Cut(data, []byte{0})
	// A server may rewrite its title ("nginx: master process nginx -c
	// /etc/nginx.conf"): its first word names it.
	first, _, _ := strings.Cut(string(arg0), " ")
	return strings.TrimSuffix(filepath.Base(first), ":")
}
