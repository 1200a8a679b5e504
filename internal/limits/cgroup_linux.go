//go:build linux

package limits

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// removeWait bounds how long Remove retries a cgroup that still holds an
// exiting process (rmdir answers EBUSY until the last one is reaped).
const removeWait = 2 * time.Second

// Group is the cgroups one server start runs in, and the CPU affinity it
// starts with. Create makes it; Remove takes it away.
type Group struct {
	limits  Limits
	version int
	// dirs are the cgroups created, one per v1 hierarchy or one for v2, in
	// the order made; the server's first process joins each.
	dirs     []string
	memDir   string // the cgroup holding the memory controller, or ""
	cpuDir   string // the cgroup holding the cpu controller (a quota), or ""
	affinity []int  // set by sched_setaffinity before exec, or nil
	inForce  InForce

	mu      sync.Mutex
	removed bool
	final   Stats // read just before Remove
}

// UnavailableError says why a limit cannot be enforced on this machine, what
// is missing and how to get it. Nothing has been started when it is returned.
type UnavailableError struct {
	Limit   string // "memory", "swap" or "cpus"
	Missing string
	Advice  string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("server.limits.%s cannot be enforced: %s; %s", e.Limit, e.Missing, e.Advice)
}

const advice = "run loadlab as root, or in a cgroup delegated to you (cgroup v2: systemd-run --user --scope -p Delegate=yes loadlab run ...), or in a container started with a writable /sys/fs/cgroup"

var sequence atomic.Int64

// Create makes the cgroups for l under the cgroup loadlab runs in (in each
// v1 hierarchy it needs), writes the limits and reads them back. A limit
// that cannot be enforced is an *UnavailableError; a CPU count or list
// without a writable cpuset controller falls back to CPU affinity.
func Create(l Limits) (*Group, error) {
	if l.SwapSet && l.Memory == 0 {
		return nil, &UnavailableError{Limit: "swap", Missing: "a swap limit needs a memory limit beside it", Advice: "set server.limits.memory too"}
	}
	sys, err := discover()
	if err != nil {
		return nil, err
	}
	g := &Group{limits: l, inForce: InForce{Swap: -1}}
	var need []string
	if l.Memory > 0 {
		need = append(need, "memory")
	}
	if l.CPUs.Quota > 0 {
		need = append(need, "cpu")
	}
	if l.CPUs.Count > 0 || len(l.CPUs.List) > 0 {
		list, err := cpuList(l.CPUs)
		if err != nil {
			return nil, err
		}
		g.inForce.CPUList = list
		need = append(need, "cpuset")
	}
	name := fmt.Sprintf("loadlab-%d-%d", os.Getpid(), sequence.Add(1))

	// memory and cpu must be enforced; a cpuset can fall back to affinity.
	required := slices.DeleteFunc(slices.Clone(need), func(c string) bool { return c == "cpuset" })
	wantCpuset := len(required) < len(need)
	why := sys.v2Usable(required)
	v2Cpuset := wantCpuset && sys.v2Usable([]string{"cpuset"}) == ""
	if why == "" && (len(required) > 0 || v2Cpuset) {
		g.version = 2
		if wantCpuset && !v2Cpuset {
			g.affinity = g.inForce.CPUList
		}
		dir := filepath.Join(sys.v2Dir, name)
		sweepStale(sys.v2Dir)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the server's cgroup: %w", err)
		}
		g.dirs = []string{dir}
		if l.Memory > 0 {
			g.memDir = dir
		}
		if l.CPUs.Quota > 0 {
			g.cpuDir = dir
		}
		if err := g.writeV2(dir, v2Cpuset); err != nil {
			g.Remove()
			return nil, err
		}
	} else {
		g.version = 1
		for _, c := range need {
			parent, reason := sys.v1Dir(c)
			dir := ""
			if reason == "" {
				sweepStale(parent)
				dir = filepath.Join(parent, name)
				if err := os.Mkdir(dir, 0o755); err != nil {
					reason = fmt.Sprintf("cgroup v1 %s: %v", c, err)
					dir = ""
				}
			}
			if dir == "" {
				if c == "cpuset" {
					g.affinity = g.inForce.CPUList // affinity instead
					continue
				}
				g.Remove()
				limit := map[string]string{"memory": "memory", "cpu": "cpus"}[c]
				return nil, &UnavailableError{Limit: limit, Missing: fmt.Sprintf("no writable %s cgroup (%s; %s)", c, why, reason), Advice: advice}
			}
			g.dirs = append(g.dirs, dir)
			if err := g.writeV1(c, dir); err != nil {
				g.Remove()
				return nil, err
			}
		}
	}
	if len(g.dirs) == 0 && g.affinity == nil {
		return nil, errors.New("limits: nothing to limit") // IsZero limits are not created
	}
	g.inForce.Mechanism = fmt.Sprintf("cgroup v%d", g.version)
	switch {
	case len(g.dirs) == 0:
		g.inForce.Mechanism = "affinity"
	case g.affinity != nil:
		g.inForce.Mechanism += " + affinity"
	}
	return g, nil
}

