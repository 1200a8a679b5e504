package engine

import (
	"math"
	"sort"
	"strings"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
)

// Result turns what a run measured into the result.json schema. The caller
// fills in the name, settings and validity.
func (o *Outcome) Result(p *Program) (*result.Result, error) {
	r := &result.Result{
		Schema:  result.SchemaResult,
		Started: o.Started,
		Ended:   o.Started.Add(o.Elapsed),
		Summary: metrics.RunSummary(o.Totals, o.Elapsed),
		Series:  o.Series,
	}
	r.Summary.Interrupted = o.Interrupted
	metrics.Window(&r.Summary, o.Window, sum(o.WindowResponses, nil))
	r.Summary.VUs, r.Summary.VUsPeak, r.Summary.VUsAvg = o.VUs, o.PeakVUs, o.averageVUs()
	if len(o.Totals.Reasons) > 0 {
		r.Aborts = o.Totals.Reasons
	}
	if o.Stopped != nil {
		r.Stopped = strings.TrimPrefix(o.Stopped.Error(), "stop: ")
	}
	protocols := stepProtocols(p)
	for i, info := range p.Steps {
		st := &o.Totals.Steps[i]
		h, err := metrics.StepHistograms(st)
		if err != nil {
			return nil, err
		}
		step := result.Step{
			Scenario:   info.Scenario,
			Name:       info.Name,
			Summary:    metrics.Summarize(o.Totals, []int{i}, o.Elapsed),
			Histograms: h,
		}
		if so := o.scenarioOf(p, info.Scenario); so != nil {
			metrics.Window(&step.Summary, so.Window, sum(so.WindowResponses, []int{i}))
		} else {
			metrics.Window(&step.Summary, o.Window, sum(o.WindowResponses, []int{i}))
		}
		step.Summary.Protocol = protocols[i]
		if f := st.FirstFailed; f != nil {
			// The response is not here: it is masked and explained by the
			// caller, who knows the plan's secrets (package failure).
			step.FailedCheck = &result.FailedCheck{Check: f.Check, Status: f.Status, Error: f.Error}
		}
		step.ChecksByName = namedChecks(info.Checks, st.ByCheck)
		r.Steps = append(r.Steps, step)
	}
	r.Summary.Protocol = runProtocol(protocols)
	if len(p.Scenarios) > 1 {
		byScenario := map[string][]int{}
		for i, info := range p.Steps {
			byScenario[info.Scenario] = append(byScenario[info.Scenario], i)
		}
		for i, sc := range p.Scenarios {
			if steps := byScenario[sc.Name]; len(steps) > 0 {
				st := result.ScenarioTotals{Scenario: sc.Name, Summary: metrics.Summarize(o.Totals, steps, o.Elapsed)}
				if i < len(o.Scenarios) {
					// A load of its own: its own window, arrivals and VUs.
					so := &o.Scenarios[i]
					metrics.Window(&st.Summary, so.Window, sum(so.WindowResponses, steps))
					st.Summary.Dropped, st.Summary.Late.Count, st.Summary.Unsent = so.Dropped, so.Late, so.Unsent
					st.Summary.VUs, st.Summary.VUsPeak = so.VUs, so.PeakVUs
					st.PerSecond = o.scenarioSeconds(steps)
				} else {
					metrics.Window(&st.Summary, o.Window, sum(o.WindowResponses, steps))
				}
				if i < len(o.Totals.Scenarios) {
					st.Summary.Iterations = o.Totals.Scenarios[i]
				}
				r.Scenarios = append(r.Scenarios, st)
			}
		}
	}
	var err error
	if r.Histograms.Connect, err = metrics.Encode(o.Totals.Connect); err != nil {
		return nil, err
	}
	if r.Histograms.TLS, err = metrics.Encode(o.Totals.TLS); err != nil {
		return nil, err
	}
	if r.Histograms.Lateness, err = metrics.Encode(o.Totals.Lateness); err != nil {
		return nil, err
	}
	return r, nil
}

