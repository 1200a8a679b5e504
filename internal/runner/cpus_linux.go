package runner

import (
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// usableCPUs is how many CPUs this process may use: its affinity mask, or
// its cgroup's CPU quota when that is less (a container's CPU limit, such
// as a Kubernetes pod's resources.limits.cpu: 500m is 0.5). Without the
// quota, a pod limited to a fraction of a CPU on a node of many would never
// be seen saturated. go.uber.org/automaxprocs reads the same files, but
// only to set GOMAXPROCS: its reader is internal.
func usableCPUs() (float64, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, err
	}
	n := float64(set.Count())
	if q := cgroupCPUQuota("/proc/self/cgroup", "/sys/fs/cgroup"); q > 0 && q < n {
		return q, nil
	}
	return n, nil
}

// cgroupCPUQuota is the smallest CPU quota (quota / period, in CPUs) of
// the process's cgroup and its ancestors, read from cgroup v2's cpu.max or
// v1's cpu.cfs_quota_us and cpu.cfs_period_us; 0 when there is none. In a
// container, whose cgroup is mounted as the hierarchy's root while
// /proc/self/cgroup names its path on the host, the root's files are the
// container's.
func cgroupCPUQuota(procCgroup, root string) float64 {
	data, err := os.ReadFile(procCgroup)
	if err != nil {
		return 0
	}
	best := 0.0
	take := func(q float64) {
		if q > 0 && (best == 0 || q < best) {
			best = q
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir string
		var read func(dir string) float64
		switch {
		case f[0] == "0" && f[1] == "":
			dir, read = root, readCPUMax
		case hasController(f[1], "cpu"):
			dir, read = path.Join(root, f[1]), readCFS
			if _, err := os.Stat(dir); err != nil {
				dir = path.Join(root, "cpu") // cpu,cpuacct is often linked as cpu
			}
		default:
			continue
		}
		p := path.Clean("/" + f[2])
		if _, err := os.Stat(path.Join(dir, p)); err != nil {
			p = "/" // the container's own cgroup, mounted as the root
		}
		for {
			take(read(path.Join(dir, p)))
			if p == "/" {
				break
			}
			p = path.Dir(p)
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readCPUMax reads cgroup v2's "QUOTA PERIOD" ("max PERIOD": none).
func readCPUMax(dir string) float64 {
	b, err := os.ReadFile(path.Join(dir, "cpu.max"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || p <= 0 {
		return 0
	}
	return q / p
}

// readCFS reads cgroup v1's quota (-1: none) and period, in microseconds.
func readCFS(dir string) float64 {
	qb, err1 := os.ReadFile(path.Join(dir, "cpu.cfs_quota_us"))
	pb, err2 := os.ReadFile(path.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0
	}
	q, err1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
	p, err2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0
	}
	return q / p
}
