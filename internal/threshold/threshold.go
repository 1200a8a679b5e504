// Package threshold parses and evaluates thresholds: the pass/fail criteria
// of a load test, written in a plan file as
//
//	thresholds:
//	  - p95(latency) < 500ms
//	  - p99(latency, step=login) < 2s
//	  - error_rate < 1%
//	  - server.rss.peak < 2560MiB
//
// Parse turns one such string into a Threshold; Evaluate measures it against
// a run's result.Result, its histograms (Live: the engine's, in memory, for
// a run just made; Stored: decoded from result.json) and the server
// figures, when a server was watched, and says whether it held. The package owns the grammar and the meaning of
// each metric; the plan loader owns where a threshold came from (it adds the
// file, line and column of the string to SyntaxError.Col), and the reports
// own how outcomes are shown.
//
// # Grammar
//
// In EBNF, whitespace allowed between any two tokens:
//
//	threshold = selector operator value .
//	selector  = aggregate "(" metric { "," filter } ")"
//	          | metric [ "(" filter { "," filter } ")" ] .
//	aggregate = "avg" | "min" | "max" | "med" | percentile .
//	percentile = "p" digits [ "." digits ] .      (* p95, p99.9; p999 reads as p99.9 *)
//	metric    = "latency" | "service_time" | "ttfb" | "connect"
//	          | "error_rate" | "checks" | "rate" | "requests"
//	          | "iterations" | "dropped"
//	          | "server.cpu.avg" | "server.cpu.peak"
//	          | "server.rss.avg" | "server.rss.peak"
//	          | "server.pss.avg" | "server.pss.peak"
//	          | "server.swap.peak" | "server.major_faults" .
//	filter    = ( "step" | "scenario" | "status" ) "=" word .
//	word      = bare | '"' { char | '\' char } '"' .
//	operator  = "<" | "<=" | ">" | ">=" .
//	value     = number [ unit ] .
//	number    = digits [ "." digits ] | "." digits .  (* no sign, no exponent *)
//	unit      = "%" | letters | "/" [ digits ] letters .
//
// A bare word is any run of characters but spaces and , ( ) = " \ < >;
// a step named "GET /products/{{ id }}" needs the quotes. A name is
// compared as written, case and all.
//
// The unit of the value must suit the metric:
//
//   - latency, service_time, ttfb, connect: a duration, 500us (or µs), 500ms,
//     2s, 1m, 1h. These metrics are distributions, so they need an aggregate:
//     p95(latency), avg(latency), max(ttfb). med is p50.
//   - error_rate, checks, server.cpu.*: a percentage, 1%, 99.9%. CPU is a
//     percentage of one core, so 150% means one and a half cores.
//   - server.rss.*, server.pss.*, server.swap.peak: a byte size such as
//     2560MiB or 1.5GB (package quantity reads it).
//   - rate: a rate such as 100/s or 6000/m.
//   - requests, iterations, dropped, server.major_faults: a whole number.
//
// Filters narrow a request metric (latency, service_time, ttfb, error_rate,
// checks, rate, requests) to the steps whose name (step=) or scenario
// (scenario=) is the word given, and to one status class (status=ok, 4xx,
// 5xx or failed). Several filters must all hold; each may appear once.
// step=login matches a step named login in every scenario. ttfb and checks
// are not recorded by status class, so they take no status=, and
// error_rate takes no status=ok. The other metrics describe the whole run
// and take no filters.
//
// Percentiles: p999 reads as p99.9 and p9999 as p99.99, as in many tools;
// other percentiles of three digits or more need their dot (p101 is an
// error), and p0 is written min. A limit that can never be met, such as
// "< 0ms", is an error, as is a share (error_rate, checks) above 100%.
//
// Values are kept in canonical units: milliseconds for durations, a
// fraction for percentages (1% is 0.01), bytes for sizes, per second for
// rates, and counts as they are. Decimals are read exactly, so a limit of
// 99.9% equals a measured 999 of 1000.
//
// # Evaluation
//
// Durations come from the result's HDR histograms. For the steps a
// threshold selects, the histograms of the classes that had a response
// (ok, 4xx, 5xx), or only the class status= names, are decoded and merged
// before the percentile is taken, so the figure is exact to the
// histogram's resolution; per-step percentiles are never averaged. Failed
// requests (no response) enter a duration only with status=failed.
// error_rate is errors over requests, errors being 4xx and 5xx responses
// and failures as in result.Errors.Total; with status= it is that class's
// share of all requests. rate is requests over the measured duration.
//
// A threshold with nothing to measure (step=login matches no step, no 5xx
// response was seen, the server was not watched) fails, and its Outcome
// says why: a misspelt step name must not pass unnoticed.
package threshold