// cpuList is the CPUs a count or a list gives the server, from those
// loadlab itself may use.
func cpuList(c CPUs) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading loadlab's CPU affinity: %w", err)
	}
	var allowed []int
	for cpu := 0; cpu < maxCPU && len(allowed) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			allowed = append(allowed, cpu)
		}
	}
	if c.Count > 0 {
		if c.Count > len(allowed) {
			return nil, &UnavailableError{Limit: "cpus", Missing: fmt.Sprintf("%d CPUs asked, loadlab may use %d (%s)", c.Count, len(allowed), FormatList(allowed)), Advice: "ask for fewer, or run loadlab where more CPUs are allowed"}
		}
		return allowed[:c.Count], nil
	}
	var missing []int
	for _, cpu := range c.List {
		if !slices.Contains(allowed, cpu) {
			missing = append(missing, cpu)
		}
	}
	if len(missing) > 0 {
		return nil, &UnavailableError{Limit: "cpus", Missing: fmt.Sprintf("CPUs %s are not among those loadlab may use (%s)", FormatList(missing), FormatList(allowed)), Advice: "name CPUs from that list, or give a count"}
	}
	return c.List, nil
}

func (g *Group) writeV2(dir string, cpuset bool) error {
	l := g.limits
	if l.Memory > 0 {
		if err := write(dir, "memory.max", strconv.FormatInt(l.Memory, 10)); err != nil {
			return err
		}
		g.inForce.Memory = readInt(dir, "memory.max")
		if l.SwapSet {
			if err := write(dir, "memory.swap.max", strconv.FormatInt(l.Swap, 10)); err != nil {
				return &UnavailableError{Limit: "swap", Missing: err.Error() + " (swap accounting is off)", Advice: "boot with swapaccount=1, or leave swap unset"}
			}
			g.inForce.Swap = readInt(dir, "memory.swap.max")
		}
	}
	if q := l.CPUs.Quota; q > 0 {
		const period = 100000
		if err := write(dir, "cpu.max", fmt.Sprintf("%d %d", int64(math.Round(q*period)), period)); err != nil {
			return err
		}
		if f := strings.Fields(readString(dir, "cpu.max")); len(f) == 2 {
			quota, err1 := strconv.ParseFloat(f[0], 64)
			per, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && per > 0 {
				g.inForce.CPUQuota = quota / per
			}
		}
	}
	if cpuset {
		if err := write(dir, "cpuset.cpus", FormatList(g.inForce.CPUList)); err != nil {
			return err
		}
		g.inForce.CPUList = readList(dir, "cpuset.cpus", g.inForce.CPUList)
	}
	return nil
}

func (g *Group) writeV1(controller, dir string) error {
	l := g.limits
	switch controller {
	case "memory":
		g.memDir = dir
		if err := write(dir, "memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)); err != nil {
			return err
		}
		g.inForce.Memory = readInt(dir, "memory.limit_in_bytes")
		if l.SwapSet {
			if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err != nil {
				return &UnavailableError{Limit: "swap", Missing: "the kernel does not account swap (no memory.memsw.limit_in_bytes)", Advice: "boot with swapaccount=1, or leave swap unset"}
			}
			if err := write(dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(l.Memory+l.Swap, 10)); err != nil {
				return err
			}
			g.inForce.Swap = readInt(dir, "memory.memsw.limit_in_bytes") - g.inForce.Memory
		}
	case "cpu":
		g.cpuDir = dir
		period := readInt(dir, "cpu.cfs_period_us")
		if period <= 0 {
			period = 100000
		}
		if err := write(dir, "cpu.cfs_quota_us", strconv.FormatInt(int64(math.Round(l.CPUs.Quota*float64(period))), 10)); err != nil {
			return err
		}
		g.inForce.CPUQuota = float64(readInt(dir, "cpu.cfs_quota_us")) / float64(period)
	case "cpuset":
		// A new v1 cpuset has no CPUs and no memory nodes: both must be set
		// before a process may join.
		if err := write(dir, "cpuset.mems", readString(filepath.Dir(dir), "cpuset.mems")); err != nil {
			return err
		}
		if err := write(dir, "cpuset.cpus", FormatList(g.inForce.CPUList)); err != nil {
			return err
		}
		g.inForce.CPUList = readList(dir, "cpuset.cpus", g.inForce.CPUList)
	}
	return nil
}

