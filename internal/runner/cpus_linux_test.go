package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupCPUQuota reads the CPU quota from cgroup trees written here:
// v2 and v1, on the host (the process's path under the root, a parent's
// quota the smaller) and in a container (its cgroup mounted as the root).
func TestCgroupCPUQuota(t *testing.T) {
	t.Parallel()
	write := func(root, rel, body string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	for _, c := range []struct {
		name   string
		cgroup string
		files  map[string]string
		want   float64
	}{
		{"v2 none", "0::/user.slice\n", map[string]string{"user.slice/cpu.max": "max 100000\n"}, 0},
		{"v2 pod", "0::/kubepods/pod1/c1\n", map[string]string{
			"kubepods/pod1/c1/cpu.max": "50000 100000\n", "kubepods/pod1/cpu.max": "50000 100000\n", "kubepods/cpu.max": "max 100000\n"}, 0.5},
		{"v2 parent smaller", "0::/a/b\n", map[string]string{"a/b/cpu.max": "300000 100000\n", "a/cpu.max": "150000 100000\n"}, 1.5},
		{"v1 host path", "4:cpu,cpuacct:/loadlab-cluster/kubepods/pod1/c1\n2:memory:/x\n", map[string]string{
			"cpu,cpuacct/loadlab-cluster/kubepods/pod1/c1/cpu.cfs_quota_us":  "20000\n",
			"cpu,cpuacct/loadlab-cluster/kubepods/pod1/c1/cpu.cfs_period_us": "100000\n",
			"cpu,cpuacct/cpu.cfs_quota_us":                                   "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 0.2},
		{"v1 container", "4:cpu:/loadlab-cluster/kubepods/pod1/c1\n", map[string]string{
			"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2},
		{"v1 none", "4:cpu:/\n", map[string]string{"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0},
	} {
		root := t.TempDir()
		for rel, body := range c.files {
			write(root, rel, body)
		}
		write(root, "proc-self-cgroup", c.cgroup)
		if got := cgroupCPUQuota(filepath.Join(root, "proc-self-cgroup"), root); got != c.want {
			t.Errorf("%s: %g CPUs, want %g", c.name, got, c.want)
		}
	}
}