import (
	"math/big"
	"strings"
)

// Metric is what a threshold measures, named as a plan file writes it.
type Metric string

// The metrics a threshold can name.
const (
	Latency           Metric = "latency"      // from when a request was due to its last byte
	ServiceTime       Metric = "service_time" // from when it was actually sent
	TTFB              Metric = "ttfb"         // time to the first byte of the response
	Connect           Metric = "connect"      // time to open a connection, run-wide
	TLS               Metric = "tls"          // TLS handshake of a new connection, run-wide
	ErrorRate         Metric = "error_rate"   // share of requests that failed or got 4xx/5xx
	Checks            Metric = "checks"       // share of checks that passed
	Rate              Metric = "rate"         // responses (of any status) per second: throughput
	Requests          Metric = "requests"     // requests finished
	Iterations        Metric = "iterations"   // journeys completed
	Dropped           Metric = "dropped"      // arrivals that found no free VU
	ServerCPUAvg      Metric = "server.cpu.avg"
	ServerCPUPeak     Metric = "server.cpu.peak"
	ServerRSSAvg      Metric = "server.rss.avg"
	ServerRSSPeak     Metric = "server.rss.peak"
	ServerPSSAvg      Metric = "server.pss.avg"
	ServerPSSPeak     Metric = "server.pss.peak"
	ServerSwapPeak    Metric = "server.swap.peak"
	ServerMajorFaults Metric = "server.major_faults"
)

// Unit is the canonical unit of a metric's values.
type Unit int

// Units.
const (
	Milliseconds Unit = iota + 1
	Fraction          // 0.01 is 1%; for server.cpu.*, 1.5 is one and a half cores
	Bytes
	PerSecond
	Count
)

func (u Unit) String() string {
	switch u {
	case Milliseconds:
		return "ms"
	case Fraction:
		return "fraction"
	case Bytes:
		return "bytes"
	case PerSecond:
		return "per second"
	case Count:
		return "count"
	}
	return "unknown unit"
}

// metricInfo is what the parser and evaluator know of a metric.
type metricInfo struct {
	name Metric
	unit Unit
	// distribution: a histogram, read through an aggregate (p95, avg...).
	distribution bool
	// filters: step= and scenario= apply; status: status= applies too.
	filters, status bool
	// describe names the metric in an outcome's Detail.
	describe string
	// example is a sensible whole threshold, for error messages.
	example string
}

// metricTable lists the known metrics, in the order error messages list them.
var metricTable = [...]metricInfo{
	{Latency, Milliseconds, true, true, true, "latency", "p95(latency) < 500ms"},
	{ServiceTime, Milliseconds, true, true, true, "service time", "p95(service_time) < 500ms"},
	// TTFB is one histogram per step, not one per status class.
	{TTFB, Milliseconds, true, true, false, "ttfb", "p95(ttfb) < 200ms"},
	// Connect is one histogram for the whole run.
	{Connect, Milliseconds, true, false, false, "connect time", "p95(connect) < 50ms"},
	{TLS, Milliseconds, true, false, false, "tls handshake time", "p95(tls) < 50ms"},
	{ErrorRate, Fraction, false, true, true, "error rate", "error_rate < 1%"},
	// Checks are counted per step, not per status class.
	{Checks, Fraction, false, true, false, "checks passed", "checks > 99%"},
	{Rate, PerSecond, false, true, true, "rate", "rate > 100/s"},
	{Requests, Count, false, true, true, "requests", "requests > 1000"},
	// Iterations and dropped arrivals are counted per scenario: scenario= only.
	{Iterations, Count, false, true, false, "iterations", "iterations > 100"},
	{Dropped, Count, false, true, false, "dropped arrivals", "dropped < 1"},
	{ServerCPUAvg, Fraction, false, false, false, "server.cpu.avg", "server.cpu.avg < 80%"},
	{ServerCPUPeak, Fraction, false, false, false, "server.cpu.peak", "server.cpu.peak < 150%"},
	{ServerRSSAvg, Bytes, false, false, false, "server.rss.avg", "server.rss.avg < 2GiB"},
	{ServerRSSPeak, Bytes, false, false, false, "server.rss.peak", "server.rss.peak < 2560MiB"},
	{ServerPSSAvg, Bytes, false, false, false, "server.pss.avg", "server.pss.avg < 2GiB"},
	{ServerPSSPeak, Bytes, false, false, false, "server.pss.peak", "server.pss.peak < 2560MiB"},
	{ServerSwapPeak, Bytes, false, false, false, "server.swap.peak", "server.swap.peak < 1MiB"},
	{ServerMajorFaults, Count, false, false, false, "server.major_faults", "server.major_faults < 100"},
}

