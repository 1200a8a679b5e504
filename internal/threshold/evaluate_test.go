package threshold

import (
	"math"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
)

// values is a number of samples of one duration.
type values struct {
	ms    float64
	count int
}

// record adds the values to h as the engine records samples, in µs.
func record[H interface{ RecordValues(v, n int64) error }](t *testing.T, h H, vs ...values) H {
	t.Helper()
	for _, v := range vs {
		if err := h.RecordValues(int64(v.ms*1000), int64(v.count)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// encode records the values into a histogram and encodes it as result.json
// holds it.
func encode(t *testing.T, vs ...values) string {
	t.Helper()
	s, err := metrics.Encode(record(t, metrics.NewHistogram(), vs...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// quantileOf is the q-th percentile, in ms, of one histogram holding all
// the values: what an exact merge must give.
func quantileOf(t *testing.T, q float64, vs ...values) float64 {
	return float64(record(t, metrics.NewHistogram(), vs...).ValueAtQuantile(q)) / 1000
}

// meanOf is the mean, in ms, of a histogram of the values.
func meanOf(t *testing.T, vs ...values) float64 {
	return record(t, metrics.NewHistogram(), vs...).Mean() / 1000
}

// The run used by the evaluation tests: three steps, two of them named
// login in different scenarios.
var (
	homeOK     = values{10, 900}  // checkout/home: 900 responses at 10 ms
	signUpOK   = values{100, 90}  // sign_up/login: 90 at 100 ms,
	signUp5xx  = values{1000, 10} //   10 server errors at 1 s,
	signUpFail = values{2000, 5}  //   5 timeouts at 2 s
	loginOK    = values{50, 100}  // checkout/login: 100 at 50 ms
)

func testResult(t *testing.T) *result.Result {
	t.Helper()
	const duration = 10.0
	step := func(scenario, name string, requests, responses, s5xx, timeouts int64) result.Step {
		return result.Step{Scenario: scenario, Name: name, Summary: result.Summary{
			Requests: requests, Responses: responses, DurationS: duration,
			Errors: result.Errors{Total: s5xx + timeouts, Status5xx: s5xx, Timeout: timeouts},
		}}
	}
	home := step("checkout", "home", 900, 900, 0, 0)
	home.Histograms = result.StepHistograms{
		Latency: map[string]string{"ok": encode(t, homeOK)},
		Service: map[string]string{"ok": encode(t, values{8, 900})},
		TTFB:    encode(t, values{5, 900}),
	}
	signUp := step("sign_up", "login", 105, 100, 10, 5)
	signUp.Histograms = result.StepHistograms{
		Latency: map[string]string{"ok": encode(t, signUpOK), "5xx": encode(t, signUp5xx), "failed": encode(t, signUpFail)},
		Service: map[string]string{"ok": encode(t, values{90, 90}), "5xx": encode(t, values{990, 10}), "failed": encode(t, values{2000, 5})},
		TTFB:    encode(t, values{80, 90}, values{900, 10}),
	}
	login := step("checkout", "login", 100, 100, 0, 0)
	login.Histograms = result.StepHistograms{
		Latency: map[string]string{"ok": encode(t, loginOK)},
		Service: map[string]string{"ok": encode(t, values{45, 100})},
		TTFB:    encode(t, values{40, 100}),
	}
	r := &result.Result{
		Schema: result.SchemaResult,
		Summary: result.Summary{
			Requests: 1105, Responses: 1100, DurationS: duration,
			Errors: result.Errors{Total: 15, Status5xx: 10, Timeout: 5},
		},
		Steps:      []result.Step{home, signUp, login},
		Histograms: result.RunHistograms{Connect: encode(t, values{0.5, 90}, values{3, 10})},
	}
	return r
}

func mustParse(t *testing.T, s string) *Threshold {
	t.Helper()
	th, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// close enough for a histogram: 3 significant digits.
func near(got, want float64) bool { return math.Abs(got-want) <= want*1e-3 }

func TestEvaluate(t *testing.T) {
	r := testResult(t)
	tests := []struct {
		name, threshold string
		want            float64 // exact
		pass            bool
		detail          string // a fragment of Detail
	}{
		// Responses of every class and step, merged: 1100 of them, the 95th
		// percentile is the 1045th, among the 90 at 100 ms.
		{"p95 over the run", "p95(latency) < 200ms",
			quantileOf(t, 95, homeOK, signUpOK, signUp5xx, loginOK), true, "p95 latency: 100 ms (1100 responses and timeouts)"},
		// step=login matches two steps, in two scenarios.
		{"p95 of a step name in two scenarios", "p95(latency, step=login) < 200ms",
			quantileOf(t, 95, signUpOK, signUp5xx, loginOK), true, "p95 latency of step login: 100 ms (200 responses and timeouts)"},
		{"p99 of a step name in two scenarios", "p99(latency, step=login) < 200ms",
			quantileOf(t, 99, signUpOK, signUp5xx, loginOK), false, "p99 latency of step login: 1000 ms"},
		{"scenario narrows step", "p95(latency, scenario=sign_up, step=login) < 200ms",
			quantileOf(t, 95, signUpOK, signUp5xx), false, "of scenario sign_up, step login"},
		{"scenario alone", "p95(latency, scenario=checkout) <= 50ms",
			quantileOf(t, 95, homeOK, loginOK), false, "(1000 responses and timeouts)"},
		{"status 5xx", "p50(latency, status=5xx) < 2s",
			quantileOf(t, 50, signUp5xx), true, "of status 5xx: 1000 ms (10 5xx responses)"},
		{"status failed", "max(latency, status=failed) >= 2s",
			quantileOf(t, 100, signUpFail), true, "(5 failed requests)"},
		{"status ok and a step", "med(latency, step=login, status=ok) <= 50ms",
			quantileOf(t, 50, signUpOK, loginOK), false, "(190 ok responses)"},
		{"average service time", "avg(service_time, step=home) < 10ms", meanOf(t, values{8, 900}), true, "avg service time of step home: 8.002 ms (900 responses and timeouts)"},
		{"min ttfb", "min(ttfb) >= 5ms", 5, true, "min ttfb: 5 ms (1100 responses)"},
		{"connect", "p95(connect) < 5ms", quantileOf(t, 95, values{0.5, 90}, values{3, 10}), true, "(100 connections)"},
		{"error rate", "error_rate < 1%", 15.0 / 1105, false, "error rate: 1.357% (15 errors in 1105 requests)"},
		{"error rate of a step", "error_rate(step=login) < 10%", 15.0 / 205, true, "(15 errors in 205 requests)"},
		{"error rate of a scenario", "error_rate(scenario=sign_up) < 10%", 15.0 / 105, false, "error rate of scenario sign_up: 14.29%"},
		{"error rate of a class", "error_rate(status=5xx) <= 1%", 10.0 / 1105, true, "(10 errors in 1105 requests)"},
		{"error rate of failures", "error_rate(step=login, status=failed) < 2.5%", 5.0 / 205, true, ""},
		{"rate", "rate > 100/s", 110, true, "rate: 110/s (1100 responses in 10 s)"}, // 5 requests got no response: not throughput
		{"rate of a step", "rate(step=home) > 100/s", 90, false, "rate of step home: 90/s"},
		{"rate of ok responses", "rate(status=ok) >= 6000/m", 109, true, "(1090 ok responses in 10 s)"},
		{"requests", "requests >= 1105", 1105, true, "requests: 1105"},
		{"failed requests", "requests(status=failed) <= 0", 5, false, "requests of status failed: 5"},
		{"4xx requests", "requests(status=4xx) <= 0", 0, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(mustParse(t, tt.threshold), r, Stored(r), nil)
			if out.Missing {
				t.Fatalf("Missing: %s", out.Detail)
			}
			if out.Measured != tt.want || out.Pass != tt.pass {
				t.Errorf("measured %v (pass %v), want %v (pass %v)", out.Measured, out.Pass, tt.want, tt.pass)
			}
			if !strings.Contains(out.Detail, tt.detail) {
				t.Errorf("Detail %q, want it to contain %q", out.Detail, tt.detail)
			}
		})
	}
}

// TestMergedNotAveraged shows why histograms are merged: across the two
// login steps the p95 is 100 ms, while the mean of the two steps' own p95s
// (1000 ms and 50 ms) is 525 ms. A threshold of 200 ms passes on the exact
// figure and would fail on the average.
func TestMergedNotAveraged(t *testing.T) {
	r := testResult(t)
	out := Evaluate(mustParse(t, "p95(latency, step=login) < 200ms"), r, Stored(r), nil)
	if !near(out.Measured, 100) || !out.Pass {
		t.Fatalf("p95 of both login steps = %v ms (pass %v), want 100 ms and a pass", out.Measured, out.Pass)
	}
	var perStep []float64
	for _, scenario := range []string{"sign_up", "checkout"} {
		o := Evaluate(mustParse(t, "p95(latency, scenario="+scenario+", step=login) < 200ms"), r, Stored(r), nil)
		perStep = append(perStep, o.Measured)
	}
	if !near(perStep[0], 1000) || !near(perStep[1], 50) {
		t.Fatalf("per-step p95s = %v, want about 1000 and 50 ms", perStep)
	}
	average := (perStep[0] + perStep[1]) / 2
	if average < 200 {
		t.Fatalf("average of per-step p95s = %v ms; the test no longer tells merging from averaging", average)
	}
	if out.Measured == average {
		t.Fatal("the merged p95 equals the average of the per-step p95s")
	}
}

func TestEvaluateMissing(t *testing.T) {
	r := testResult(t)
	noConnect := testResult(t)
	noConnect.Histograms.Connect = ""
	idle := testResult(t)
	idle.Summary = result.Summary{}
	idle.Steps = nil
	tests := []struct {
		name, threshold string
		r               *result.Result
		detail          string
	}{
		{"misspelt step", "p99(latency, step=logn) < 2s", r,
			"p99 latency of step logn: no step matches step=logn; the steps are checkout/home, sign_up/login, checkout/login"},
		{"step not in the scenario", "p95(latency, scenario=sign_up, step=home) < 2s", r,
			"no step matches scenario=sign_up, step=home"},
		{"error rate of a missing step", "error_rate(step=logn) < 1%", r, "no step matches step=logn"},
		{"no responses of a class", "p95(latency, status=4xx) < 1s", r, "nothing to measure: no 4xx responses were recorded"},
		{"no connections", "p95(connect) < 5ms", noConnect, "no connections were recorded"},
		{"no TLS handshakes", "p95(tls) < 5ms", noConnect, "no TLS handshakes were recorded"},
		{"no requests", "error_rate < 1%", idle, "error rate: no requests were made"},
		{"no steps", "p95(latency) < 1s", idle, "the result has no steps"},
		{"no result", "p95(latency) < 1s", nil, "no result"},
		{"no checks in the run", "checks > 99%", r, "checks passed: no checks ran"},
		{"server not watched", "server.rss.peak < 2560MiB", r, "server.rss.peak: the server was not watched"},
		{"corrupt histogram", "p95(latency, scenario=broken) < 1s", corrupt(t), "cannot read the latency of step broken/x (ok) histogram"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(mustParse(t, tt.threshold), tt.r, Stored(tt.r), nil)
			if !out.Missing || out.Pass {
				t.Fatalf("Missing %v, Pass %v (%s); want a missing figure that fails", out.Missing, out.Pass, out.Detail)
			}
			if !strings.Contains(out.Detail, tt.detail) {
				t.Errorf("Detail %q, want it to contain %q", out.Detail, tt.detail)
			}
		})
	}
}

func corrupt(t *testing.T) *result.Result {
	r := testResult(t)
	r.Steps = append(r.Steps, result.Step{Scenario: "broken", Name: "x",
		Histograms: result.StepHistograms{Latency: map[string]string{"ok": "not a histogram"}}})
	return r
}

func TestEvaluateServer(t *testing.T) {
	r := testResult(t)
	server := ServerMap{
		ServerRSSPeak:     2.4 * (1 << 30),
		ServerCPUAvg:      0.85, // 85% of one core
		ServerCPUPeak:     1.5,
		ServerMajorFaults: 3,
	}
	tests := []struct {
		name, threshold string
		want            float64
		pass            bool
		detail          string
	}{
		{"rss under the quota", "server.rss.peak < 2560MiB", 2.4 * (1 << 30), true, "server.rss.peak: 2.4 GiB"},
		{"cpu over", "server.cpu.avg < 80%", 0.85, false, "server.cpu.avg: 85%"},
		{"cpu in cores", "server.cpu.peak <= 150%", 1.5, true, "server.cpu.peak: 150%"},
		{"faults", "server.major_faults < 10", 3, true, "server.major_faults: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(mustParse(t, tt.threshold), r, Stored(r), server)
			if out.Missing || out.Measured != tt.want || out.Pass != tt.pass || !strings.Contains(out.Detail, tt.detail) {
				t.Errorf("got %+v, want %v (pass %v) and a Detail with %q", out, tt.want, tt.pass, tt.detail)
			}
		})
	}
	t.Run("figure not recorded", func(t *testing.T) {
		out := Evaluate(mustParse(t, "server.swap.peak <= 0B"), r, Stored(r), server)
		if !out.Missing || out.Pass || !strings.Contains(out.Detail, "the server's server.swap.peak was not recorded") {
			t.Errorf("got %+v", out)
		}
	})
}

func TestEvaluateChecksAndCounters(t *testing.T) {
	r := testResult(t)
	for i, c := range []result.Checks{{Passed: 999, Failed: 1}, {Passed: 95, Failed: 5}, {}} {
		r.Steps[i].Summary.Checks = c
	}
	r.Summary.Checks = result.Checks{Passed: 1094, Failed: 6}
	r.Summary.Iterations, r.Summary.Dropped = 700, 2
	tests := []struct {
		name, threshold string
		want            float64
		pass            bool
		detail          string
	}{
		// 999 of 1000 is exactly the float nearest 99.9%: equal, so >= holds.
		{"checks at the limit", "checks(step=home) >= 99.9%", 0.999, true, "checks passed of step home: 99.9% (999 of 1000 passed)"},
		{"checks over the run", "checks > 99%", 1094.0 / 1100, true, "checks passed: 99.45% (1094 of 1100 passed)"},
		{"checks of a step name in two scenarios", "checks(step=login) > 99%", 0.95, false, "(95 of 100 passed)"},
		{"iterations", "iterations >= 7000", 700, false, "iterations: 700"},
		{"dropped", "dropped <= 0", 2, false, "dropped arrivals: 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(mustParse(t, tt.threshold), r, Stored(r), nil)
			if out.Missing || out.Measured != tt.want || out.Pass != tt.pass || !strings.Contains(out.Detail, tt.detail) {
				t.Errorf("got %+v, want %v (pass %v) and a Detail with %q", out, tt.want, tt.pass, tt.detail)
			}
		})
	}
	t.Run("no checks ran", func(t *testing.T) {
		out := Evaluate(mustParse(t, "checks(scenario=checkout, step=login) > 99%"), r, Stored(r), nil)
		if !out.Missing || out.Pass || !strings.Contains(out.Detail, "no checks ran") {
			t.Errorf("got %+v", out)
		}
	})
}

// TestLimitEqualsMeasured checks that a limit written as a decimal compares
// equal to the same figure measured as a ratio, so <= and >= behave at the
// boundary.
func TestLimitEqualsMeasured(t *testing.T) {
	r := testResult(t)
	r.Summary.Requests, r.Summary.Errors.Total = 1000, 10
	r.Summary.DurationS = 3
	for _, tt := range []struct{ threshold string }{
		{"error_rate <= 1%"},   // 10/1000
		{"rate >= 20000/m"},    // 1000/3 s is 333.33.../s, 20000/m
		{"requests >= 1000"},   // plain
		{"error_rate >= 1.0%"}, // same limit written differently
	} {
		t.Run(tt.threshold, func(t *testing.T) {
			out := Evaluate(mustParse(t, tt.threshold), r, Stored(r), nil)
			if !out.Pass {
				t.Errorf("%s: measured %v, limit %v: want a pass at the boundary", tt.threshold, out.Measured, out.Threshold.Value)
			}
		})
	}
}

func TestEvaluateAll(t *testing.T) {
	r := testResult(t)
	var ts []*Threshold
	for _, s := range []string{"p95(latency) < 200ms", "error_rate < 1%", "p99(latency, step=nope) < 1s"} {
		ts = append(ts, mustParse(t, s))
	}
	outs := EvaluateAll(ts, r, Stored(r), nil)
	got := []bool{outs[0].Pass, outs[1].Pass, outs[2].Pass}
	if got[0] != true || got[1] != false || got[2] != false || !outs[2].Missing || outs[1].Threshold != ts[1] {
		t.Errorf("EvaluateAll passes = %v, outcomes %+v", got, outs)
	}
}

// TestRateOverTheWindow: with a window (a 15 s load that drained to 21.4 s),
// rate counts the responses within the window over the window, as the
// summary's throughput does (issue 20, item 6).
func TestRateOverTheWindow(t *testing.T) {
	r := &result.Result{Schema: result.SchemaResult, Summary: result.Summary{
		Requests: 1600, Responses: 1600, DurationS: 21.4, WindowS: 15, DrainS: 6.4, WindowResponses: 1500,
	}}
	out := Evaluate(mustParse(t, "rate >= 100/s"), r, Stored(r), nil)
	if out.Missing || out.Measured != 100 || !out.Pass || !strings.Contains(out.Detail, "(1500 responses in 15 s of load)") {
		t.Errorf("rate %v (pass %v): %s; want 100/s, 1500 responses over 15 s", out.Measured, out.Pass, out.Detail)
	}
}
