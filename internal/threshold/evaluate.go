package threshold

import (
	"fmt"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
)

// Outcome is a threshold measured against a run.
type Outcome struct {
	Threshold *Threshold
	Measured  float64 // in the metric's canonical unit; 0 when Missing
	Pass      bool
	// Missing says there was nothing to measure: step=login matched no
	// step, no response had status 5xx, the server was not watched. A
	// threshold that cannot be measured fails: a typo in a step name must
	// not pass silently. Detail says why.
	Missing bool
	Detail  string // "p95 latency of step login: 812 ms (1000 responses)"
}

// ServerFigures gives the figures of the server under test, by metric
// (ServerCPUAvg, ServerRSSPeak, ...), in canonical units: CPU as a fraction
// of one core (1.5 is one and a half cores, so divide a percentage by 100),
// memory in bytes, major faults as a count. ok is false for a figure that
// was not recorded.
type ServerFigures interface {
	ServerFigure(m Metric) (value float64, ok bool)
}

// ServerMap is ServerFigures held in a map (internal/runner fills one from
// result.Server). A nil ServerMap has no figures.
type ServerMap map[Metric]float64

var _ ServerFigures = ServerMap(nil)

// ServerFigure implements ServerFigures.
func (m ServerMap) ServerFigure(metric Metric) (float64, bool) {
	v, ok := m[metric]
	return v, ok
}

// Evaluate measures t against the run r, its histograms h (Live for a run
// just made, Stored for a result read back) and the server's figures (nil
// when no server was watched). Percentiles are exact over the steps t
// selects: their histograms are merged, then the quantile taken, never an
// average of per-step percentiles.
func Evaluate(t *Threshold, r *result.Result, h Histograms, server ServerFigures) Outcome {
	out := Outcome{Threshold: t}
	subject := t.subject()
	m := measure(t, r, h, server)
	if m.missing != "" {
		out.Missing = true
		out.Detail = subject + ": " + m.missing
		return out
	}
	out.Measured = m.value
	out.Pass = t.Op.Holds(m.value, t.Value)
	out.Detail = subject + ": " + formatMeasured(t.Metric.Unit(), m.value) + m.note
	return out
}

// EvaluateAll evaluates each threshold in turn.
func EvaluateAll(ts []*Threshold, r *result.Result, h Histograms, server ServerFigures) []Outcome {
	out := make([]Outcome, len(ts))
	for i, t := range ts {
		out[i] = Evaluate(t, r, h, server)
	}
	return out
}

// measurement is a figure, or why there is none.
type measurement struct {
	value   float64
	note    string // how it was reached, " (3 errors in 600 requests)"
	missing string
}

func missing(format string, args ...any) measurement {
	return measurement{missing: fmt.Sprintf(format, args...)}
}

func measure(t *Threshold, r *result.Result, h Histograms, server ServerFigures) measurement {
	info, ok := lookupMetric(string(t.Metric))
	if !ok {
		return missing("unknown metric %q", t.Metric)
	}
	if strings.HasPrefix(string(t.Metric), "server.") {
		return serverFigure(t.Metric, server)
	}
	if r == nil {
		return missing("no result to measure")
	}
	switch {
	case info.distribution:
		return distribution(t, r, h)
	case (t.Metric == Iterations || t.Metric == Dropped) && t.Filters.Scenario != "":
		return scenarioCount(t, r)
	case t.Metric == Iterations:
		return measurement{value: float64(r.Summary.Iterations)}
	case t.Metric == Dropped:
		return measurement{value: float64(r.Summary.Dropped)}
	case t.Metric == Checks:
		return checks(t, r)
	}
	return requestCounts(t, r)
}

// scenarioCount measures iterations or dropped of one scenario: its own
// totals when the run had several scenarios, the run's when it had that
// one alone. Arrivals are dropped before a scenario is picked by weight,
// so only a scenario with a load of its own has dropped arrivals of its
// own.
func scenarioCount(t *Threshold, r *result.Result) measurement {
	for _, sc := range r.Scenarios {
		if sc.Scenario != t.Filters.Scenario {
			continue
		}
		if t.Metric == Iterations {
			return measurement{value: float64(sc.Summary.Iterations)}
		}
		if sc.Load == "" {
			return missing("dropped arrivals are counted per scenario only when each scenario has a load of its own; scenario %s shares the plan's", sc.Scenario)
		}
		return measurement{value: float64(sc.Summary.Dropped)}
	}
	for _, st := range r.Steps {
		if st.Scenario == t.Filters.Scenario {
			// The run's only scenario: its totals are the run's.
			if t.Metric == Iterations {
				return measurement{value: float64(r.Summary.Iterations)}
			}
			return measurement{value: float64(r.Summary.Dropped)}
		}
	}
	return missing("scenario=%s matches no scenario of the run", quoteWord(t.Filters.Scenario))
}

