//go:build linux

package limits

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// writable skips the test where this process may not make cgroups.
func writable(t *testing.T) {
	t.Helper()
	sys, err := discover()
	if err != nil {
		t.Skip(err)
	}
	if why := sys.v2Usable([]string{"memory"}); why == "" {
		return
	}
	if _, why := sys.v1Dir("memory"); why != "" {
		t.Skipf("no writable memory cgroup here: %s", why)
	}
}

// The first process joins every cgroup and the affinity before it execs the
// command, so that its first line already runs limited; Remove leaves
// nothing behind.
func TestCreateCommandRemove(t *testing.T) {
	writable(t)
	g, err := Create(Limits{CPUs: CPUs{Count: 1}, Memory: 64 << 20, SwapSet: true})
	if err != nil {
		t.Fatal(err)
	}
	dirs := g.Dirs()
	in := g.InForce()
	if in.Memory != 64<<20 || len(in.CPUList) != 1 || in.Swap != 0 {
		t.Errorf("in force: %+v", in)
	}
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup; grep Cpus_allowed_list /proc/self/status")
	g.Command(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	text := string(out)
	for _, d := range dirs {
		name := d[strings.LastIndex(d, "/"):]
		if !strings.Contains(text, name+"\n") {
			t.Errorf("the process is not in %s:\n%s", d, text)
		}
	}
	if !strings.Contains(text, "Cpus_allowed_list:\t"+FormatList(in.CPUList)+"\n") {
		t.Errorf("affinity is not %s:\n%s", FormatList(in.CPUList), text)
	}
	if strings.Contains(text, execEnv) {
		t.Errorf("the helper's variable reached the command")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
	if st := g.Stats(); st.MemoryPeak == 0 || !strings.Contains(strings.Join(st.Measured, ","), "memory") {
		t.Errorf("stats after Remove: %+v", st)
	}
}

// A process allocating past the memory limit is killed by the kernel, and
// the group counts it.
func TestOOMKillCounted(t *testing.T) {
	writable(t)
	g, err := Create(Limits{Memory: 32 << 20, SwapSet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd := exec.Command("/bin/sh", "-c", `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived`)
	g.Command(cmd)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || strings.Contains(string(out), "survived") {
		t.Fatalf("the shell was not killed: %v: %s", err, out)
	}
	st := g.Stats()
	if st.OOMKills < 1 || st.MemoryPeak < 30<<20 || st.MemoryPeak > 33<<20 {
		t.Errorf("stats: %+v, want an OOM kill and a peak at the 32 MiB limit", st)
	}
}

// A CPU quota is written and read back; a list outside loadlab's CPUs is
// refused before anything starts.
func TestQuotaAndRefusals(t *testing.T) {
	writable(t)
	g, err := Create(Limits{CPUs: CPUs{Quota: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if q := g.InForce().CPUQuota; q != 0.5 {
		t.Errorf("quota in force %v, want 0.5", q)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	var u *UnavailableError
	if _, err := Create(Limits{CPUs: CPUs{List: []int{4095}}}); !errors.As(err, &u) || !strings.Contains(err.Error(), "4095") {
		t.Errorf("CPU 4095: %v", err)
	}
	if _, err := Create(Limits{CPUs: CPUs{Count: 4096}}); !errors.As(err, &u) {
		t.Errorf("4096 CPUs: %v", err)
	}
	if _, err := Create(Limits{SwapSet: true}); !errors.As(err, &u) || u.Limit != "swap" {
		t.Errorf("swap alone: %v", err)
	}
}

// TestCgroupVersion checks which mechanism Create chose where the caller
// knows the machine: LOADLAB_TEST_CGROUP=v1 or v2 (scripts/cgroup2-vm.sh
// sets v2 in a VM whose only hierarchy is cgroup2 with cpuset, cpu and
// memory; this 2-core machine is v1 for all three). Memory, a CPU quota
// and a CPU count then take one cgroup v2 with no affinity fallback, or a
// cgroup in each of three v1 hierarchies.
func TestCgroupVersion(t *testing.T) {
	want := os.Getenv("LOADLAB_TEST_CGROUP")
	if want == "" {
		t.Skip("LOADLAB_TEST_CGROUP (v1 or v2) names the cgroup version this machine offers")
	}
	g, err := Create(Limits{CPUs: CPUs{Count: 1}, Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	q, err := Create(Limits{CPUs: CPUs{Quota: 0.5}, Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Remove()
	mech, dirs := map[string]string{"v1": "cgroup v1", "v2": "cgroup v2"}[want], map[string]int{"v1": 2, "v2": 1}[want]
	for _, c := range []struct {
		name string
		g    *Group
	}{{"cpus: 1, memory", g}, {"cpus: 50%, memory", q}} {
		if in := c.g.InForce(); in.Mechanism != mech || len(c.g.Dirs()) != dirs {
			t.Errorf("%s: mechanism %q in %v, want %s in %d", c.name, in.Mechanism, c.g.Dirs(), mech, dirs)
		}
	}
	if in := q.InForce(); in.Memory != 64<<20 || in.CPUQuota != 0.5 {
		t.Errorf("quota group in force: %+v", in)
	}
}