// InForce is what the group enforces, as read back.
func (g *Group) InForce() InForce { return g.inForce }

// Limits are the limits g was created for.
func (g *Group) Limits() Limits { return g.limits }

// Dirs are the cgroup directories of g, for the watchdog to remove.
func (g *Group) Dirs() []string { return slices.Clone(g.dirs) }

// Stats reads what the cgroups measured; after Remove, what they had
// measured just before.
func (g *Group) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return g.final
	}
	return g.read()
}

func (g *Group) read() Stats {
	var s Stats
	if d := g.memDir; d != "" {
		s.Measured = append(s.Measured, "memory")
		if g.version == 2 {
			s.MemoryPeak = readInt(d, "memory.peak")
			ev := readKeyed(d, "memory.events")
			s.MemoryFailcnt, s.OOMKills = ev["max"], ev["oom_kill"]
		} else {
			s.MemoryPeak = readInt(d, "memory.max_usage_in_bytes")
			s.MemoryFailcnt = readInt(d, "memory.failcnt")
			s.OOMKills = readKeyed(d, "memory.oom_control")["oom_kill"]
		}
	}
	if d := g.cpuDir; d != "" {
		s.Measured = append(s.Measured, "cpu")
		st := readKeyed(d, "cpu.stat")
		s.CPUPeriods, s.Throttled = st["nr_periods"], st["nr_throttled"]
		if g.version == 2 {
			s.ThrottledTime = float64(st["throttled_usec"]) / 1e6
		} else {
			s.ThrottledTime = float64(st["throttled_time"]) / 1e9
		}
	}
	return s
}

// OOMKills reads how many processes the kernel killed at the memory limit so
// far: cheap enough to read at every sample.
func (g *Group) OOMKills() int64 {
	if g.memDir == "" {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return g.final.OOMKills
	}
	if g.version == 2 {
		return readKeyed(g.memDir, "memory.events")["oom_kill"]
	}
	return readKeyed(g.memDir, "memory.oom_control")["oom_kill"]
}

// Remove reads the group's last figures and removes its cgroups, waiting up
// to removeWait for processes still exiting. It is idempotent; what it
// could not remove is in the error.
func (g *Group) Remove() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return nil
	}
	g.final = g.read()
	g.removed = true
	return RemoveDirs(g.dirs, removeWait)
}

// RemoveDirs removes cgroup directories, last first, retrying for up to wait
// while one still holds a process. The watchdog calls it too.
func RemoveDirs(dirs []string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		for {
			err := unix.Rmdir(dirs[i])
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if errors.Is(err, unix.EBUSY) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			break
		}
	}
	return errors.Join(errs...)
}

// sweepStale removes the empty cgroups a loadlab that no longer runs left in
// parent (it was SIGKILLed, and so was its watchdog). A cgroup that still
// holds a process is left: rmdir refuses it.
func sweepStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "loadlab-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			_ = unix.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

// system is where this machine's cgroups are, and loadlab's place in them.
type system struct {
	v2Dir   string            // loadlab's cgroup in the v2 hierarchy, or ""
	v1Dirs  map[string]string // controller → loadlab's cgroup in its v1 hierarchy
	v2Mount string
}

