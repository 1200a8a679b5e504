package threshold

import (
	"errors"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
)

// recorded is a run as the engine leaves it: a recorder with three steps
// of every status class, and the result built from it, whose histograms
// are the recorder's, encoded.
func recorded(t testing.TB) (*metrics.Recorder, *result.Result) {
	t.Helper()
	rec := metrics.NewRecorder(3)
	steps := []struct{ scenario, name string }{{"checkout", "home"}, {"sign_up", "login"}, {"checkout", "login"}}
	for i := range 3000 {
		s := metrics.Sample{Step: i % 3, Status: 200, Latency: time.Duration(1+i%97) * time.Millisecond,
			Service: time.Duration(1+i%89) * time.Millisecond, TTFB: time.Duration(1+i%83) * time.Millisecond, Bytes: 100}
		switch {
		case i%50 == 0:
			s.Status = 503
		case i%70 == 0:
			s.Status = 404
		case i%90 == 0:
			s.Status, s.Failure, s.Err, s.Latency = 0, httpx.FailureTimeout, errors.New("timeout"), 2*time.Second
		case i%110 == 0:
			s.Status, s.Failure, s.Err = 0, httpx.FailureReset, errors.New("reset")
		}
		if i%10 == 0 {
			s.Connect = time.Duration(100+i) * time.Microsecond
			s.TLS = time.Duration(1000+i) * time.Microsecond
		}
		rec.Record(&s)
	}
	r := &result.Result{Schema: result.SchemaResult, Summary: metrics.RunSummary(rec, 10*time.Second)}
	for i, st := range steps {
		h, err := metrics.StepHistograms(&rec.Steps[i])
		if err != nil {
			t.Fatal(err)
		}
		r.Steps = append(r.Steps, result.Step{Scenario: st.scenario, Name: st.name, Summary: metrics.Summarize(rec, []int{i}, 10*time.Second), Histograms: h})
	}
	var err error
	if r.Histograms.Connect, err = metrics.Encode(rec.Connect); err != nil {
		t.Fatal(err)
	}
	if r.Histograms.TLS, err = metrics.Encode(rec.TLS); err != nil {
		t.Fatal(err)
	}
	return rec, r
}

// distributions are thresholds over every histogram a threshold can read.
var distributions = []string{
	"p95(latency) < 50ms", "p99(latency, step=login) < 90ms", "max(latency, status=failed) < 1s",
	"p50(latency, status=5xx) < 20ms", "avg(latency, scenario=checkout, status=4xx) < 50ms",
	"p90(service_time) < 80ms", "min(service_time, step=home, status=ok) >= 1ms",
	"p95(ttfb) < 70ms", "med(ttfb, scenario=sign_up) < 40ms", "p95(connect) < 3ms", "p95(tls) < 4ms",
	"p95(latency, step=nope) < 1s", "p95(latency, status=4xx, step=home) < 1s",
}

// TestLiveEqualsStored: a threshold measured on the recorder's histograms
// in memory gives exactly what it gives on the same histograms encoded in
// result.json and decoded.
func TestLiveEqualsStored(t *testing.T) {
	rec, r := recorded(t)
	for _, text := range distributions {
		th := mustParse(t, text)
		live, stored := Evaluate(th, r, Live(rec), nil), Evaluate(th, r, Stored(r), nil)
		if live != stored {
			t.Errorf("%s:\n live   %+v\n stored %+v", text, live, stored)
		}
		if live.Missing && text != "p95(latency, step=nope) < 1s" && text != "p95(latency, status=4xx, step=home) < 1s" {
			t.Errorf("%s: missing: %s", text, live.Detail)
		}
	}
}

// TestLiveDecodesNothing: the live histograms are read without the
// encodings, so a result stripped of them measures the same.
func TestLiveDecodesNothing(t *testing.T) {
	rec, r := recorded(t)
	want := EvaluateAll(parseAll(t, distributions), r, Stored(r), nil)
	for i := range r.Steps {
		r.Steps[i].Histograms = result.StepHistograms{Latency: map[string]string{"ok": "not a histogram"}}
	}
	r.Histograms.Connect = "not a histogram"
	if got := EvaluateAll(parseAll(t, distributions), r, Live(rec), nil); !equalOutcomes(got, want) {
		t.Errorf("live over a result without its encodings:\n got  %+v\n want %+v", got, want)
	}
}

func parseAll(t testing.TB, texts []string) []*Threshold {
	var out []*Threshold
	for _, s := range texts {
		th, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, th)
	}
	return out
}

func equalOutcomes(a, b []Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		a[i].Threshold, b[i].Threshold = nil, nil
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkEvaluate measures the thresholds of a run from its histograms
// in memory (the run path) and from result.json's encodings (a stored
// result): the difference is the decoding the run path no longer does.
func BenchmarkEvaluate(b *testing.B) {
	rec, r := recorded(b)
	ts := parseAll(b, distributions)
	for _, bc := range []struct {
		name string
		h    Histograms
	}{{"live", Live(rec)}, {"stored", Stored(r)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				EvaluateAll(ts, r, bc.h, nil)
			}
		})
	}
}

// TestTLSThreshold: p95(tls) reads the run's TLS handshakes (1.0 to 4 ms
// in recorded), and fails a bound below them.
func TestTLSThreshold(t *testing.T) {
	rec, r := recorded(t)
	for text, pass := range map[string]bool{"p95(tls) < 4ms": true, "p95(tls) < 2ms": false, "max(tls) < 5ms": true} {
		o := Evaluate(mustParse(t, text), r, Live(rec), nil)
		if o.Missing || o.Pass != pass {
			t.Errorf("%s: %+v, want passed %v", text, o, pass)
		}
	}
}
