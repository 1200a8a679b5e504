// Package limits puts the server under test in a box: a CPU and memory
// limit, enforced by cgroups (v2 where it is delegated, v1 otherwise) or, for
// a CPU list, by CPU affinity where no cpuset controller is writable. It owns
// the limits as a plan gives them (Limits, parsed here), the cgroups made for
// one server start (Group: created under loadlab's own cgroup, removed after
// the run), the start of the server's first process inside them (Command),
// and what they measured (Stats). The server package calls it; nothing else
// touches cgroups.
package limits

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/quantity"
)

// Limits are the limits on the server under test. The zero value limits
// nothing.
type Limits struct {
	CPUs   CPUs
	Memory int64 // bytes; 0: no memory limit
	// Swap is the swap the server may use beside Memory, when SwapSet.
	// Unset, the system's default applies (cgroup v1: as much as there is;
	// v2: as much as the parent allows).
	Swap    int64
	SwapSet bool
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l.CPUs.IsZero() && l.Memory == 0 && !l.SwapSet }

// String is l as a plan would spell it: "cpus 1, memory 512 MiB, swap 0 B".
func (l Limits) String() string {
	var parts []string
	if !l.CPUs.IsZero() {
		parts = append(parts, "cpus "+l.CPUs.String())
	}
	if l.Memory > 0 {
		parts = append(parts, "memory "+quantity.FormatBytes(l.Memory))
	}
	if l.SwapSet {
		parts = append(parts, "swap "+quantity.FormatBytes(l.Swap))
	}
	return strings.Join(parts, ", ")
}

// CPUs is a CPU limit, one of three kinds. A count or a list gives the server
// whole CPUs to itself (a dedicated CPU); a quota gives it a share of time on
// every CPU (a shared one), as a hosting platform's "1.5 vCPU" does.
type CPUs struct {
	Count int     // "2": the first 2 CPUs loadlab may use
	List  []int   // "0-1", "0,2": exactly these CPUs
	Quota float64 // "150%": 1.5 CPUs' worth of time per period, on any CPU
}

// IsZero reports whether c limits nothing.
func (c CPUs) IsZero() bool { return c.Count == 0 && len(c.List) == 0 && c.Quota == 0 }

func (c CPUs) String() string {
	switch {
	case c.Count > 0:
		return strconv.Itoa(c.Count)
	case len(c.List) > 0:
		return FormatList(c.List)
	case c.Quota > 0:
		return strconv.FormatFloat(c.Quota*100, 'f', -1, 64) + "%"
	}
	return ""
}

// maxCPU bounds CPU numbers and counts: Linux's own NR_CPUS limit.
const maxCPU = 8192

// ParseCPUs reads a CPU limit: a count ("2"), a CPU list ("0-1", "0,2-3")
// or a quota ("150%").
func ParseCPUs(s string) (CPUs, error) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return CPUs{}, fmt.Errorf("empty: want a count (2), a CPU list (\"0-1\") or a quota (150%%)")
	case strings.HasSuffix(t, "%"):
		q, err := quantity.ParsePercent(t)
		if err != nil {
			return CPUs{}, err
		}
		if q <= 0 || q > maxCPU {
			return CPUs{}, fmt.Errorf("quota %q must be above 0%%", s)
		}
		// The kernel takes at least 1 ms of 100 ms.
		if q < 0.01 {
			return CPUs{}, fmt.Errorf("quota %q is below 1%%, the smallest the kernel enforces", s)
		}
		return CPUs{Quota: q}, nil
	case strings.ContainsAny(t, ",-"):
		list, err := ParseList(t)
		if err != nil {
			return CPUs{}, err
		}
		return CPUs{List: list}, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil {
		if f, ferr := strconv.ParseFloat(t, 64); ferr == nil && f > 0 && !math.IsInf(f, 0) {
			return CPUs{}, fmt.Errorf("%q is not a whole count of CPUs: write a quota such as %s%%", s, strconv.FormatFloat(f*100, 'f', -1, 64))
		}
		return CPUs{}, fmt.Errorf("bad cpus %q: want a count (2), a CPU list (\"0-1\") or a quota (150%%)", s)
	}
	if n < 1 || n > maxCPU {
		return CPUs{}, fmt.Errorf("cpus %d: want at least 1", n)
	}
	return CPUs{Count: n}, nil
}

// ParseList reads a CPU list as the kernel writes it: "0-3,8,10-11". The
// result is sorted and without duplicates.
func ParseList(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("bad CPU list %q at %q: want CPU numbers and ranges such as 0-1 or 0,2-3", s, part)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	list := make([]int, 0, len(seen))
	for c := range seen {
		list = append(list, c)
	}
	sort.Ints(list)
	return list, nil
}

// FormatList writes a sorted CPU list as the kernel does: "0-3,8".
func FormatList(list []int) string {
	var b strings.Builder
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(list[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(list[j]))
		}
		i = j + 1
	}
	return b.String()
}

// InForce is what a Group enforces, read back from the kernel after it was
// written (the kernel rounds a memory limit to whole pages).
type InForce struct {
	// Mechanism: "cgroup v1", "cgroup v2", or either with "+ affinity"
	// when the CPU list is set by sched_setaffinity.
	Mechanism string
	CPUList   []int   // the CPUs the server may run on; nil: any
	CPUQuota  float64 // CPUs of time per period; 0: none
	Memory    int64   // bytes; 0: none
	Swap      int64   // bytes; -1: not limited by loadlab
}

// Stats are what the cgroups measured over the server's whole life.
type Stats struct {
	MemoryPeak    int64   // the highest memory charged to the cgroup (v1 memory.max_usage_in_bytes, v2 memory.peak)
	MemoryFailcnt int64   // times the memory limit was hit (v1 memory.failcnt, v2 memory.events max)
	OOMKills      int64   // processes the kernel killed at the limit (memory.oom_control / memory.events oom_kill)
	CPUPeriods    int64   // CFS periods with the server runnable (cpu.stat nr_periods)
	Throttled     int64   // of which throttled (nr_throttled)
	ThrottledTime float64 // seconds the server was held back by its quota (throttled_time, throttled_usec)
	// Measured says which of the above were read: "memory", "cpu".
	Measured []string
}
