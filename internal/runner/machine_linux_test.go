//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestMachineBusy: a process burning every CPU beside a run, neither
// loadlab nor the server under test, is measured from /proc/stat as the
// machine's other processes and gives machine_busy (issue 20, item 9).
func TestMachineBusy(t *testing.T) {
	addr := targettest.FreeAddr(t)
	argv, env := targettest.Command(t, target.Options{Delay: time.Millisecond}, addr)
	envJSON, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("test.yaml", []byte(fmt.Sprintf(`
name: busy
target: http://%s
scenarios:
  home:
    steps:
      - get: /
load: { closed: { vus: 2, duration: 1500ms } }
server:
  run: [%q, %q]
  env: %s
  ready: http://%s/health
  ready_timeout: 10s
`, addr, argv[0], argv[1], envJSON, addr)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}

	burner := exec.Command(os.Args[0], "-test.run=^$")
	burner.Env = append(os.Environ(), envBurn+"=8s")
	if err := burner.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	t.Cleanup(func() { burner.Process.Kill(); burner.Wait() })

	res, err := Plan(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	burner.Process.Kill()
	burner.Wait()
	lived := time.Since(started).Seconds()
	burnt := (burner.ProcessState.UserTime() + burner.ProcessState.SystemTime()).Seconds()

	m := res.Machine
	if m == nil || res.Server == nil {
		t.Fatalf("machine %+v, server %+v", m, res.Server)
	}
	// The burner's own CPU, in shares of the machine over its life; the
	// others over the window hold it (other processes of a shared machine
	// may add to them), within the samplers' edges.
	burnerPct := 100 * burnt / lived / float64(m.CPUs)
	if m.OthersPct < 100*MachineBusy || m.OthersPct < burnerPct/2 || m.LoadlabPct <= 0 || m.ServerPct <= 0 || m.BusyPct > 100.5 || m.ServerUnwatched {
		t.Errorf("machine %+v; the burner used %.0f%% of it", m, burnerPct)
	}
	if !hasCode(res.Validity, "machine_busy") {
		t.Errorf("no machine_busy warning: %+v (machine %+v)", res.Validity, m)
	}
	t.Logf("machine %+v; the burner %.0f%%", *m, burnerPct)
}
