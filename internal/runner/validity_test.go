package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/server"
)

// TestValidity: each reason to distrust a run gives its warning, a clean run
// none.
func TestValidity(t *testing.T) {
	clean := func() *result.Result {
		return &result.Result{
			Summary:   result.Summary{Requests: 1000, Responses: 1000, Iterations: 1000},
			Generator: &result.Generator{CPUAvg: 50, Cores: 2},
			Server:    &result.Server{MajorFaults: MajorFaults - 1},
			Machine:   &result.Machine{CPUs: 2, BusyPct: 40, LoadlabPct: 25, ServerPct: 10, OthersPct: 5, StealPct: 1},
		}
	}
	tests := []struct {
		code  string
		spoil func(r *result.Result, out *engine.Outcome)
	}{
		{"", func(*result.Result, *engine.Outcome) {}},
		{"generator_saturated", func(r *result.Result, _ *engine.Outcome) { r.Generator.CPUAvg = 185 }},
		{"late", func(r *result.Result, _ *engine.Outcome) { r.Summary.Late.Count = 11 }},
		{"unsent", func(r *result.Result, _ *engine.Outcome) { r.Summary.Unsent = 1 }},
		{"no_response", func(r *result.Result, _ *engine.Outcome) { r.Summary.Responses = 499 }},
		{"dropped", func(r *result.Result, _ *engine.Outcome) { r.Summary.Dropped = 1 }},
		{"aborted", func(r *result.Result, _ *engine.Outcome) { r.Summary.Aborted = 1 }},
		{"abandoned", func(_ *result.Result, out *engine.Outcome) { out.InFlight = 3 }},
		{"stopped", func(_ *result.Result, out *engine.Outcome) { out.Stopped = errors.New("stop: users.csv ran out") }},
		{"server_swapped", func(r *result.Result, _ *engine.Outcome) { r.Server.SwapPeak = 4096 }},
		{"server_major_faults", func(r *result.Result, _ *engine.Outcome) { r.Server.MajorFaults = MajorFaults }},
		{"memory_quota", func(r *result.Result, _ *engine.Outcome) {
			r.Server.Quota = &result.Quota{Bytes: 100, PeakExceeded: true, PeakOver: 5}
		}},
		{"server_exited", func(r *result.Result, _ *engine.Outcome) { r.Server.Exit = "exit status 1" }},
		{"server_unmeasured", func(r *result.Result, _ *engine.Outcome) { r.Server.Unmeasured = []string{"pss", "swap"} }},
		{"machine_busy", func(r *result.Result, _ *engine.Outcome) { r.Machine.OthersPct = 100*MachineBusy + 1 }},
		{"cpu_steal", func(r *result.Result, _ *engine.Outcome) { r.Machine.StealPct = 100*CPUSteal + 1 }},
		// A server loadlab did not start, on this machine, is among the others.
		{"", func(r *result.Result, _ *engine.Outcome) { r.Machine.OthersPct, r.Machine.ServerUnwatched = 60, true }},
	}
	for _, tt := range tests {
		r, out := clean(), &engine.Outcome{}
		tt.spoil(r, out)
		var codes []string
		for _, w := range Validity(r, out) {
			codes = append(codes, w.Code)
			if w.Message == "" {
				t.Errorf("%s: no message", w.Code)
			}
		}
		if got := strings.Join(codes, ","); got != tt.code {
			t.Errorf("spoiled for %q: warnings %q", tt.code, got)
		}
	}
	// An interrupted run abandons its requests in flight knowingly.
	if w := Validity(clean(), &engine.Outcome{InFlight: 3, Interrupted: true}); len(w) != 0 {
		t.Errorf("interrupted run: %v", w)
	}
}

