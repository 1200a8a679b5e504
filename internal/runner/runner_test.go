package runner

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
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
	// Without --threshold, the default: errors under 1% (this shop's
	// /slow answers some 503s).
	if res.Summary.Requests != 100 || len(res.Steps) != 1 || len(res.Thresholds) != 1 || res.Thresholds[0].Text != DefaultQuickErrors || !res.Thresholds[0].Default {
		t.Errorf("summary %+v, %d steps, thresholds %v", res.Summary, len(res.Steps), res.Thresholds)
	}

	// A target that refuses connections fails before any load, in one line.
	dead, _ := url.Parse("http://127.0.0.1:1/")
	if _, err := Quick(context.Background(), QuickRun{URL: dead, Method: "GET", Engine: engine.Config{HTTP: httpx.Options{Timeout: time.Second}}}, Options{}); err == nil {
		t.Error("a refused connection: no error")
	}
}

// TestDefaultChecksThreshold: a plan run whose checks fail fails its
// default threshold (checks == 100%), unless the plan sets a checks
// threshold of its own; a plan without checks gets no default threshold.
func TestDefaultChecksThreshold(t *testing.T) {
	target := shop(t) // every seventh request is a 503
	for _, tt := range []struct {
		name, expect, thresholds string
		want                     []result.ThresholdResult // Text and Pass only
	}{
		{"failed checks fail the default", "expect: { status: 200 }", "", []result.ThresholdResult{{Text: DefaultChecks, Pass: false, Default: true}}},
		{"the plan's own checks threshold replaces it", "expect: { status: 200 }", "thresholds: [ checks > 50% ]", []result.ThresholdResult{{Text: "checks > 50%", Pass: true}}},
		{"a checks threshold of one step replaces it too", "expect: { status: 200 }", "thresholds: [ 'checks(step=home) > 50%' ]", []result.ThresholdResult{{Text: "checks(step=home) > 50%", Pass: true}}},
		{"other thresholds keep it", "expect: { status: 200 }", "thresholds: [ p99(latency) < 10s ]", []result.ThresholdResult{{Text: "p99(latency) < 10s", Pass: true}, {Text: DefaultChecks, Pass: false, Default: true}}},
		{"passing checks pass it", "expect: { status: [200, 503] }", "", []result.ThresholdResult{{Text: DefaultChecks, Pass: true, Default: true}}},
		{"no checks, no default", "", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan.Parse("test.yaml", []byte(`
name: checks
target: `+target+`
scenarios:
  browse:
    steps:
      - get: /
        name: home
        `+tt.expect+`
load: { closed: { vus: 2, iterations: 21 } }
`+tt.thresholds+`
`), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Plan(context.Background(), p, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			var got []result.ThresholdResult
			for _, th := range res.Thresholds {
				got = append(got, result.ThresholdResult{Text: th.Text, Pass: th.Pass, Default: th.Default})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("thresholds %+v, want %+v", res.Thresholds, tt.want)
			}
			for _, th := range res.Thresholds {
				if th.Default && !th.Pass && th.Detail != "checks passed: 85.71% (36 of 42 passed); the default threshold, which a checks threshold in the plan replaces" {
					t.Errorf("detail %q", th.Detail)
				}
			}
		})
	}
}

// TestExplainFailuresMasks: the kept response, the text shown and what it
// says it looked for hold no secret, whether the plan's or captured.
func TestExplainFailuresMasks(t *testing.T) {
	totals := metrics.NewRecorder(1)
	// "hunter2" alone is no secret, but the start of one: looked for in
	// clear, the secret would show in what the check says it looked for.
	body := "<html><body><p>hunter2 is a nickname.</p><p>Welcome hunter2-user, token CAPTURED-TOK</p></body></html>"
	totals.CheckFailed(0, 0, &metrics.FailedCheck{
		Check: "body contains {{ password }}", Status: 200,
		Sought:   failure.Sought{Contains: "hunter2-user"},
		Response: failure.Keep(200, []byte("Content-Type: text/html\r\nSet-Cookie: s=COOKIE-VAL; Path=/\r\n"), []byte(body), []string{"CAPTURED-TOK"}),
	})
	res := &result.Result{Steps: []result.Step{{Scenario: "default", Name: "GET /welcome", FailedCheck: &result.FailedCheck{Check: "body contains {{ password }}", Status: 200, Error: "saw CAPTURED-TOK"}}}}
	explainFailures(res, totals, []string{"hunter2-user"})
	f := res.Steps[0].FailedCheck
	for _, leak := range []string{"hunter2-user", "CAPTURED-TOK", "COOKIE-VAL"} {
		if strings.Contains(f.Body+f.Shown+f.Error+f.Response, leak) {
			t.Errorf("%s shown: %+v", leak, f)
		}
	}
	if f.File != "failures/GET-welcome.http" || f.Body != "<html><body><p>hunter2 is a nickname.</p><p>Welcome ***, token ***</p></body></html>" || f.Shown != `around "***"` {
		t.Errorf("explained %+v", f)
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
