package capacity

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
	"github.com/loadlab/loadlab/internal/threshold"
)

// Schema is the version of capacity.json and of `loadlab capacity --json`.
const Schema = "loadlab.capacity/v1"

// Document is capacity.json: the search's settings, every finished step,
// and the answer once there is one. Fields are only ever added within a
// schema version (see docs/reference/capacity-json.md).
type Document struct {
	Schema string   `json:"schema"`
	Name   string   `json:"name"`
	Plan   string   `json:"plan"`
	SLO    []string `json:"slo"`
	Search Settings `json:"search"`
	// Capacity and Limit are null until the search is done.
	Capacity *Figures `json:"capacity"`
	Limit    *Limit   `json:"limit"`
	// Ranking orders the plan's steps by how their p95 latency grew from
	// the answer to the step above it: the first is the bottleneck.
	Ranking []Rank `json:"ranking,omitempty"`
	// Bottleneck says the ranking and the server's use in words.
	Bottleneck string `json:"bottleneck,omitempty"`
	// Heaviest are the plan's steps by the time they took at the lightest
	// step that held, where latency is about service time: median latency
	// times responses, as a share of all steps'. Where every request waits
	// in one queue (a thread pool), latency grows for every step alike and
	// Ranking says little; the heaviest step is what fills the queue.
	Heaviest []Weight     `json:"heaviest,omitempty"`
	Note     string       `json:"note,omitempty"`
	Done     bool         `json:"done"`
	Steps    []StepRecord `json:"steps"`
}

// Settings are what the search was asked to do. A search resumes only with
// the same settings.
type Settings struct {
	By          string  `json:"by"` // "rate" or "vus"
	Start       float64 `json:"start_rate_per_s,omitempty"`
	StartVUs    int     `json:"start_vus,omitempty"` // by vus
	Factor      float64 `json:"factor"`
	Precision   float64 `json:"precision"`
	Confirm     int     `json:"confirm"`
	StepMaxS    float64 `json:"step_max_s"`
	MaxSteps    int     `json:"max_steps"`
	Fingerprint string  `json:"plan_fingerprint"`
}

// Figures is the answer.
type Figures struct {
	// RatePerS is the highest arrival rate at which every clause held; by
	// VUs, the throughput at the answer (the median of its steps).
	RatePerS float64 `json:"rate_per_s"`
	// VUs are the requests in flight at the answer, averaged over its
	// steps' seconds: the concurrency the rate needs (Little's law); by
	// VUs, the highest VU count at which every clause held.
	VUs float64 `json:"vus"`
	// CI bounds the capacity: Lo held (every confirm repeat), Hi broke; nil
	// when no rate above the answer broke. By VUs, they are VU counts.
	CI      *Interval `json:"ci"`
	AtLeast bool      `json:"at_least"`
	// Confirmed of Confirms repeats at the answer held.
	Confirmed int `json:"confirmed"`
	Confirms  int `json:"confirms"`
	// Throughput of the steps at the answer: median and 95% interval
	// (stats.Summarize; with fewer than 6 steps the lowest and highest).
	Throughput *Spread `json:"throughput,omitempty"`
}

// Interval is a range of rates, per second.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Spread is a median with its interval.
type Spread struct {
	N          int     `json:"n"`
	Median     float64 `json:"median"`
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"` // 0: Lo and Hi are the lowest and highest
}

// Limit is what broke first above the answer.
type Limit struct {
	Clause   string  `json:"clause"`
	Step     string  `json:"step,omitempty"` // the plan's step that binds, when one can be named
	RatePerS float64 `json:"rate_per_s,omitempty"`
	VUs      int     `json:"vus,omitempty"` // by VUs, instead of RatePerS
	Index    int     `json:"index"`         // of the step in Steps, from 1
	// The server under test at the answer and at this rate, when the plan
	// starts it: CPU in percent of the machine (of the CPUs it may use),
	// peak RSS in bytes.
	ServerCPUAtAnswer float64 `json:"server_machine_cpu_at_answer_pct,omitempty"`
	ServerCPU         float64 `json:"server_machine_cpu_pct,omitempty"`
	ServerRSSAtAnswer int64   `json:"server_rss_peak_at_answer_bytes,omitempty"`
	ServerRSS         int64   `json:"server_rss_peak_bytes,omitempty"`
	// Clauses are the SLO's clauses at the answer and at this rate, in the
	// SLO's order; Binding is the one nearest its limit at the answer.
	Clauses []Clause `json:"clauses,omitempty"`
	Binding string   `json:"binding_at_answer,omitempty"`
}

