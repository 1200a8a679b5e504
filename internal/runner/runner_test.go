package runner

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/threshold"
)

// shop answers / quickly, /slow after a few milliseconds, and every
// seventh request with a 503.
func shop(t *testing.T) string {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if r.URL.Path == "/slow" {
			time.Sleep(time.Duration(1+i%4) * time.Millisecond)
		}
		if i%7 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPlanThresholdsFromMemory: the thresholds a run measures on its
// histograms in memory are exactly those measured on its result.json, read
// back as compare and report read it.
func TestPlanThresholdsFromMemory(t *testing.T) {
	p, err := plan.Parse("test.yaml", []byte(`
name: memory
target: `+shop(t)+`
scenarios:
  browse:
    steps:
      - get: /
        name: home
      - get: /slow
        name: slow
load: { closed: { vus: 4, iterations: 60 } }
thresholds:
  - p95(latency) < 1s
  - p50(latency, step=slow) < 1ms
  - max(service_time, status=5xx) < 2s
  - p99(ttfb, step=home) < 1s
  - p95(connect) < 1s
  - error_rate < 1%
  - p95(latency, status=4xx) < 1s
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Plan(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Requests != 480 || res.Summary.Errors.Status5xx == 0 || len(res.Thresholds) != len(p.Thresholds) {
		t.Fatalf("summary %+v, %d thresholds", res.Summary, len(res.Thresholds))
	}
	var buf bytes.Buffer
	if err := result.Encode(&buf, res); err != nil {
		t.Fatal(err)
	}
	stored, err := result.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, th := range p.Thresholds {
		o := threshold.Evaluate(th.T, stored, threshold.Stored(stored), ServerFigures(stored.Server))
		want := result.ThresholdResult{Text: th.Text, Measured: o.Measured, Pass: o.Pass, Detail: o.Detail}
		if got := res.Thresholds[i]; got != want {
			t.Errorf("%s:\n from memory %+v\n stored      %+v", th.Text, got, want)
		}
	}
	if got := ThresholdsFailed(res); got < 2 {
		// error_rate and the slow step's median fail; 4xx has nothing to measure.
		t.Errorf("%d thresholds failed: %+v", got, res.Thresholds)
	}
}

// TestQuickBuildsTheResult: quick mode's result is named and described by
// the runner, with loadlab's own figures and no plan.
func TestQuickBuildsTheResult(t *testing.T) {
	u, err := url.Parse(shop(t) + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	req := httpx.Request{Method: "GET", Target: u.RequestURI(), Host: u.Host}
	settings := result.Settings{Mode: "closed", URL: u.String(), Method: "GET", Connections: 2, Requests: 100}
	res, err := Quick(context.Background(), QuickRun{
		URL: u, Request: req.Append(nil), Method: "GET", Settings: settings,
		Engine: engine.Config{
			Workload: engine.Workload{Kind: engine.Closed, VUs: 2, SharedIterations: 100},
			HTTP:     httpx.Options{Timeout: 5 * time.Second, MaxBodyBytes: 1 << 20, MaxHeaderBytes: 1 << 16},
			Workers:  1,
		},
	}, Options{Version: "test", Point: "c=2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Settings.Extra["point"] != "c=2" || settings.Extra != nil {
		t.Errorf("extra %v, the caller's %v", res.Settings.Extra, settings.Extra)
	}
	if res.Name != "GET /slow" || res.Version != "test" || res.Settings.Workers != 1 || res.Settings.URL != u.String() || res.Plan != "" {
		t.Errorf("result %q %q, settings %+v, plan %q", res.Name, res.Version, res.Settings, res.Plan)
	}
	if res.Summary.Requests != 100 || len(res.Steps) != 1 || res.Thresholds != nil {
		t.Errorf("summary %+v, %d steps, thresholds %v", res.Summary, len(res.Steps), res.Thresholds)
	}

	// A target that refuses connections fails before any load, in one line.
	dead, _ := url.Parse("http://127.0.0.1:1/")
	if _, err := Quick(context.Background(), QuickRun{URL: dead, Method: "GET", Engine: engine.Config{HTTP: httpx.Options{Timeout: time.Second}}}, Options{}); err == nil {
		t.Error("a refused connection: no error")
	}
}

// TestThroughputOverTheLoadsWindow: a plan's 1 s load whose journeys think
// for 800 ms between two requests ends with every VU mid-journey; they
// finish in the grace period, about 1.6 s in all. Throughput, and the rate
// threshold, count the responses within the 1 s over 1 s; the drain is
// reported apart (issue 20, item 6).
func TestThroughputOverTheLoadsWindow(t *testing.T) {
	p, err := plan.Parse("test.yaml", []byte(`
name: overrun
target: `+shop(t)+`
scenarios:
  browse:
    steps:
      - get: /
      - think: 800ms
      - get: /
load: { closed: { vus: 3, duration: 1s } }
thresholds:
  - rate >= 8.5/s
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Plan(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	// Each VU: responses at 0, 0.8 and 0.8 s (its next journey), then 1.6 s.
	if s.Responses != 12 || s.WindowResponses != 9 || s.Iterations != 6 {
		t.Fatalf("%d responses, %d within the window, %d journeys; want 12, 9 and 6", s.Responses, s.WindowResponses, s.Iterations)
	}
	if s.WindowS < 0.99 || s.WindowS > 1.1 || s.DurationS < 1.55 || s.DrainS < 0.45 {
		t.Errorf("window %v s, drain %v s, elapsed %v s; want about 1, 0.6 and 1.6", s.WindowS, s.DrainS, s.DurationS)
	}
	if want := 9 / s.WindowS; s.ThroughputRPS != want {
		t.Errorf("throughput %v/s, want %v/s (9 over the window), not %v/s (12 over the elapsed time)", s.ThroughputRPS, want, 12/s.DurationS)
	}
	if len(res.Thresholds) != 1 || !res.Thresholds[0].Pass {
		t.Errorf("rate >= 8.5/s over the window: %+v", res.Thresholds)
	}
}
