//go:build linux

package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestMemoryFitPerWorker sweeps workers 1..4 of a server whose every worker
// holds 16 MiB from the start, under a 256 MiB memory limit: the verdict's
// fit of PSS peak against workers recovers 16 MiB a worker (within 1 MiB,
// its interval holding 16), says how many workers fit with 20% headroom, in
// the data, the verdict text and the report.
func TestMemoryFitPerWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: an experiment of 12 runs")
	}
	limitCgroups(t)
	addr := targettest.FreeAddr(t)
	argv, _ := targettest.Command(t, target.Options{}, addr)
	marker := fmt.Sprintf("-test.run=^NoMemFit%d$", os.Getpid())
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
name: memfit
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: 2, duration: 1s } }
server:
  run: [%[2]q, %[3]q]
  env:
    LOADLAB_TARGETTEST_ADDR: %[1]s
    LOADLAB_TARGETTEST_OPTIONS: '{"Workers": {{ workers }}, "WorkerMemory": 16777216}'
  ready: http://%[1]s/health
  limits: { memory: 256MiB }
params: { workers: 1..4 }
repeat: 3
`, addr, argv[0], marker)})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	noOrphans(t, marker)
	o, err := experiment.LoadOutcome(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Verdict.Sweeps) != 1 {
		t.Fatalf("sweeps: %+v", o.Verdict.Sweeps)
	}
	var pss *experiment.MemoryFit
	for i, f := range o.Verdict.Sweeps[0].Memory {
		if f.Figure == experiment.FigurePSSPeak {
			pss = &o.Verdict.Sweeps[0].Memory[i]
		}
	}
	if pss == nil {
		t.Fatalf("no PSS peak fit: %+v", o.Verdict.Sweeps[0].Memory)
	}
	t.Logf("%s", pss.Text)
	if tb := o.Verdict.Table(experiment.FigurePSSPeak); tb != nil {
		for _, r := range tb.Rows {
			t.Logf("%s: PSS peak %v MiB", r.Point, r.Samples)
		}
	}
	const mib = 1 << 20
	// The fit recovers the slope: Theil–Sen within 1 MiB of the true 16 MiB
	// a worker, and its 95% interval holds 16 give or take 256 KiB.
	//
	// The stray upward PSS peaks of before (71.6 against 62 MiB at
	// workers=3, 86.3 against 78 at 4; least squares then read 13.9 MiB ±
	// 2.97 once) were the sampler's: a PSS carried by RSS from a
	// smaps_rollup read at start-up, when the server had mapped few of the
	// binary's pages it shares with this process (see rereadShift in
	// internal/server). They are gone; a run still strays a few MiB low now
	// and then (28.9 against 32 MiB at workers=1, 78.2 against 80.5 at 4, at
	// load average 24), which the median of pairwise slopes does not follow.
	//
	// The 256 KiB: a 95% interval leaves the truth out one time in twenty by
	// design, and this one is narrow (±0.1 to ±0.3 MiB). It read 16.179 MiB,
	// 16.044 to 16.436, in one of five runs, whose levels were 16.08 to
	// 16.14 MiB apart: the Go server's heap moves a little with the load
	// (idle, its anonymous memory grows 15.97 MiB a worker from 1 to 4
	// workers, 16.01 from 4 to 8).
	if math.Abs(pss.PerUnit-16*mib) > mib || pss.PerUnitLo > 16*mib+256<<10 || pss.PerUnitHi < 16*mib-256<<10 || !pss.Bounded || pss.R2 < 0.9 || pss.Runs != 12 || pss.Method != "theil-sen" {
		t.Errorf("fit %+v: want 16 MiB a worker (±1 MiB), its interval holding 16 (±256 KiB)", pss)
	}
	t.Logf("PSS peak per worker %.3f MiB, 95%% interval %.3f to %.3f, R² %.5f", pss.PerUnit/mib, pss.PerUnitLo/mib, pss.PerUnitHi/mib, pss.R2)
	want := math.Floor((0.8*256*mib - pss.Base) / pss.PerUnit)
	if pss.Limit != 256*mib || pss.LimitKind != "limit" || pss.Fits == nil || *pss.Fits != want {
		t.Errorf("fits %v in %d (%s), want %v", pss.Fits, pss.Limit, pss.LimitKind, want)
	}
	line := fmt.Sprintf("workers=%v fits in the 256 MiB limit with 20%% headroom", want)
	if !strings.Contains(pss.Text, line) || !strings.Contains(stdout, "memory against workers") || !strings.Contains(stdout, line) {
		t.Errorf("the verdict does not say %q:\n%s", line, stdout)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(page), "Memory against workers: PSS peak = ") || !strings.Contains(string(page), "PSS peak fit") {
		t.Errorf("report.html lacks the fit (%v)", err)
	}
}

// TestTargetWorkerMemoryOnce runs `loadlab target --workers 1
// --worker-memory 64MiB` and reads its anonymous memory: 64 MiB and the Go
// runtime's few, not twice 64 (its flag check made a server of its own,
// whose workers' memory stayed: a sweep of it fitted 32 MiB a worker).
func TestTargetWorkerMemoryOnce(t *testing.T) {
	const mib = 1 << 20
	addr := targettest.FreeAddr(t)
	cmd := exec.Command(os.Args[0], "target", "--addr", addr, "--workers", "1", "--worker-memory", "64MiB")
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("loadlab target not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var anonKB int64
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anonKB, _ = strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	if anon := anonKB << 10; anon < 64*mib || anon > 100*mib {
		t.Errorf("RssAnon %.1f MiB, want 64 MiB and the runtime's few", float64(anon)/mib)
	}
}