// Clause is one SLO clause measured at the answer and at the rate above.
type Clause struct {
	Clause string `json:"clause"`
	// Measured in the metric's unit (ms, a fraction, per second), with the
	// threshold's words: "p95 latency: 212 ms (1000 responses)".
	AtAnswer       float64 `json:"measured_at_answer"`
	Above          float64 `json:"measured_above"`
	DetailAtAnswer string  `json:"detail_at_answer"`
	DetailAbove    string  `json:"detail_above"`
	// Use is how near its limit the clause was at the answer: measured over
	// the limit (the limit over measured for > and >=); 1 is at the limit.
	Use   float64 `json:"use_at_answer"`
	Holds bool    `json:"holds_above"`
}

// Weight is a step's share of the time at the lightest load.
type Weight struct {
	Step     string  `json:"step"`
	P50Ms    float64 `json:"p50_ms"`
	Share    float64 `json:"share"` // of the medians times responses of every step
	RatePerS float64 `json:"rate_per_s,omitempty"`
	VUs      int     `json:"vus,omitempty"`
}

// heaviest weighs the steps of a result, heaviest first.
func heaviest(r *result.Result) []Weight {
	if r == nil {
		return nil
	}
	var out []Weight
	total := 0.0
	for _, s := range r.Steps {
		l := s.Summary.Latency
		if l.Count == 0 {
			continue
		}
		w := l.P50 * float64(l.Count)
		total += w
		out = append(out, Weight{Step: stepName(s), P50Ms: l.P50, Share: w})
	}
	if total <= 0 || len(out) < 2 {
		return nil
	}
	for i := range out {
		out[i].Share = math.Round(1000*out[i].Share/total) / 1000
	}
	slices.SortStableFunc(out, func(a, b Weight) int { return cmp.Compare(b.Share, a.Share) })
	return out
}

// CPUBound is the share of its CPUs above which the server is said to be
// CPU-bound.
const CPUBound = 0.90

// Rank is one of the plan's steps, with how its p95 grew.
type Rank struct {
	Step     string  `json:"step"`
	P95AtMs  float64 `json:"p95_at_answer_ms"`
	P95Above float64 `json:"p95_above_ms"`
	Growth   float64 `json:"growth"` // P95Above / P95AtMs
}

// StepRecord is one finished step.
type StepRecord struct {
	Index int `json:"index"` // from 1
	Outcome
	Throughput   float64 `json:"throughput_per_s"`
	P50          float64 `json:"p50_ms"`
	P95          float64 `json:"p95_ms"`
	P99          float64 `json:"p99_ms"`
	ErrorRate    float64 `json:"error_rate"`
	DurationS    float64 `json:"duration_s"`
	InFlight     float64 `json:"in_flight"` // average requests in flight
	Series       string  `json:"series"`    // Judge's word on the per-second series
	ServerCPUPct float64 `json:"server_cpu_avg_pct,omitempty"`
	Result       string  `json:"result,omitempty"` // its result.json, relative to capacity.json
}

// Record describes a finished step; res may be nil (the server did not
// start).
func Record(index int, o Outcome, res *result.Result, r StepReport, path string) StepRecord {
	rec := StepRecord{Index: index, Outcome: o, Series: r.Judgement.State.String(), Result: path}
	// A reason may start with its state's word ("steady: 40/s..."): said once.
	if why := r.Judgement.Reason; why != "" {
		rec.Series += ": " + strings.TrimPrefix(why, rec.Series+": ")
	}
	if res == nil {
		return rec
	}
	s := res.Summary
	rec.Throughput, rec.P50, rec.P95, rec.P99 = s.ThroughputRPS, s.Latency.P50, s.Latency.P95, s.Latency.P99
	rec.ErrorRate, rec.DurationS = s.ErrorRate, s.DurationS
	rec.InFlight = inFlight(res.Series)
	if res.Server != nil {
		rec.ServerCPUPct = res.Server.CPUAvg
	}
	return rec
}

