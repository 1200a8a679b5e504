package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// summary runs loadlab with --json and decodes the summary.
func summary(t *testing.T, args ...string) result.Summary {
	t.Helper()
	stdout, stderr, code := cli(context.Background(), t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("loadlab %v: exit %d: %s", args, code, stderr)
	}
	var s result.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLatencyIsHonest: against a server that answers in exactly 20 ms, the
// reported median is within 2% of 20 ms. Noise on a shared machine can only
// add latency, never remove it, so one attempt within 2% in five shows that
// loadlab itself adds less.
func TestLatencyIsHonest(t *testing.T) {
	url := targettest.Start(t, target.Options{Delay: 20 * time.Millisecond})
	var got []float64
	for range 5 {
		s := summary(t, "run", "--url", url+"/", "-c", "1", "-d", "2s")
		if s.Errors.Total != 0 || s.Requests < 50 {
			t.Fatalf("%d requests, %d errors", s.Requests, s.Errors.Total)
		}
		got = append(got, s.Latency.P50)
		if s.Latency.P50 >= 20*0.98 && s.Latency.P50 <= 20*1.02 {
			return
		}
	}
	t.Fatalf("p50 latency %v ms in five runs, want within 2%% of 20 ms", got)
}

// TestOpenLoadShowsStalls is the coordinated-omission test of wrk2's README:
// a server stops answering for 1 s every 5 s. Open load at a steady rate
// counts the requests that were due during the stall from their due time, so
// its p99 latency shows the stall while p99 service time does not; closed
// load sends almost nothing during a stall, so its p99 hides it.
func TestOpenLoadShowsStalls(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s of load")
	}
	url := targettest.Start(t, target.Options{StallFor: time.Second, StallEvery: 5 * time.Second})

	open := summary(t, "run", "--url", url+"/", "--rate", "1000/s", "-c", "10", "-d", "10s")
	if open.Requests != 10000 || open.Unsent != 0 || open.Errors.Total != 0 {
		t.Errorf("open: %d requests, %d unsent, %d errors; want exactly 10000 sent and answered", open.Requests, open.Unsent, open.Errors.Total)
	}
	if open.Latency.P99 < 800 {
		t.Errorf("open: p99 latency %.1f ms hides the 1 s stall", open.Latency.P99)
	}
	if open.Service.P99 >= 800 {
		t.Errorf("open: p99 service time %.1f ms, want well under the stall: only the few requests in flight when it began waited", open.Service.P99)
	}
	if open.Late.Count < 1000 || open.Late.P99 < 500 {
		t.Errorf("open: %d late, p99 lateness %.1f ms; the stalls should make over 1000 requests late by up to 1 s", open.Late.Count, open.Late.P99)
	}

	closed := summary(t, "run", "--url", url+"/", "-c", "10", "-d", "10s")
	if closed.Latency.Max < 800 {
		t.Errorf("closed: max latency %.1f ms, but the server stalled for 1 s", closed.Latency.Max)
	}
	if closed.Latency.P99 >= open.Latency.P99/4 {
		t.Errorf("closed: p99 latency %.1f ms; expected closed load to hide the stall (open p99 %.1f ms)", closed.Latency.P99, open.Latency.P99)
	}
	t.Logf("open p99 latency %.1f ms, service %.1f ms; closed p99 latency %.1f ms (max %.1f)",
		open.Latency.P99, open.Service.P99, closed.Latency.P99, closed.Latency.Max)
}

// TestOpenJourneysOnSchedule is the launch rehearsal of DESIGN.md (7,000
// sign-up sessions in 10 minutes) scaled down 50 times, to the same rate:
// 140 journeys in 12 s. Exactly that many start, none is dropped, and each
// starts on time.
func TestOpenJourneysOnSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("12 s of load")
	}
	url := targettest.Start(t, target.Options{Delay: 20 * time.Millisecond})
	path := writePlan(t, map[string]string{"plan.yaml": `
target: "{{ env.TARGET }}"
steps:
  - post: /users
    json: { email: "user-{{ vu }}-{{ iteration }}@example.com" }
  - post: /session
    name: login
  - get: /api/me
load:
  open: { rate: 140/12s, max_vus: 50 }
`})
	// Exact counts every time; on time within 1 ms at p99 in one attempt of
	// three (a busy shared machine can only make a thread late, not early).
	var lateness []float64
	for range 3 {
		stdout, stderr, code := cli(context.Background(), t, "run", path, "-e", "TARGET="+url, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var s result.Summary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatal(err)
		}
		if s.Iterations != 140 || s.Dropped != 0 || s.Requests != 3*140 {
			t.Fatalf("%d journeys (%d dropped, %d requests), want exactly 140 and 420 requests", s.Iterations, s.Dropped, s.Requests)
		}
		t.Logf("lateness p50 %.3f ms, p99 %.3f ms, max %.3f ms", s.Late.P50, s.Late.P99, s.Late.Max)
		if s.Late.P99 < 1 {
			return
		}
		lateness = append(lateness, s.Late.P99)
	}
	t.Errorf("p99 lateness %v ms in three attempts; want one within 1 ms", lateness)
}