// TestServerSeriesIsBounded: a day of 250 ms samples keeps at most
// MaxServerPoints points in result.json, and no peak is lost.
func TestServerSeriesIsBounded(t *testing.T) {
	start := time.Unix(0, 0)
	var samples []server.Sample
	for i := range 24 * 3600 * 4 {
		smp := server.Sample{Time: start.Add(time.Duration(i) * 250 * time.Millisecond), CPU: 50, RSS: 100 << 20, Threads: 4}
		if i == 12345 {
			smp.CPU, smp.RSS = 190, 900<<20
		}
		samples = append(samples, smp)
	}
	series := serverSeries(samples, start)
	if short := serverSeries(samples[:100], start); len(short) != 100 || short[99].T != 24.75 {
		t.Errorf("a short run's %d samples became %d points", 100, len(short))
	}
	if len(series) > MaxServerPoints || len(series) < MaxServerPoints/2 {
		t.Fatalf("%d points", len(series))
	}
	var cpu float64
	var rss int64
	for _, p := range series {
		cpu, rss = max(cpu, p.CPU), max(rss, p.RSS)
	}
	if cpu != 190 || rss != 900<<20 || series[len(series)-1].T != samples[len(samples)-1].Time.Sub(start).Seconds() {
		t.Errorf("peaks %v %v, last t %v", cpu, rss, series[len(series)-1].T)
	}
}

// TestLateDiagnosis: the late warning needs enough requests and late ones
// before its share counts, and says why from what was measured: VUs all
// busy, loadlab busy, or scheduling jitter (issue 20, item 5).
func TestLateDiagnosis(t *testing.T) {
	// The run: an open load of 40 VUs of which at most 3 were
	// busy, nothing dropped, loadlab at 2% CPU, 2 of 110 requests late by 2
	// to 20 ms. It was told "every connection was busy... raise max_vus".
	jitter := func(requests, late int64) *result.Result {
		return &result.Result{
			Plan:      "name: x",
			Settings:  result.Settings{Mode: "open", Workers: 2},
			Summary:   result.Summary{Requests: requests, Responses: requests, Iterations: requests / 2, VUs: 40, VUsPeak: 3, VUsAvg: 1.2, Late: result.Late{Count: late, P50: 4, P99: 19, Max: 20}},
			Generator: &result.Generator{CPUAvg: 2, Cores: 2},
		}
	}
	late := func(r *result.Result) string {
		for _, w := range Validity(r, &engine.Outcome{}) {
			if w.Code == "late" {
				return w.Message
			}
		}
		return ""
	}
	if m := late(jitter(110, 2)); m != "" {
		t.Errorf("2 of 110 late: %s", m)
	}
	// Enough of them to count: still jitter, and no advice to raise max_vus.
	r := jitter(2000, 60)
	r.Machine = &result.Machine{CPUs: 2, BusyPct: 97, StealPct: 1}
	m := late(r)
	for _, want := range []string{"the machine's 2 CPUs were 97% busy, 1% of their time stolen", "60 of 2000 requests (3.0%)", "after they were due (of all requests, 4 ms late at the median, 19 at p99, 20 at most)", "at most 3 of 40 VUs were busy, 1.2 on average", "scheduling jitter", "loadlab used 2% of a core"} {
		if !strings.Contains(m, want) {
			t.Errorf("jitter: %q lacks %q", m, want)
		}
	}
	if strings.Contains(m, "raise") {
		t.Errorf("jitter advises raising: %s", m)
	}
	// Under the minimum count of late ones, however large their share.
	if m := late(jitter(LateMinRequests, LateMinCount-1)); m != "" {
		t.Errorf("%d late: %s", LateMinCount-1, m)
	}

	// Quick mode's --rate with -c: most late arrivals waited for a
	// connection, every one of them busy.
	pool := jitter(2000, 60)
	pool.Plan = ""
	pool.Summary.VUsPeak, pool.Summary.Late.Waited = 40, 55
	if m := late(pool); !strings.Contains(m, "55 arrivals found every connection busy") || !strings.Contains(m, "at most 40 of 40 VUs") || !strings.Contains(m, "raise -c") {
		t.Errorf("pool exhausted: %s", m)
	}
	// loadlab's two event loops at 150% of a core: loadlab was late.
	busy := jitter(2000, 60)
	busy.Generator.CPUAvg = 150
	if m := late(busy); !strings.Contains(m, "loadlab itself was busy") || strings.Contains(m, "raise") {
		t.Errorf("generator busy: %s", m)
	}
}

func hasCode(ws []result.Warning, code string) bool {
	for _, w := range ws {
		if w.Code == code {
			return true
		}
	}
	return false
}