func serverFigure(m Metric, server ServerFigures) measurement {
	if server == nil {
		return missing("the server was not watched (the plan has no server: section)")
	}
	v, ok := server.ServerFigure(m)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return missing("the server's %s was not recorded", m)
	}
	return measurement{value: v}
}

// selectSteps returns the indices of the steps that t's step= and
// scenario= filters match (all steps without them), or why none does.
func selectSteps(t *Threshold, r *result.Result) ([]int, string) {
	var out []int
	for i := range r.Steps {
		st := &r.Steps[i]
		if (t.Filters.Step == "" || st.Name == t.Filters.Step) &&
			(t.Filters.Scenario == "" || st.Scenario == t.Filters.Scenario) {
			out = append(out, i)
		}
	}
	if len(out) > 0 {
		return out, ""
	}
	if len(r.Steps) == 0 {
		return nil, "the result has no steps"
	}
	var which []string
	if t.Filters.Scenario != "" {
		which = append(which, "scenario="+quoteWord(t.Filters.Scenario))
	}
	if t.Filters.Step != "" {
		which = append(which, "step="+quoteWord(t.Filters.Step))
	}
	const shown = 10
	var names []string
	for i, st := range r.Steps {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(r.Steps)-shown))
			break
		}
		names = append(names, st.Scenario+"/"+st.Name)
	}
	return nil, fmt.Sprintf("no step matches %s; the steps are %s", strings.Join(which, ", "), strings.Join(names, ", "))
}

// histogram is what an aggregate reads of an HDR histogram of microseconds.
type histogram interface {
	TotalCount() int64
	ValueAtQuantile(q float64) int64
	Mean() float64
	Min() int64
	Max() int64
}

// distribution merges the histograms t selects and reduces them with t's
// aggregate.
func distribution(t *Threshold, r *result.Result, hs Histograms) measurement {
	merged := metrics.NewHistogram()
	var dropped int64
	add := func(h *hdr.Histogram, err error) string {
		if err != nil {
			return err.Error()
		}
		if h != nil {
			dropped += merged.Merge(h)
		}
		return ""
	}
	counted := "responses"
	switch t.Metric {
	case Connect:
		counted = "connections"
		if problem := add(hs.Connect()); problem != "" {
			return missing("%s", problem)
		}
	case TLS:
		counted = "TLS handshakes"
		if problem := add(hs.TLS()); problem != "" {
			return missing("%s", problem)
		}
	default:
		steps, why := selectSteps(t, r)
		if why != "" {
			return missing("%s", why)
		}
		// Latency and service time of the classes the summaries count:
		// responses and timeouts (censored at the timeout), unless status=
		// names a class; status=failed is every request without a response.
		classes := []string{StatusOK, Status4xx, Status5xx, "timeout"}
		counted = "responses and timeouts"
		switch t.Filters.Status {
		case "":
		case StatusFailed:
			classes, counted = []string{"timeout", StatusFailed}, "failed requests"
		default:
			classes, counted = []string{t.Filters.Status}, t.Filters.Status+" responses"
		}
		if t.Metric == TTFB {
			counted = "responses"
			classes = []string{""}
		}
		for _, i := range steps {
			for _, class := range classes {
				if problem := add(hs.Step(i, t.Metric, class)); problem != "" {
					return missing("%s", problem)
				}
			}
		}
	}
	if merged.TotalCount() == 0 {
		return missing("nothing to measure: no %s were recorded", counted)
	}
	m := measurement{value: reduce(t, merged), note: fmt.Sprintf(" (%d %s)", merged.TotalCount(), counted)}
	if dropped > 0 {
		m.note += fmt.Sprintf("; %d values outside the histogram's range were left out", dropped)
	}
	return m
}

// reduce applies t's aggregate to h (microseconds) and returns milliseconds.
func reduce(t *Threshold, h histogram) float64 {
	switch t.Aggregate {
	case Average:
		return h.Mean() / 1000
	case Minimum:
		return float64(h.Min()) / 1000
	case Maximum:
		return float64(h.Max()) / 1000
	}
	return float64(h.ValueAtQuantile(t.Quantile)) / 1000
}

// tally counts requests by outcome, from result.Summary.
type tally struct {
	requests, errors, ok, status4xx, status5xx, failed int64
	durationS                                          float64
	// The load's window (result.Summary.WindowS) and the responses within
	// it, over which throughput counts; 0 in results without a window.
	windowS         float64
	windowResponses int64
}

