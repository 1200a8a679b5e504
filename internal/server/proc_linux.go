//go:build linux

package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// procStat is what loadlab uses of /proc/PID/stat. Times are in clock ticks.
type procStat struct {
	pid                          int
	name                         string
	state                        byte
	ppid, pgrp, session          int
	majflt, cmajflt              int64
	utime, stime, cutime, cstime int64
	threads                      int
	start                        uint64 // clock ticks after boot: with pid, names a process for good
}

func (s *procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

// procReader reads /proc files into one reused buffer, so that a sample allocates
// little. It is not safe for concurrent use.
type procReader struct {
	buf  []byte
	path []byte
}

func newProcReader() *procReader {
	return &procReader{buf: make([]byte, 4096), path: make([]byte, 0, 64)}
}

// procPath builds "/proc/PID/suffix" in the reader's path buffer.
func (r *procReader) procPath(pid int, suffix string) string {
	r.path = append(r.path[:0], "/proc/"...)
	r.path = strconv.AppendInt(r.path, int64(pid), 10)
	r.path = append(r.path, '/')
	r.path = append(r.path, suffix...)
	return string(r.path)
}

// read returns the whole file at path; the result is valid until the next read.
func (r *procReader) read(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

func (r *procReader) stat(pid int) (procStat, error) {
	b, err := r.read(r.procPath(pid, "stat"))
	if err != nil {
		return procStat{}, err
	}
	st, err := parseStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// parseStat parses /proc/PID/stat. The command name is in parentheses and may itself
// hold spaces and parentheses, so the fields start after the last ')'.
func parseStat(b []byte) (procStat, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open || closing+2 > len(b) {
		return procStat{}, errors.New("malformed stat line")
	}
	var st procStat
	pid, ok := parseInt(bytes.TrimSpace(b[:open]))
	if !ok {
		return procStat{}, errors.New("malformed pid")
	}
	st.pid = int(pid)
	st.name = string(b[open+1 : closing])

	// Fields numbered as in proc(5), which counts pid as 1 and comm as 2.
	var f [23][]byte
	rest := b[closing+2:]
	for i := 3; i < len(f) && len(rest) > 0; i++ {
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			f[i], rest = bytes.TrimSpace(rest), nil
		} else {
			f[i], rest = rest[:j], rest[j+1:]
		}
	}
	if len(f[3]) != 1 || f[22] == nil {
		return procStat{}, errors.New("too few fields")
	}
	st.state = f[3][0]
	ints := []struct {
		field int
		dst   *int64
	}{{12, &st.majflt}, {13, &st.cmajflt}, {14, &st.utime}, {15, &st.stime},
		{16, &st.cutime}, {17, &st.cstime}}
	for _, x := range ints {
		v, ok := parseInt(f[x.field])
		if !ok {
			return procStat{}, fmt.Errorf("field %d: %q is not a number", x.field, f[x.field])
		}
		*x.dst = v
	}
	var small [4]int64
	for i, field := range []int{4, 5, 6, 20} {
		v, ok := parseInt(f[field])
		if !ok {
			return procStat{}, fmt.Errorf("field %d: %q is not a number", field, f[field])
		}
		small[i] = v
	}
	st.ppid, st.pgrp, st.session, st.threads = int(small[0]), int(small[1]), int(small[2]), int(small[3])
	start, err := strconv.ParseUint(string(f[22]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("field 22: %w", err)
	}
	st.start = start
	return st, nil
}

// parseInt parses a decimal, possibly negative, without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// statusMemory returns VmRSS and VmSwap of /proc/PID/status in bytes. They are kept
// as counters by the kernel, so this read costs the same whatever the process's size.
func (r *procReader) statusMemory(pid int) (rss, swap int64, err error) {
	b, err := r.read(r.procPath(pid, "status"))
	if err != nil {
		return 0, 0, err
	}
	rss, ok := fieldKB(b, "\nVmRSS:")
	if !ok {
		return 0, 0, nil // a zombie or kernel thread: no memory
	}
	swap, _ = fieldKB(b, "\nVmSwap:") // absent without swap support
	return rss, swap, nil
}

// pss returns the Pss line of /proc/PID/smaps_rollup in bytes. The kernel walks the
// page tables to compute it, which takes milliseconds per resident gigabyte.
func (r *procReader) pss(pid int) (int64, error) {
	b, err := r.read(r.procPath(pid, "smaps_rollup"))
	if err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, nil // exiting: its address space is already released
	}
	return parseRollupPSS(b)
}

func parseRollupPSS(b []byte) (int64, error) {
	pss, ok := fieldKB(b, "\nPss:")
	if !ok {
		return 0, errors.New("smaps_rollup: no readable Pss line")
	}
	return pss, nil
}

// fieldKB returns the value of a "Key:   123 kB" line in bytes; key includes the
// newline before it, so that "Pss:" does not match "SwapPss:".
func fieldKB(b []byte, key string) (int64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	rest = bytes.TrimSpace(rest)
	if j := bytes.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	v, ok := parseInt(rest)
	return v << 10, ok
}

// fds counts the open file descriptors of pid. Since Linux 6.2 the size of /proc/PID/fd
// is that count, which spares listing thousands of connections every sample; older
// kernels report 0 and get the listing.
func (r *procReader) fds(pid int) (int, error) {
	path := r.procPath(pid, "fd")
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	if st.Size > 0 {
		return int(st.Size), nil
	}
	dir, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	return len(names), err
}

// children appends the pids of pid's children, read from /proc/PID/task/TID/children of
// each of its threads (a child belongs to the thread that forked it).
func (r *procReader) children(dst []int, pid, threads int) []int {
	if threads == 1 {
		b, err := r.read(r.procPath(pid, "task/"+strconv.Itoa(pid)+"/children"))
		if err != nil {
			return dst
		}
		return appendPIDs(dst, b)
	}
	tids, err := r.tasks(pid)
	if err != nil {
		return dst
	}
	for _, tid := range tids {
		b, err := r.read(r.procPath(pid, "task/"+tid+"/children"))
		if err != nil {
			continue // the thread exited
		}
		dst = appendPIDs(dst, b)
	}
	return dst
}

func appendPIDs(dst []int, b []byte) []int {
	for _, f := range bytes.Fields(b) {
		if v, ok := parseInt(f); ok && v > 0 {
			dst = append(dst, int(v))
		}
	}
	return dst
}

// allPIDs lists the processes in /proc.
func allPIDs() ([]int, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if v, ok := parseInt([]byte(n)); ok && v > 0 {
			pids = append(pids, int(v))
		}
	}
	return pids, nil
}

// childrenFileWorks reports whether this kernel has /proc/PID/task/TID/children
// (CONFIG_PROC_CHILDREN, present in the kernels of every major distribution).
func childrenFileWorks() bool {
	pid := os.Getpid()
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	return err == nil
}

// clockTicks returns USER_HZ, the unit of the times in /proc/PID/stat, from the
// AT_CLKTCK entry the kernel puts in every process's auxiliary vector. It is 100 on
// every common architecture, which is also the fallback.
func clockTicks() int64 {
	const atClockTick = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	word := int(unsafe.Sizeof(uintptr(0)))
	read := func(p []byte) uint64 {
		if word == 8 {
			return binary.NativeEndian.Uint64(p)
		}
		return uint64(binary.NativeEndian.Uint32(p))
	}
	for i := 0; i+2*word <= len(b); i += 2 * word {
		if key := read(b[i:]); key == atClockTick {
			if v := read(b[i+word:]); v > 0 && v < math.MaxInt32 {
				return int64(v)
			}
		}
	}
	return 100
}

// cpuCapacity returns how many CPUs pid may use: the online CPUs, or the CPU quota of
// its cgroup when lower (cgroup v2 cpu.max or v1 cpu.cfs_quota_us, on the cgroup and
// each ancestor).
func cpuCapacity(pid int) float64 {
	capacity := float64(onlineCPUs())
	if quota, ok := cgroupCPUQuota(pid); ok && quota < capacity {
		capacity = quota
	}
	return capacity
}

func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n, ok := countCPUList(strings.TrimSpace(string(b)))
	if !ok || n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// countCPUList counts the CPUs in a list such as "0-3,8,10-11".
func countCPUList(s string) (int, bool) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, false
			}
		}
		n += b - a + 1
	}
	return n, true
}