func lookupMetric(name string) (metricInfo, bool) {
	for _, m := range metricTable {
		if string(m.name) == name {
			return m, true
		}
	}
	return metricInfo{}, false
}

// Unit is the canonical unit of the metric's values; 0 for an unknown metric.
func (m Metric) Unit() Unit {
	info, _ := lookupMetric(string(m))
	return info.unit
}

// Aggregate is how a distribution is reduced to one figure.
type Aggregate int

// Aggregates.
const (
	NoAggregate Aggregate = iota // the metric is one figure already
	Percentile                   // Threshold.Quantile says which
	Average
	Minimum
	Maximum
)

// Op is a comparison.
type Op int

// Operators.
const (
	Less Op = iota + 1
	LessOrEqual
	Greater
	GreaterOrEqual
)

func (o Op) String() string {
	switch o {
	case Less:
		return "<"
	case LessOrEqual:
		return "<="
	case Greater:
		return ">"
	case GreaterOrEqual:
		return ">="
	}
	return "?"
}

// Holds reports whether "measured op limit" is true.
func (o Op) Holds(measured, limit float64) bool {
	switch o {
	case Less:
		return measured < limit
	case LessOrEqual:
		return measured <= limit
	case Greater:
		return measured > limit
	case GreaterOrEqual:
		return measured >= limit
	}
	return false
}

// Filters narrow a request metric; an empty field does not filter.
type Filters struct {
	Scenario string // the step's scenario is this
	Step     string // the step's name is this (in any scenario unless Scenario says)
	Status   string // "ok", "4xx", "5xx" or "failed"
}

// Status classes, as result.StepHistograms keys them.
const (
	StatusOK     = "ok"
	Status4xx    = "4xx"
	Status5xx    = "5xx"
	StatusFailed = "failed"
)

// terms are the filters as written canonically: scenario first, as steps
// belong to scenarios.
func (f Filters) terms() []string {
	var out []string
	if f.Scenario != "" {
		out = append(out, "scenario="+quoteWord(f.Scenario))
	}
	if f.Step != "" {
		out = append(out, "step="+quoteWord(f.Step))
	}
	if f.Status != "" {
		out = append(out, "status="+f.Status)
	}
	return out
}

// Threshold is one parsed threshold.
type Threshold struct {
	Text      string // as written
	Metric    Metric
	Aggregate Aggregate
	Quantile  float64 // for Percentile: 95 for p95, 99.9 for p99.9
	Filters   Filters
	Op        Op
	Value     float64 // the limit, in the metric's canonical Unit
}

// String writes t canonically: aggregates and values in one spelling each
// (p999 as p99.9, med as p50, 2000ms as 2s, 6000/m as 100/s), filters in a
// fixed order, single spaces. Parse(t.String()) gives t back, Text aside.
func (t *Threshold) String() string {
	var b strings.Builder
	terms := t.Filters.terms()
	if t.Aggregate == NoAggregate {
		b.WriteString(string(t.Metric))
		if len(terms) > 0 {
			b.WriteString("(" + strings.Join(terms, ", ") + ")")
		}
	} else {
		b.WriteString(t.aggregateName() + "(" + string(t.Metric))
		for _, term := range terms {
			b.WriteString(", " + term)
		}
		b.WriteString(")")
	}
	b.WriteString(" " + t.Op.String() + " " + formatLimit(t.Metric.Unit(), t.Value))
	return b.String()
}

// aggregateName is the canonical name of t's aggregate ("p95", "avg").
func (t *Threshold) aggregateName() string {
	switch t.Aggregate {
	case Percentile:
		return "p" + shortestDecimal(t.Quantile, big.NewRat(1, 1))
	case Average:
		return "avg"
	case Minimum:
		return "min"
	case Maximum:
		return "max"
	}
	return ""
}

// quoteWord writes a filter's word bare when the grammar allows, else quoted.
func quoteWord(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool { return !isBareRune(r) }) {
		return w
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(w) + `"`
}