func (c *tally) add(s *result.Summary) {
	c.requests += s.Requests
	c.errors += s.Errors.Total
	c.status4xx += s.Errors.Status4xx
	c.status5xx += s.Errors.Status5xx
	c.ok += s.Responses - s.Errors.Status4xx - s.Errors.Status5xx
	c.failed += s.Requests - s.Responses
	c.windowResponses += s.WindowResponses
}

// of counts the requests of one status class.
func (c *tally) of(class string) int64 {
	return map[string]int64{StatusOK: c.ok, Status4xx: c.status4xx, Status5xx: c.status5xx, StatusFailed: c.failed}[class]
}

// requestCounts measures error_rate, rate and requests.
func requestCounts(t *Threshold, r *result.Result) measurement {
	var c tally
	c.durationS, c.windowS = r.Summary.DurationS, r.Summary.WindowS
	if t.Filters.Step == "" && t.Filters.Scenario == "" {
		// The run's own summary, which holds the same sums as its steps.
		c.add(&r.Summary)
	} else {
		steps, why := selectSteps(t, r)
		if why != "" {
			return missing("%s", why)
		}
		// The steps' own window: a scenario with a load of its own has
		// its own, shorter than the run's when it ends first.
		runWindow := c.windowS
		c.windowS = 0
		for _, i := range steps {
			st := &r.Steps[i]
			c.add(&st.Summary)
			if c.durationS == 0 {
				c.durationS = st.Summary.DurationS
			}
			c.windowS = max(c.windowS, st.Summary.WindowS)
		}
		if c.windowS == 0 {
			c.windowS = runWindow
		}
	}
	counted, what := c.requests, "requests"
	if t.Metric == Rate {
		// Throughput: what was answered, of any status, as the summary
		// counts it; requests that got no response are not throughput.
		counted, what = c.requests-c.failed, "responses"
	}
	durationS, over := c.durationS, "s"
	if t.Metric == Rate && t.Filters.Status == "" && c.windowS > 0 {
		// As the summary's throughput: what finished within the load's
		// window, over the window, not the drain after it.
		counted, durationS, over = c.windowResponses, c.windowS, "s of load"
	} else if t.Metric == Rate && c.windowS > 0 && c.durationS > c.windowS {
		over = "s, the drain included"
	}
	if t.Filters.Status != "" {
		counted = c.of(t.Filters.Status)
		what = t.Filters.Status + " responses"
		if t.Filters.Status == StatusFailed {
			what = "failed requests"
		}
	}
	switch t.Metric {
	case ErrorRate:
		if c.requests == 0 {
			return missing("no requests were made")
		}
		errorCount := c.errors
		if t.Filters.Status != "" {
			errorCount = counted
		}
		return measurement{
			value: float64(errorCount) / float64(c.requests),
			note:  fmt.Sprintf(" (%d errors in %d requests)", errorCount, c.requests),
		}
	case Rate:
		if durationS <= 0 {
			return missing("the run measured no time, so there is no rate")
		}
		return measurement{
			value: float64(counted) / durationS,
			note:  fmt.Sprintf(" (%d %s in %s %s)", counted, what, significant(durationS, 4), over),
		}
	}
	return measurement{value: float64(counted)}
}

// checks measures the share of checks that passed in the selected steps.
// With no check at all it is Missing, not 100%: "checks > 99%" in a plan
// whose steps expect nothing is a mistake to point out.
func checks(t *Threshold, r *result.Result) measurement {
	var passed, failed int64
	if t.Filters.Step == "" && t.Filters.Scenario == "" {
		passed, failed = r.Summary.Checks.Passed, r.Summary.Checks.Failed
	} else {
		steps, why := selectSteps(t, r)
		if why != "" {
			return missing("%s", why)
		}
		for _, i := range steps {
			passed += r.Steps[i].Summary.Checks.Passed
			failed += r.Steps[i].Summary.Checks.Failed
		}
	}
	if passed+failed == 0 {
		return missing("no checks ran")
	}
	return measurement{
		value: float64(passed) / float64(passed+failed),
		note:  fmt.Sprintf(" (%d of %d passed)", passed, passed+failed),
	}
}

// subject names what t measures, for Detail: "p95 latency of step login".
func (t *Threshold) subject() string {
	info, _ := lookupMetric(string(t.Metric))
	s := info.describe
	if s == "" {
		s = string(t.Metric)
	}
	if t.Aggregate != NoAggregate {
		s = t.aggregateName() + " " + s
	}
	var scope []string
	if t.Filters.Scenario != "" {
		scope = append(scope, "scenario "+t.Filters.Scenario)
	}
	if t.Filters.Step != "" {
		scope = append(scope, "step "+t.Filters.Step)
	}
	if t.Filters.Status != "" {
		scope = append(scope, "status "+t.Filters.Status)
	}
	if len(scope) > 0 {
		s += " of " + strings.Join(scope, ", ")
	}
	return s
}
