//go:build linux

package server

import (
	"os/exec"
	"testing"
	"time"
)

// TestWaitShareOfContendedProcess: two busy loops pinned to one CPU each
// wait for it about half the time they want it, and the sampler of one of
// them says so (the run-queue delay of its schedstat). Alone is not
// judged: on a shared machine a lone loop may wait too.
func TestWaitShareOfContendedProcess(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset")
	}
	spin := func() *exec.Cmd {
		cmd := exec.Command("taskset", "-c", "0", "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	share := func(cmd *exec.Cmd) float64 {
		s, err := NewSampler(cmd.Process.Pid, ProcessTree)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := s.Sample(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
		}
		sum := s.Summary(time.Time{}, time.Time{})
		if sum.User+sum.System <= 0 {
			t.Fatalf("the loop used no CPU: %+v", sum)
		}
		return sum.WaitShare()
	}
	a := spin()
	spin()
	contended := share(a)
	if contended < 0.3 || contended > 0.95 {
		t.Errorf("a busy loop sharing its CPU with another waited %.0f%% of the time it wanted it; want about 50%%", 100*contended)
	}
	t.Logf("waited %.0f%% sharing one CPU with another busy loop", 100*contended)
}
