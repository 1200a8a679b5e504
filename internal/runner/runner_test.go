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

// TestStopEndsTheLoadWithoutInterrupting: closing Options.Stop ends an open
// load early, as its end would, not as Ctrl-C: the result is not
// interrupted and says it was ended early.
func TestStopEndsTheLoadWithoutInterrupting(t *testing.T) {
	p, err := plan.Parse("test.yaml", []byte(`
name: stop
target: `+shop(t)+`
scenarios:
  browse:
    steps:
      - get: /
load: { open: { rate: 50/s, max_vus: 10, duration: 60s } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	points := 0
	began := time.Now()
	res, err := Plan(context.Background(), p, Options{Workers: 1, Stop: stop, OnProgress: func(Progress) {
		if points++; points == 2 {
			close(stop)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("the 60 s load took %v after Stop", took)
	}
	if res.Summary.Interrupted || res.Stopped == "" {
		t.Errorf("interrupted %v, stopped %q: want a run ended early, not interrupted", res.Summary.Interrupted, res.Stopped)
	}
	for _, w := range res.Validity {
		if w.Code == "abandoned" {
			t.Errorf("warning %+v: requests in flight at a stop are not abandoned by the grace period", w)
		}
	}
	if res.Summary.Requests < 50 {
		t.Errorf("%d requests in about 2 s at 50/s", res.Summary.Requests)
	}
}
