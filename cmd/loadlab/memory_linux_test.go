package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestTenThousandIdleVUs: 10,000 VUs, each with its own connection, cookie
// jar and variables, pausing between two requests, fit in 200 MB of RSS:
// they take under 128 MiB over the idle binary's (78 MiB on 2026-12-03),
// 224 MiB on the portable engine (184), by VmHWM (peakRSS), as the child's
// rusage counts the test binary too.
func TestTenThousandIdleVUs(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < 12000 {
		t.Skipf("the open-file limit (%d) is too low for 10,000 connections", lim.Max)
	}
	url := targettest.Start(t, target.Options{})
	path := writePlan(t, map[string]string{"plan.yaml": `
target: "{{ env.TARGET }}"
vars: { shop: demo }
steps:
  - get: /?page=1
    capture: { session: { header: Content-Type } }
  - think: 8s
  - get: "/?page=2&shop={{ shop }}&s={{ session }}"
load: { closed: { vus: 10000, iterations: 1 } }
`})
	cmd := exec.Command(os.Args[0], "run", path, "-e", "TARGET="+url, "--json")
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	rss, err := peakRSS(t, cmd)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var sum result.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Iterations != 10000 || sum.Requests != 20000 || sum.Errors.Total != 0 || sum.Checks.Failed != 0 {
		t.Fatalf("%d journeys, %d requests, %d errors, %d failed checks: want 10,000 journeys of 2 requests, all fine",
			sum.Iterations, sum.Requests, sum.Errors.Total, sum.Checks.Failed)
	}
	// The VUs' share: less what the same binary holds doing nothing (its
	// packages' init, 17 MiB at the start of 2026-12-01's third session and
	// 24 MiB at its end, with the OpenTelemetry SDK, Prometheus and goja).
	idle := exec.Command(os.Args[0], "version")
	idle.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	base, err := peakRSS(t, idle)
	if err != nil {
		t.Fatal(err)
	}
	// The portable engine (a goroutine and its stack a connection) took
	// 183.9 MiB over idle, 18.8 KiB a VU, in CI on 2026-12-03; epoll 78.2.
	limit := int64(128 << 20)
	if os.Getenv("LOADLAB_ENGINE") == "portable" {
		limit = 224 << 20
	}
	if rss-base > limit {
		t.Errorf("peak RSS %d MiB with 10,000 VUs, %d MiB over the idle binary's %d MiB; want under %d MiB (LOADLAB_ENGINE=%q)", rss>>20, (rss-base)>>20, base>>20, limit>>20, os.Getenv("LOADLAB_ENGINE"))
	}
	t.Logf("10,000 VUs: peak RSS %.1f MiB, %.1f over the idle binary's (%.1f KiB a VU) in %v", float64(rss)/(1<<20), float64(rss-base)/(1<<20), float64(rss-base)/10000/1024, time.Since(start).Round(time.Second))
}