func cgroupCPUQuota(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, false
	}
	best, found := math.Inf(1), false
	consider := func(q float64, ok bool) {
		if ok && q < best {
			best, found = q, true
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		controllers, path := parts[1], parts[2]
		if controllers == "" { // cgroup v2
			for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				walkCgroup(root, path, func(dir string) { consider(readCPUMax(dir)) })
			}
			continue
		}
		for _, c := range strings.Split(controllers, ",") {
			if c != "cpu" {
				continue
			}
			for _, root := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
				walkCgroup(root, path, func(dir string) { consider(readCFSQuota(dir)) })
			}
		}
	}
	return best, found
}

// walkCgroup calls visit for the cgroup directory of path and each ancestor up to the
// mount root; inside a container the mount root is the container's own cgroup.
func walkCgroup(root, path string, visit func(dir string)) {
	path = filepath.Clean("/" + path)
	for {
		visit(filepath.Join(root, path))
		if path == "/" {
			return
		}
		path = filepath.Dir(path)
	}
}

// readCPUMax reads a cgroup v2 cpu.max: "max 100000" or "150000 100000".
func readCPUMax(dir string) (float64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 || fields[0] == "max" {
		return 0, false
	}
	return quotaRatio(fields[0], fields[1])
}

// readCFSQuota reads cgroup v1 cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
func readCFSQuota(dir string) (float64, bool) {
	quota, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	if err != nil {
		return 0, false
	}
	period, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err != nil {
		return 0, false
	}
	return quotaRatio(strings.TrimSpace(string(quota)), strings.TrimSpace(string(period)))
}

func quotaRatio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}

// runDelays calls f with each thread of pid and the time it has spent
// runnable but waiting for a CPU, in nanoseconds: the second field of
// /proc/PID/task/TID/schedstat (the kernel's sched_info run_delay). It
// reports false when the file cannot be read (a kernel without
// CONFIG_SCHED_INFO, or the process is gone).
func (r *procReader) runDelays(pid int, f func(tid int, delay int64)) bool {
	tids, err := r.tasks(pid)
	if err != nil {
		return false
	}
	read := false
	for _, name := range tids {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := r.read(r.procPath(pid, "task/"+name+"/schedstat"))
		if err != nil {
			continue // the thread exited
		}
		fields := bytes.Fields(b)
		if len(fields) < 2 {
			continue
		}
		if d, ok := parseInt(fields[1]); ok {
			f(tid, d)
			read = true
		}
	}
	return read
}

// tasks lists the thread ids of pid, from /proc/PID/task.
func (r *procReader) tasks(pid int) ([]string, error) {
	dir, err := os.Open(r.procPath(pid, "task"))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.Readdirnames(-1)
}