// namedChecks are the counts of a step's checks by name: its own (names)
// all, then the engine's own that failed; nil when it has none of either.
func namedChecks(names []string, counts []metrics.Checks) []result.NamedCheck {
	var out []result.NamedCheck
	for i, name := range names {
		var c metrics.Checks
		if i < len(counts) {
			c = counts[i]
		}
		out = append(out, result.NamedCheck{Name: name, Passed: c.Passed, Failed: c.Failed})
	}
	for k, name := range OwnChecks {
		if i := len(names) + k; i < len(counts) && counts[i].Passed+counts[i].Failed > 0 {
			c := counts[i]
			out = append(out, result.NamedCheck{Name: name, Passed: c.Passed, Failed: c.Failed})
		}
	}
	return out
}

// scenarioOf is the outcome of the named scenario's own load; nil when
// the run had one load.
func (o *Outcome) scenarioOf(p *Program, name string) *ScenarioOutcome {
	for i, sc := range p.Scenarios {
		if sc.Name == name && i < len(o.Scenarios) {
			return &o.Scenarios[i]
		}
	}
	return nil
}

// sum adds the counts of the given steps (nil: of every step).
func sum(counts []int64, steps []int) int64 {
	var n int64
	if steps == nil {
		for _, c := range counts {
			n += c
		}
		return n
	}
	for _, i := range steps {
		if i < len(counts) {
			n += counts[i]
		}
	}
	return n
}

// averageVUs is the average of the VUs in an iteration at the end of each
// second of the series, after any warmup, weighted by the points' lengths.
func (o *Outcome) averageVUs() float64 {
	var total, length float64
	for _, p := range o.Series {
		if p.T-p.Len < o.warmup.Seconds() || p.Len <= 0 {
			continue
		}
		total += float64(p.Active) * p.Len
		length += p.Len
	}
	if length == 0 {
		return 0
	}
	return total / length
}

// stepProtocols names the protocol of each request step's target when it
// is HTTP/2 ("h2", "h2c"); HTTP/1.1 steps have none, as results always had.
func stepProtocols(p *Program) []string {
	out := make([]string, len(p.Steps))
	for _, sc := range p.Scenarios {
		var steps []*Step
		for _, s := range sc.Steps {
			if s.Parallel != nil {
				steps = append(steps, s.Parallel.Steps...)
			} else {
				steps = append(steps, s)
			}
		}
		for _, s := range steps {
			if r := s.Request; r != nil && r.Target != nil && r.Target.HTTP2Streams() > 0 && s.ID < len(out) {
				out[s.ID] = r.Target.Protocol()
			}
		}
	}
	return out
}

// runProtocol is the run's protocol: its steps', when they agree, else
// each one used ("h2, http/1.1"); none when every step was HTTP/1.1.
func runProtocol(steps []string) string {
	seen := map[string]bool{}
	for _, s := range steps {
		if s == "" {
			s = "http/1.1"
		}
		seen[s] = true
	}
	if len(seen) == 0 || len(seen) == 1 && seen["http/1.1"] {
		return ""
	}
	names := make([]string, 0, len(seen))
	for s := range seen {
		names = append(names, s)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// scenarioSeconds are the responses of the steps in each whole second of
// the run after its warmup (StepSeconds): the last, a run's short tail, is
// left out.
func (o *Outcome) scenarioSeconds(steps []int) []int64 {
	if len(o.StepSeconds) < 2 {
		return nil
	}
	skip := int(math.Ceil(o.warmup.Seconds()))
	var out []int64
	for s, sec := range o.StepSeconds[:len(o.StepSeconds)-1] {
		if s < skip {
			continue
		}
		var n int64
		for _, i := range steps {
			if i < len(sec) {
				n += sec[i]
			}
		}
		out = append(out, n)
	}
	return out
}