func discover() (*system, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, &UnavailableError{Limit: "cpus or memory", Missing: fmt.Sprintf("no cgroups: %v", err), Advice: advice}
	}
	paths := map[string]string{} // controller (or "" for v2) → path
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			paths[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, &UnavailableError{Limit: "cpus or memory", Missing: fmt.Sprintf("cannot read the mounts: %v", err), Advice: advice}
	}
	defer mounts.Close()
	sys := &system{v1Dirs: map[string]string{}}
	sc := bufio.NewScanner(mounts)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		root, point := unescape(lf[3]), unescape(lf[4])
		within := func(path string) string {
			rel, ok := strings.CutPrefix(path, root)
			if !ok {
				return ""
			}
			return filepath.Join(point, rel)
		}
		switch rf[0] {
		case "cgroup2":
			if p, ok := paths[""]; ok && sys.v2Dir == "" {
				sys.v2Dir, sys.v2Mount = within(p), point
			}
		case "cgroup":
			for _, opt := range strings.Split(rf[2], ",") {
				if p, ok := paths[opt]; ok {
					if _, seen := sys.v1Dirs[opt]; !seen {
						sys.v1Dirs[opt] = within(p)
					}
				}
			}
		}
	}
	return sys, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// v2Usable says why the v2 hierarchy cannot hold the controllers, or "" when
// it can: each is in loadlab's cgroup.controllers, and enabled (or can be
// enabled) in its cgroup.subtree_control. v2 lets a cgroup that holds
// processes enable none for its children, so loadlab, when its cgroup
// refuses with EBUSY, first moves itself into a leaf child of its own,
// loadlab-PID-self: as in a scope made for it (systemd-run --user --scope -p
// Delegate=yes), where it is alone. The leaf goes when loadlab has exited
// (see sweepStale).
func (s *system) v2Usable(need []string) string {
	if s.v2Dir == "" {
		return "no cgroup v2 hierarchy holds loadlab"
	}
	if len(need) == 0 {
		return ""
	}
	have := strings.Fields(readString(s.v2Dir, "cgroup.controllers"))
	enabled := strings.Fields(readString(s.v2Dir, "cgroup.subtree_control"))
	for _, c := range need {
		if !slices.Contains(have, c) {
			return fmt.Sprintf("cgroup v2 %s has no %s controller (cgroup.controllers: %q)", s.v2Dir, c, strings.Join(have, " "))
		}
	}
	for _, c := range need {
		if slices.Contains(enabled, c) {
			continue
		}
		err := write(s.v2Dir, "cgroup.subtree_control", "+"+c)
		if errors.Is(err, unix.EBUSY) {
			if moveErr := s.moveToLeaf(); moveErr != nil {
				return fmt.Sprintf("cgroup v2 %s holds processes, so it cannot delegate %s, and loadlab could not move into a leaf: %v", s.v2Dir, c, moveErr)
			}
			err = write(s.v2Dir, "cgroup.subtree_control", "+"+c)
		}
		if err != nil {
			return fmt.Sprintf("cgroup v2 %s does not delegate %s: %v", s.v2Dir, c, err)
		}
	}
	return ""
}

// moveToLeaf moves loadlab into loadlab-PID-self under its v2 cgroup.
func (s *system) moveToLeaf() error {
	leaf := filepath.Join(s.v2Dir, fmt.Sprintf("loadlab-%d-self", os.Getpid()))
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return write(leaf, "cgroup.procs", strconv.Itoa(os.Getpid()))
}

// v1Dir is loadlab's cgroup in the v1 hierarchy of controller, or why there
// is none.
func (s *system) v1Dir(controller string) (string, string) {
	dir, ok := s.v1Dirs[controller]
	if !ok || dir == "" {
		return "", fmt.Sprintf("no cgroup v1 %s hierarchy is mounted", controller)
	}
	if unix.Access(dir, unix.W_OK) != nil {
		return "", fmt.Sprintf("cgroup v1 %s: %s is not writable", controller, dir)
	}
	return dir, ""
}

func write(dir, file, value string) error {
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, path, err)
	}
	return nil
}

func readString(dir, file string) string {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readInt reads a number; "max" (v2's unlimited) and errors read 0.
func readInt(dir, file string) int64 {
	v, _ := strconv.ParseInt(readString(dir, file), 10, 64)
	return v
}

func readList(dir, file string, fallback []int) []int {
	if list, err := ParseList(readString(dir, file)); err == nil && len(list) > 0 {
		return list
	}
	return fallback
}

// readKeyed reads a file of "key value" lines (cpu.stat, memory.events).
func readKeyed(dir, file string) map[string]int64 {
	b, _ := os.ReadFile(filepath.Join(dir, file))
	out := map[string]int64{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) == 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}