func inFlight(points []result.Point) float64 {
	sum, n := 0.0, 0
	for i, p := range points {
		if i > 0 && p.Len >= 0.99 { // the first second opens connections
			sum += float64(p.Active)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Finish fills in the answer: a from Next, results the results of the
// steps by index (from 0; nil where not kept), slo the clauses.
func (d *Document) Finish(a Answer, results []*result.Result, slo []*threshold.Threshold) {
	d.Done, d.Note = true, a.Note
	f := &Figures{RatePerS: a.Rate, AtLeast: a.AtLeast, Confirmed: a.Confirmed, Confirms: a.Confirms}
	byVUs := d.Search.By == "vus"
	if byVUs {
		f.RatePerS, f.VUs = 0, a.Rate
	}
	if a.Above > 0 && a.Rate > 0 {
		f.CI = &Interval{Lo: a.Rate, Hi: a.Above}
	}
	var tput []float64
	var inflight float64
	for _, i := range a.AtAnswer {
		tput = append(tput, d.Steps[i].Throughput)
		inflight += d.Steps[i].InFlight
	}
	if len(tput) > 0 {
		if byVUs {
			f.RatePerS = math.Round(10*median(tput)) / 10
		} else {
			f.VUs = math.Round(10*inflight/float64(len(tput))) / 10
		}
		sum := stats.Summarize(tput, stats.DefaultConfidence)
		sp := &Spread{N: sum.N, Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Confidence: sum.Confidence}
		if !sum.Bounded {
			sp.Lo, sp.Hi, sp.Confidence = slices.Min(tput), slices.Max(tput), 0
		}
		f.Throughput = sp
	}
	d.Capacity = f
	if a.Limit < 0 || a.Limit >= len(d.Steps) {
		return
	}
	above := d.Steps[a.Limit]
	d.Limit = &Limit{Clause: above.Clause, RatePerS: above.Rate, VUs: above.VUs, Index: above.Index}
	for _, t := range slo {
		if t.Filters.Step != "" && strings.HasPrefix(above.Clause, t.Text) {
			d.Limit.Step = t.Filters.Step
		}
	}
	var at *result.Result
	if n := len(a.AtAnswer); n > 0 && a.AtAnswer[0] < len(results) {
		at = results[a.AtAnswer[0]]
	}
	var hi *result.Result
	if a.Limit < len(results) {
		hi = results[a.Limit]
	}
	d.Ranking = rank(at, hi)
	if d.Limit.Step == "" && len(d.Ranking) > 0 {
		d.Limit.Step = d.Ranking[0].Step
	}
	if at != nil && at.Server != nil {
		d.Limit.ServerCPUAtAnswer, d.Limit.ServerRSSAtAnswer = at.Server.MachineAvg, at.Server.RSSPeak
	}
	if hi != nil && hi.Server != nil {
		d.Limit.ServerCPU, d.Limit.ServerRSS = hi.Server.MachineAvg, hi.Server.RSSPeak
	}
	d.Limit.Clauses, d.Limit.Binding = clauses(slo, at, hi)
	d.Bottleneck = bottleneck(d.Ranking, d.Limit, d.Unit(a.Rate), hi != nil && hi.Server != nil)
	// The lightest step that held, and what weighed most there.
	light := -1
	for i, st := range d.Steps {
		if st.Holds && i < len(results) && results[i] != nil && (light < 0 || st.level() < d.Steps[light].level()) {
			light = i
		}
	}
	if light >= 0 {
		d.Heaviest = heaviest(results[light])
		for i := range d.Heaviest {
			d.Heaviest[i].RatePerS, d.Heaviest[i].VUs = d.Steps[light].Rate, d.Steps[light].VUs
		}
		if h := d.Heaviest; len(h) > 0 && d.Bottleneck != "" {
			d.Bottleneck += fmt.Sprintf("; heaviest at %s: %s", d.Steps[light].Level(), weights(h))
		}
	}
}

// weights says the heaviest steps that make up at least 2/3 of the time:
// "sign up (p50 137 ms, 48% of the time), login (130 ms, 45%)".
func weights(h []Weight) string {
	var parts []string
	sum := 0.0
	for i, w := range h {
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s (p50 %.4g ms, %.0f%% of the time)", w.Step, w.P50Ms, 100*w.Share))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%.4g ms, %.0f%%)", w.Step, w.P50Ms, 100*w.Share))
		}
		if sum += w.Share; sum >= 2.0/3 {
			break
		}
	}
	return strings.Join(parts, ", ")
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Headline says the answer: "193/s (held 3 of 3 confirm repeats; 196.9/s
// broke)", "at least 400/s", "none found", or "no answer yet: 4 steps done".
func (d *Document) Headline() string {
	c := d.Capacity
	switch {
	case c == nil:
		return fmt.Sprintf("no answer yet: %d steps done", len(d.Steps))
	case d.answer() == 0:
		return "none found"
	case c.AtLeast:
		return "at least " + d.Unit(d.answer())
	}
	h := d.Unit(d.answer())
	if c.CI != nil {
		h += fmt.Sprintf(" (%s; %s broke)", c.confirmWords(), d.Unit(c.CI.Hi))
	}
	return h
}

// confirmWords says how the confirm repeats went: "held 3 of 3 confirm
// repeats", or "no confirm repeats" (--confirm 0).
func (c *Figures) confirmWords() string {
	if c.Confirms == 0 {
		return "no confirm repeats"
	}
	return fmt.Sprintf("held %d of %d confirm repeats", c.Confirmed, c.Confirms)
}

// Answer is the capacity found: its rate, or by VUs its VU count; 0 for
// none (or none yet).
func (d *Document) Answer() float64 { return d.answer() }

// answer is the capacity found: its rate, or by VUs its VU count; 0 for
// none (or none yet).
func (d *Document) answer() float64 {
	switch {
	case d.Capacity == nil:
		return 0
	case d.Search.By == "vus":
		return d.Capacity.VUs
	}
	return d.Capacity.RatePerS
}

// Unit says a level of the search: "412.5/s", or by VUs "40 VUs".
func (d *Document) Unit(x float64) string {
	return Options{VUs: d.Search.By == "vus"}.Unit(x)
}

// Level says the step's rate, or its VUs.
func (o Outcome) Level() string {
	return Options{VUs: o.VUs > 0}.Unit(o.level())
}

// Level says the rate that broke, or its VUs.
func (l *Limit) Level() string {
	if l.VUs > 0 {
		return Options{VUs: true}.Unit(float64(l.VUs))
	}
	return Options{}.Unit(l.RatePerS)
}

// clauses measures every SLO clause in the results at the answer and
// above, and names the one nearest its limit at the answer.
func clauses(slo []*threshold.Threshold, at, above *result.Result) ([]Clause, string) {
	if at == nil || above == nil {
		return nil, ""
	}
	find := func(r *result.Result, text string) (result.ThresholdResult, bool) {
		for _, t := range r.Thresholds {
			if t.Text == text {
				return t, true
			}
		}
		return result.ThresholdResult{}, false
	}
	var out []Clause
	binding, most := "", math.Inf(-1)
	for _, t := range slo {
		a, ok1 := find(at, t.Text)
		b, ok2 := find(above, t.Text)
		if !ok1 || !ok2 {
			continue
		}
		c := Clause{Clause: t.Text, AtAnswer: a.Measured, Above: b.Measured, DetailAtAnswer: a.Detail, DetailAbove: b.Detail, Holds: b.Pass}
		switch {
		case (t.Op == threshold.Less || t.Op == threshold.LessOrEqual) && t.Value > 0:
			c.Use = a.Measured / t.Value
		case (t.Op == threshold.Greater || t.Op == threshold.GreaterOrEqual) && a.Measured > 0:
			c.Use = t.Value / a.Measured
		}
		c.Use = math.Round(1000*c.Use) / 1000
		if c.Use > most {
			binding, most = c.Clause, c.Use
		}
		out = append(out, c)
	}
	return out, binding
}

// measure is the value in a threshold's detail: "212 ms" of "p95 latency:
// 212 ms (1000 responses)".
func measure(detail string) string {
	_, v, ok := strings.Cut(detail, ": ")
	if !ok {
		return detail
	}
	v, _, _ = strings.Cut(v, " (")
	return v
}

// ClauseWords says the SLO's clauses from the answer to the rate above:
// "p95(latency) < 300ms: 212 ms → 812 ms (71% of its limit at the answer,
// the nearest; breaks above)".
func (l *Limit) ClauseWords() []string {
	var out []string
	for _, c := range l.Clauses {
		w := fmt.Sprintf("%s: %s → %s (%.0f%% of its limit at the answer", c.Clause, measure(c.DetailAtAnswer), measure(c.DetailAbove), 100*c.Use)
		if c.Clause == l.Binding && len(l.Clauses) > 1 {
			w += ", the nearest"
		}
		if c.Holds {
			w += "; holds above)"
		} else {
			w += "; breaks above)"
		}
		out = append(out, w)
	}
	return out
}

// bottleneck says in words which step's latency grew fastest from the
// answer to the rate that broke, beside the server's CPU and memory:
// "login is CPU-bound: its p95 rose 9× (12 → 108 ms) from 400/s to
// 412.5/s while the others rose at most 1.3×; server CPU 98% of its CPUs
// (60% at the answer), RSS peak 120 MiB (118 MiB at the answer)".
func bottleneck(ranking []Rank, l *Limit, answer string, server bool) string {
	if len(ranking) == 0 {
		return ""
	}
	top := ranking[0]
	var b strings.Builder
	what := "is the bottleneck"
	switch {
	case server && l.ServerCPU >= 100*CPUBound:
		what = "is CPU-bound"
	case len(ranking) == 1:
		what = "(the only step)"
	}
	fmt.Fprintf(&b, "%s %s: its p95 rose %.3g× (%.4g → %.4g ms) from %s to %s", top.Step, what, top.Growth, top.P95AtMs, top.P95Above, answer, l.Level())
	if len(ranking) > 1 {
		fmt.Fprintf(&b, " while the others rose at most %.3g×", ranking[1].Growth)
	}
	if server {
		fmt.Fprintf(&b, "; server CPU %.0f%% of its CPUs (%.0f%% at the answer)", l.ServerCPU, l.ServerCPUAtAnswer)
		if l.ServerCPU < 100*CPUBound {
			fmt.Fprintf(&b, ", under the %.0f%% that is CPU-bound", 100*CPUBound)
		}
		fmt.Fprintf(&b, ", RSS peak %s (%s at the answer)", quantity.FormatBytes(l.ServerRSS), quantity.FormatBytes(l.ServerRSSAtAnswer))
	}
	return b.String()
}

// rank orders the steps of two results by how their p95 latency grew.
func rank(at, above *result.Result) []Rank {
	if at == nil || above == nil {
		return nil
	}
	p95 := map[string]float64{}
	for _, s := range at.Steps {
		p95[stepName(s)] = s.Summary.Latency.P95
	}
	var out []Rank
	for _, s := range above.Steps {
		lo, ok := p95[stepName(s)]
		if !ok || lo <= 0 || s.Summary.Latency.Count == 0 {
			continue
		}
		out = append(out, Rank{Step: stepName(s), P95AtMs: lo, P95Above: s.Summary.Latency.P95, Growth: math.Round(100*s.Summary.Latency.P95/lo) / 100})
	}
	slices.SortStableFunc(out, func(a, b Rank) int { return cmp.Compare(b.Growth, a.Growth) })
	return out
}

// StepName is how the search names a plan's step: "scenario/step", or
// the step alone in the default scenario.
func StepName(s result.Step) string { return stepName(s) }

func stepName(s result.Step) string {
	if s.Scenario != "" && s.Scenario != "default" {
		return s.Scenario + "/" + s.Name
	}
	return s.Name
}

// Plan is the search's cost, said before it starts: "at most 22 steps of
// 6 to 30 s: at most 11m0s".
func (s Settings) Plan(minStep float64) string {
	from := Options{}.Unit(s.Start)
	if s.By == "vus" {
		from = Options{VUs: true}.Unit(float64(s.StartVUs))
	}
	return fmt.Sprintf("from %s, ×%g until a step breaks, then bisect to %g%%, then %d confirm repeats: at most %d steps of %g to %g s (at most %s; most steps end once steady)",
		from, s.Factor, 100*s.Precision, s.Confirm, s.MaxSteps, minStep, s.StepMaxS, fmtDuration(float64(s.MaxSteps)*s.StepMaxS))
}

func fmtDuration(sec float64) string {
	m := int(sec) / 60
	if m == 0 {
		return fmt.Sprintf("%.0f s", sec)
	}
	return fmt.Sprintf("%d min %02d s", m, int(sec)%60)
}

// StepLine is one step as the terminal shows it.
func StepLine(r StepRecord) string {
	verdict := "holds"
	if !r.Holds {
		verdict = "breaks: " + r.Clause
	}
	if r.Stop != "" {
		verdict += " [" + string(r.Stop) + "]"
	}
	return fmt.Sprintf("%3d  %-7s  %10s  %8.4g/s  %8.4g ms  %5.1fs  %s", r.Index, r.Phase, r.Level(), r.Throughput, r.P95, r.DurationS, verdict)
}

// WriteText writes the search as the terminal shows it at the end.
func (d *Document) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "capacity %s · SLO %s\n\n", d.Name, strings.Join(d.SLO, ", "))
	level := "rate"
	if d.Search.By == "vus" {
		level = "VUs"
	}
	fmt.Fprintf(tw, "step\tphase\t%s\tthroughput\tp95\ttime\tverdict\n", level)
	for _, r := range d.Steps {
		verdict := "holds"
		if !r.Holds {
			verdict = "breaks: " + r.Clause
		}
		if r.Stop != "" {
			verdict += " [" + string(r.Stop) + "]"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.4g/s\t%.4g ms\t%.1f s\t%s\n", r.Index, r.Phase, r.Level(), r.Throughput, r.P95, r.DurationS, verdict)
	}
	tw.Flush()
	fmt.Fprintln(w)
	c := d.Capacity
	if c == nil {
		fmt.Fprintf(w, "%s\n", d.Headline())
	} else {
		fmt.Fprintf(w, "capacity: %s\n", d.Headline())
	}
	if c != nil && c.Throughput != nil && d.answer() > 0 {
		how := fmt.Sprintf("%.0f%% interval", 100*c.Throughput.Confidence)
		if c.Throughput.Confidence == 0 {
			how = "lowest–highest"
		}
		inflight := fmt.Sprintf("; %.1f requests in flight", c.VUs)
		if d.Search.By == "vus" {
			inflight = ""
		}
		fmt.Fprintf(w, "  throughput at the answer: %.4g/s (%s %.4g–%.4g, %d steps)%s\n", c.Throughput.Median, how, c.Throughput.Lo, c.Throughput.Hi, c.Throughput.N, inflight)
	}
	if l := d.Limit; l != nil {
		fmt.Fprintf(w, "  limit: %s at %s (step %d)\n", l.Clause, l.Level(), l.Index)
		for _, c := range l.ClauseWords() {
			fmt.Fprintf(w, "  clause %s\n", c)
		}
	}
	if d.Bottleneck != "" {
		fmt.Fprintf(w, "  bottleneck: %s\n", d.Bottleneck)
	}
	if d.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", d.Note)
	}
	return nil
}
