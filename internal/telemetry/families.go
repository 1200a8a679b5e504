package telemetry

import (
	"github.com/loadlab/loadlab/internal/metrics"
)

// Kind is what a metric is.
type Kind int

const (
	Counter Kind = iota
	Gauge
	Histogram
)

// Family is one metric and its series: what /metrics, remote-write and
// OTLP all show, from one place.
type Family struct {
	Name string // Prometheus name: counters end in _total
	Help string
	// Unit is for OTLP: "s", "By", "%", "1", or an annotation such as
	// "{vu}". A receiver that makes Prometheus names of OTLP ones (Prometheus'
	// OTLP endpoint) adds a suffix for some units: _seconds, _bytes,
	// _percent (already there), and _ratio to a gauge of "1", which is why
	// the gauges of counts have annotations (dropped) instead.
	Unit string
	Kind Kind
	// Labels name the labels of every series, in order.
	Labels []string
	Series []Series
}

// Series is one labelled series of a family.
type Series struct {
	Values []string // of Family.Labels
	Value  float64  // counters and gauges
	// Histograms: counts by bucket of Bounds, not cumulative, the last +Inf.
	Buckets []uint64
	Sum     float64
	Count   uint64
	// Native and NativeZero: the same latencies in native buckets
	// (StepFigures.Native), for remote-write's native histograms.
	Native     []uint64
	NativeZero uint64
}

// Names lists the metric names Families makes, histograms with their
// _bucket, _sum and _count series; the Grafana dashboard may use only these.
func Names() []string {
	var out []string
	for _, f := range Families(Snapshot{Figures: Figures{Server: true}, Steps: []StepFigures{{Buckets: make([]uint64, len(Bounds)+1)}}}) {
		if f.Kind == Histogram {
			out = append(out, f.Name+"_bucket", f.Name+"_sum", f.Name+"_count")
			continue
		}
		out = append(out, f.Name)
	}
	return out
}

// Families turns a snapshot into metric families.
func Families(s Snapshot) []Family {
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	one := func(name, help, unit string, kind Kind, v float64) Family {
		return Family{Name: name, Help: help, Unit: unit, Kind: kind, Series: []Series{{Value: v}}}
	}
	requests := Family{Name: "loadlab_requests_total", Unit: "1", Kind: Counter, Labels: []string{"scenario", "step", "class"},
		Help: "Exchanges finished, by step and class: ok (1xx-3xx), 4xx, 5xx, timeout, failed (no response: refused, reset, TLS...)."}
	checks := Family{Name: "loadlab_checks_total", Unit: "1", Kind: Counter, Labels: []string{"scenario", "step", "result"},
		Help: "Checks of a step's responses, by result: passed or failed."}
	latency := Family{Name: "loadlab_request_duration_seconds", Unit: "s", Kind: Histogram, Labels: []string{"scenario", "step"},
		Help: "Latency from when a request was due to its response (or its timeout), by step."}
	for _, st := range s.Steps {
		for c := range metrics.NumClasses {
			requests.Series = append(requests.Series, Series{Values: []string{st.Scenario, st.Step, c.String()}, Value: float64(st.Count[c])})
		}
		checks.Series = append(checks.Series,
			Series{Values: []string{st.Scenario, st.Step, "passed"}, Value: float64(st.Checks.Passed)},
			Series{Values: []string{st.Scenario, st.Step, "failed"}, Value: float64(st.Checks.Failed)})
		var n uint64
		for _, b := range st.Buckets {
			n += b
		}
		latency.Series = append(latency.Series, Series{Values: []string{st.Scenario, st.Step}, Buckets: st.Buckets, Sum: st.Sum, Count: n, Native: st.Native, NativeZero: st.NativeZero})
	}
	out := []Family{
		requests, checks, latency,
		one("loadlab_iterations_total", "Journeys (quick mode: requests) completed.", "1", Counter, float64(s.Iterations)),
		one("loadlab_dropped_total", "Arrivals of an open load that found no free VU and were not started.", "1", Counter, float64(s.Dropped)),
		one("loadlab_late_total", "Requests sent 1 ms or more after they were due.", "1", Counter, float64(s.Late)),
		one("loadlab_received_bytes_total", "Response bytes received, as on the wire.", "By", Counter, float64(s.Bytes)),
		one("loadlab_vus_active", "VUs in an iteration at the end of the newest second.", "{vu}", Gauge, float64(s.VUs)),
		one("loadlab_running", "1 while the command sends load (an experiment: until its last run ends), 0 after.", "{run}", Gauge, b2f(s.Running)),
		one("loadlab_runs_total", "Runs started (an experiment makes many).", "1", Counter, float64(s.Runs)),
	}
	if s.Server {
		out = append(out,
			one("loadlab_server_cpu_percent", "CPU of the server under test's process tree, in percent of one core (newest sample).", "%", Gauge, s.ServerCPU),
			one("loadlab_server_rss_bytes", "Resident memory of the server under test's process tree (newest sample).", "By", Gauge, float64(s.ServerRSS)))
	}
	return out
}
