// Package merge puts the results of a plan's execution segments (`loadlab
// run --segment K/N` on N machines) together into one result, as one
// machine running the whole plan would have measured it: histograms merged
// losslessly (HdrHistogram merges are exact, so every percentile is the
// one of all the requests together), counters summed, the per-second
// series aligned on wall-clock seconds, thresholds evaluated again on the
// merged figures, and each part's validity warnings kept and named.
//
// Merging is associative: merging results that are themselves merges of
// parts gives the result of merging all the parts.
package merge

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/threshold"
)

// Part is one result to merge and the name it is known by (its directory).
type Part struct {
	Name   string
	Result *result.Result
}

// Options tune a merge.
type Options struct {
	// Partial lets the parts leave segments out: a merge of some of them,
	// to be merged with the others later. Its result warns that it is not
	// the whole plan.
	Partial bool
}

// Results merges parts, which must be segments of one plan's run that do
// not overlap and (unless opts.Partial) together are every segment of it.
// The error says which part is wrong and why.
func Results(parts []Part, opts Options) (*result.Result, error) {
	if err := check(parts, opts.Partial); err != nil {
		return nil, err
	}
	first := parts[0].Result
	start := first.Started
	for _, p := range parts[1:] {
		if p.Result.Started.Before(start) {
			start = p.Result.Started
		}
	}
	out := &result.Result{
		Schema:      result.SchemaResult,
		Version:     first.Version,
		Name:        first.Name,
		Started:     start,
		Settings:    first.Settings,
		Plan:        first.Plan,
		PlanInputs:  first.PlanInputs,
		Fingerprint: first.Fingerprint,
	}
	out.Settings.Extra = maps.Clone(first.Settings.Extra)
	out.Settings.Workers = 0
	var end time.Time
	var stopped []string
	for _, p := range parts {
		r := p.Result
		out.Settings.Workers += r.Settings.Workers
		if e := endOf(r); e.After(end) {
			end = e
		}
		for k, n := range r.Aborts {
			if out.Aborts == nil {
				out.Aborts = map[string]int64{}
			}
			out.Aborts[k] += n
		}
		if r.Stopped != "" && !slices.Contains(stopped, r.Stopped) {
			stopped = append(stopped, r.Stopped)
		}
	}
	out.Ended = end
	out.Stopped = strings.Join(stopped, "; ")

	var err error
	if out.Steps, err = mergeSteps(parts, start); err != nil {
		return nil, err
	}
	if out.Histograms, err = mergeRunHistograms(parts); err != nil {
		return nil, err
	}
	if out.Summary, err = mergeRunSummary(parts, out, start); err != nil {
		return nil, err
	}
	if out.Scenarios, err = mergeScenarios(parts, out, start); err != nil {
		return nil, err
	}
	out.Series = mergeSeries(parts, start)
	out.Summary.VUsAvg = averageVUs(out.Series)
	out.Part = mergePart(parts)
	out.Validity = validity(out.Part)
	if len(out.Part.Segments) < out.Part.N {
		out.Validity = append(out.Validity, result.Warning{Code: "partial_merge", Message: fmt.Sprintf("this merge holds %s: not the whole plan's load; merge it with the other segments' parts", segmentsName(out.Part.Segments, out.Part.N))})
	}
	out.Thresholds, err = thresholds(first.Thresholds, out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check refuses parts that do not make one whole run.
func check(parts []Part, partial bool) error {
	if len(parts) == 0 {
		return errors.New("no parts to merge")
	}
	first := parts[0]
	for _, p := range parts {
		r := p.Result
		if r.Settings.Extra["point"] != "" {
			return fmt.Errorf("%s is a run of an experiment (point %s): merge takes the parts of one plan's run made with --segment", p.Name, r.Settings.Extra["point"])
		}
		if r.Part == nil {
			return fmt.Errorf("%s is not a segment's result: run each part with loadlab run PLAN --segment K/N", p.Name)
		}
		if r.Fingerprint == nil || first.Result.Fingerprint == nil || r.Fingerprint.Hash != first.Result.Fingerprint.Hash {
			return fmt.Errorf("%s and %s are of different plans (or of one plan with other inputs): their fingerprints differ", first.Name, p.Name)
		}
		if r.Part.N != first.Result.Part.N {
			return fmt.Errorf("%s holds segments of %d and %s of %d: the parts must all split the plan alike", first.Name, first.Result.Part.N, p.Name, r.Part.N)
		}
		if len(r.Steps) != len(first.Result.Steps) {
			return fmt.Errorf("%s has %d steps and %s %d", first.Name, len(first.Result.Steps), p.Name, len(r.Steps))
		}
		for i := range r.Steps {
			if r.Steps[i].Scenario != first.Result.Steps[i].Scenario || r.Steps[i].Name != first.Result.Steps[i].Name {
				return fmt.Errorf("%s and %s have different steps", first.Name, p.Name)
			}
		}
	}
	n := first.Result.Part.N
	owner := map[int]string{}
	for _, p := range parts {
		for _, k := range p.Result.Part.Segments {
			if k < 1 || k > n {
				return fmt.Errorf("%s holds segment %d of %d, which cannot be", p.Name, k, n)
			}
			if o, ok := owner[k]; ok {
				return fmt.Errorf("segment %d of %d is in both %s and %s: the parts overlap", k, n, o, p.Name)
			}
			owner[k] = p.Name
		}
	}
	var missing []string
	for k := 1; k <= n; k++ {
		if _, ok := owner[k]; !ok {
			missing = append(missing, fmt.Sprint(k))
		}
	}
	if len(missing) > 0 && !partial {
		return fmt.Errorf("segments %s of %d are missing: give every part of the run (or --partial, to merge these with the others later)", strings.Join(missing, ", "), n)
	}
	// A part whose run was interrupted (a signal: its pod deleted or
	// evicted, Ctrl-C) holds only some of its segment's load: merged as a
	// whole one it would pass a partial result off as the plan's.
	for _, p := range parts {
		if r := p.Result; r.Summary.Interrupted && !partial {
			return fmt.Errorf("%s is missing: %s was interrupted after %.1fs, before the end of its load, and holds only part of it; run that segment again, or give --partial to merge what there is", segmentsName(r.Part.Segments, n), p.Name, r.Summary.DurationS)
		}
	}
	return nil
}

// endOf is when the part's measurement ended: its start plus its elapsed
// time, to the nanosecond.
func endOf(r *result.Result) time.Time {
	return r.Started.Add(seconds(r.Summary.DurationS))
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// hist merges the encoded histograms.
func hist(encoded []string) (*hdr.Histogram, error) {
	out := metrics.NewHistogram()
	for _, e := range encoded {
		h, err := metrics.Decode(e)
		if err != nil {
			return nil, err
		}
		out.Merge(h)
	}
	return out, nil
}

// encode merges and re-encodes.
func encode(encoded []string) (string, error) {
	h, err := hist(encoded)
	if err != nil {
		return "", err
	}
	return metrics.Encode(h)
}

// latencyClasses are the classes that count in latency and service time
// (metrics.Summarize): every response, and every timeout.
var latencyClasses = []string{"ok", "4xx", "5xx", "timeout"}

func mergeSteps(parts []Part, start time.Time) ([]result.Step, error) {
	steps := slices.Clone(parts[0].Result.Steps)
	for i := range steps {
		st := &steps[i]
		var sums []*result.Summary
		lat, svc := map[string][]string{}, map[string][]string{}
		var ttfb []string
		st.FailedCheck = nil
		st.ChecksByName = nil
		for _, p := range parts {
			ps := &p.Result.Steps[i]
			sums = append(sums, &ps.Summary)
			st.ChecksByName = addChecks(st.ChecksByName, ps.ChecksByName)
			for c, e := range ps.Histograms.Latency {
				lat[c] = append(lat[c], e)
			}
			for c, e := range ps.Histograms.Service {
				svc[c] = append(svc[c], e)
			}
			ttfb = append(ttfb, ps.Histograms.TTFB)
			if st.FailedCheck == nil && ps.FailedCheck != nil {
				fc := *ps.FailedCheck
				fc.File = "" // in the part's own directory
				st.FailedCheck = &fc
			}
		}
		var h result.StepHistograms
		var err error
		for c, es := range lat {
			if h.Latency == nil {
				h.Latency, h.Service = map[string]string{}, map[string]string{}
			}
			if h.Latency[c], err = encode(es); err != nil {
				return nil, err
			}
			if h.Service[c], err = encode(svc[c]); err != nil {
				return nil, err
			}
		}
		if h.TTFB, err = encode(ttfb); err != nil {
			return nil, err
		}
		st.Histograms = h
		st.Summary = sumSummaries(sums, parts, start)
		if err := percentiles(&st.Summary, []result.StepHistograms{h}); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// addChecks adds a part's counts of a step's checks by name to sum. Every
// part lists the step's own checks, in the plan's order; the engine's own
// (result.EngineChecks) only when they failed there, so they are kept after
// the others in their fixed order: any grouping of parts merges alike.
func addChecks(sum, part []result.NamedCheck) []result.NamedCheck {
	for j, c := range part {
		i := j // the same check, when the lists agree (two checks may share a name)
		if i >= len(sum) || sum[i].Name != c.Name {
			i = slices.IndexFunc(sum, func(s result.NamedCheck) bool { return s.Name == c.Name })
		}
		if i < 0 {
			sum = append(sum, result.NamedCheck{Name: c.Name})
			i = len(sum) - 1
		}
		sum[i].Passed += c.Passed
		sum[i].Failed += c.Failed
	}
	engine := func(name string) int { return slices.Index(result.EngineChecks[:], name) }
	slices.SortStableFunc(sum, func(a, b result.NamedCheck) int { return engine(a.Name) - engine(b.Name) })
	return sum
}

// percentiles sets the latency, service time and TTFB figures of s from
// the histograms of its steps.
func percentiles(s *result.Summary, hs []result.StepHistograms) error {
	var lat, svc, ttfb []string
	for _, h := range hs {
		for _, c := range latencyClasses {
			lat = append(lat, h.Latency[c])
			svc = append(svc, h.Service[c])
		}
		ttfb = append(ttfb, h.TTFB)
	}
	for _, x := range []struct {
		enc []string
		to  *result.Percentiles
	}{{lat, &s.Latency}, {svc, &s.Service}, {ttfb, &s.TTFB}} {
		h, err := hist(x.enc)
		if err != nil {
			return err
		}
		*x.to = metrics.Percentiles(h)
	}
	return nil
}

// sumSummaries adds the counts of summaries, one a part, and sets their
// durations on the merged timeline from start: the elapsed time and window
// until the last part's end, throughput over the merged window. The
// distributions (percentiles, connect, TLS) are the caller's to set.
func sumSummaries(sums []*result.Summary, parts []Part, start time.Time) result.Summary {
	z := result.Summary{Schema: sums[0].Schema, Protocol: sums[0].Protocol, Resolution: sums[0].Resolution}
	var examples map[string]string
	// The ends on one timeline, in whole nanoseconds, so that a merge of
	// merges ends where a merge of all does.
	var elapsed, window time.Duration
	for i, s := range sums {
		off := parts[i].Result.Started.Sub(start)
		z.Requests += s.Requests
		z.Responses += s.Responses
		e := &z.Errors
		e.Total += s.Errors.Total
		e.Connect += s.Errors.Connect
		e.Timeout += s.Errors.Timeout
		e.Reset += s.Errors.Reset
		e.Protocol += s.Errors.Protocol
		e.TLS += s.Errors.TLS
		e.Stream += s.Errors.Stream
		e.Goaway += s.Errors.Goaway
		e.Status4xx += s.Errors.Status4xx
		e.Status5xx += s.Errors.Status5xx
		for k, v := range s.Errors.Examples {
			if examples == nil {
				examples = map[string]string{}
			}
			if _, ok := examples[k]; !ok {
				examples[k] = v
			}
		}
		z.TLSResumed += s.TLSResumed
		z.Late.Count += s.Late.Count
		z.Late.Waited += s.Late.Waited
		z.Unsent += s.Unsent
		z.Abandoned += s.Abandoned
		z.Checks.Passed += s.Checks.Passed
		z.Checks.Failed += s.Checks.Failed
		z.Iterations += s.Iterations
		z.Aborted += s.Aborted
		z.Dropped += s.Dropped
		z.Interrupted = z.Interrupted || s.Interrupted
		z.BytesReceived += s.BytesReceived
		z.BytesDecoded += s.BytesDecoded
		z.Decoded += s.Decoded
		z.WindowResponses += s.WindowResponses
		z.VUs += s.VUs
		z.VUsPeak += s.VUsPeak
		elapsed = max(elapsed, off+seconds(s.DurationS))
		if s.WindowS > 0 {
			window = max(window, off+seconds(s.WindowS))
		}
	}
	z.Errors.Examples = examples
	z.DurationS = elapsed.Seconds()
	if z.Requests > 0 {
		z.ErrorRate = float64(z.Errors.Total) / float64(z.Requests)
	}
	if window > 0 {
		window = min(window, elapsed)
		z.WindowS = window.Seconds()
		if d := elapsed - window; d > 0 {
			z.DrainS = d.Seconds()
		}
		z.ThroughputRPS = float64(z.WindowResponses) / z.WindowS
	} else if elapsed > 0 {
		z.ThroughputRPS = float64(z.Responses) / z.DurationS
	}
	return z
}

func mergeRunHistograms(parts []Part) (result.RunHistograms, error) {
	var conn, tls, late []string
	for _, p := range parts {
		h := p.Result.Histograms
		conn, tls, late = append(conn, h.Connect), append(tls, h.TLS), append(late, h.Lateness)
	}
	var out result.RunHistograms
	var err error
	if out.Connect, err = encode(conn); err != nil {
		return out, err
	}
	if out.TLS, err = encode(tls); err != nil {
		return out, err
	}
	out.Lateness, err = encode(late)
	return out, err
}

func mergeRunSummary(parts []Part, out *result.Result, start time.Time) (result.Summary, error) {
	var sums []*result.Summary
	for _, p := range parts {
		sums = append(sums, &p.Result.Summary)
	}
	s := sumSummaries(sums, parts, start)
	var hs []result.StepHistograms
	for _, st := range out.Steps {
		hs = append(hs, st.Histograms)
	}
	if err := percentiles(&s, hs); err != nil {
		return s, err
	}
	for _, x := range []struct {
		enc string
		to  **result.Percentiles
	}{{out.Histograms.Connect, &s.Connect}, {out.Histograms.TLS, &s.TLS}} {
		h, err := metrics.Decode(x.enc)
		if err != nil {
			return s, err
		}
		if h.TotalCount() > 0 {
			p := metrics.Percentiles(h)
			*x.to = &p
		}
	}
	late, err := metrics.Decode(out.Histograms.Lateness)
	if err != nil {
		return s, err
	}
	if late.TotalCount() > 0 {
		s.Late.P50 = float64(late.ValueAtQuantile(50)) / 1000
		s.Late.P99 = float64(late.ValueAtQuantile(99)) / 1000
		s.Late.Max = float64(late.Max()) / 1000
	}
	return s, nil
}

// sumSeconds adds up the parts' responses of scenario i second by second,
// over the seconds every part has: nil unless every part has them and the
// parts started within half a second of each other (their seconds count
// from each one's start, so only then are they the same seconds).
func sumSeconds(parts []Part, i int) []int64 {
	n := -1
	first := parts[0].Result.Started
	for _, p := range parts {
		ps := p.Result.Scenarios[i].PerSecond
		d := p.Result.Started.Sub(first)
		if len(ps) == 0 || d > 500*time.Millisecond || d < -500*time.Millisecond {
			return nil
		}
		if n < 0 || len(ps) < n {
			n = len(ps)
		}
	}
	out := make([]int64, n)
	for _, p := range parts {
		for s, v := range p.Result.Scenarios[i].PerSecond[:n] {
			out[s] += v
		}
	}
	return out
}

func mergeScenarios(parts []Part, out *result.Result, start time.Time) ([]result.ScenarioTotals, error) {
	var res []result.ScenarioTotals
	for i, sc := range parts[0].Result.Scenarios {
		var sums []*result.Summary
		for _, p := range parts {
			if i >= len(p.Result.Scenarios) || p.Result.Scenarios[i].Scenario != sc.Scenario {
				return nil, fmt.Errorf("%s and %s have different scenarios", parts[0].Name, p.Name)
			}
			sums = append(sums, &p.Result.Scenarios[i].Summary)
		}
		st := result.ScenarioTotals{Scenario: sc.Scenario, Load: sc.Load, Summary: sumSummaries(sums, parts, start), PerSecond: sumSeconds(parts, i)}
		var hs []result.StepHistograms
		for _, s := range out.Steps {
			if s.Scenario == sc.Scenario {
				hs = append(hs, s.Histograms)
			}
		}
		if err := percentiles(&st.Summary, hs); err != nil {
			return nil, err
		}
		res = append(res, st)
	}
	return res, nil
}

// mergeSeries aligns the parts' series on wall-clock seconds: a point
// belongs to the second its end falls on (to the nearest), and counts are
// summed. A segment keeps each second's latency histogram (Point.Hist), so
// a second's percentiles are those of the merged histograms, exactly; when
// a point of that second has none (a part written before histograms were
// kept), each percentile is the largest of the parts' (an upper bound of
// the merged one) and the merged point keeps no histogram.
func mergeSeries(parts []Part, start time.Time) []result.Point {
	base := float64(start.UnixNano()) / 1e9
	byKey := map[int64]*result.Point{}
	hists := map[int64][]string{}
	bounded := map[int64]bool{}
	for _, p := range parts {
		at := float64(p.Result.Started.UnixNano()) / 1e9
		for _, pt := range p.Result.Series {
			key := int64(math.Round(at + pt.T))
			m := byKey[key]
			if m == nil {
				m = &result.Point{T: float64(key) - base}
				byKey[key] = m
			}
			m.Len = max(m.Len, pt.Len)
			m.Requests += pt.Requests
			m.Responses += pt.Responses
			m.Errors += pt.Errors
			m.P50, m.P90, m.P95, m.P99, m.Max = max(m.P50, pt.P50), max(m.P90, pt.P90), max(m.P95, pt.P95), max(m.P99, pt.P99), max(m.Max, pt.Max)
			switch {
			case pt.Hist != "":
				hists[key] = append(hists[key], pt.Hist)
			case pt.Responses > 0 || pt.Max > 0:
				bounded[key] = true // latencies without their histogram
			}
			m.Late += pt.Late
			m.Dropped += pt.Dropped
			m.Iterations += pt.Iterations
			m.Active += pt.Active
			m.Bytes += pt.Bytes
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	out := make([]result.Point, 0, len(keys))
	for _, k := range keys {
		pt := byKey[k]
		if pt.Len > 0 {
			pt.RPS = float64(pt.Responses) / pt.Len
		}
		if !bounded[k] && len(hists[k]) > 0 {
			// Sorted, so that the merge's bytes do not depend on the parts'
			// order (HDR merges are exact whatever the order; this keeps
			// the decoding order fixed too).
			slices.Sort(hists[k])
			metrics.MergedPercentiles(pt, hists[k])
		}
		out = append(out, *pt)
	}
	return out
}

// averageVUs is the average of the VUs in an iteration at the end of each
// second of the merged series, weighted by the points' lengths: the sum of
// the parts' averages would differ in its last digits with the order of
// the sum, and a merge of merges would not equal a merge of all.
func averageVUs(series []result.Point) float64 {
	var total, length float64
	for _, p := range series {
		if p.Len > 0 {
			total += float64(p.Active) * p.Len
			length += p.Len
		}
	}
	if length == 0 {
		return 0
	}
	return total / length
}

// mergePart is the merged result's part: every segment, and each part's
// own figures (a merged part's parts, flattened), in segment order.
func mergePart(parts []Part) *result.Part {
	first := parts[0].Result.Part
	out := &result.Part{N: first.N, ClockOffset: result.NoClockOffset, StartAt: first.StartAt}
	for _, p := range parts {
		pp := p.Result.Part
		out.Segments = append(out.Segments, pp.Segments...)
		out.StartLatenessMS = max(out.StartLatenessMS, pp.StartLatenessMS)
		if pp.StartAt == nil || out.StartAt == nil || !pp.StartAt.Equal(*out.StartAt) {
			out.StartAt = nil // the parts did not all start at one instant
		}
		if len(pp.Parts) > 0 {
			out.Parts = append(out.Parts, pp.Parts...)
			continue
		}
		out.Parts = append(out.Parts, result.PartSummary{
			Segments:        slices.Clone(pp.Segments),
			Started:         p.Result.Started,
			StartLatenessMS: pp.StartLatenessMS,
			Validity:        p.Result.Validity,
		})
	}
	sort.Ints(out.Segments)
	sort.Slice(out.Parts, func(i, j int) bool { return out.Parts[i].Segments[0] < out.Parts[j].Segments[0] })
	return out
}

// validity is every part's warnings, each said of its segments: "segment
// 3 of 8: the load generator was saturated ...".
func validity(p *result.Part) []result.Warning {
	var out []result.Warning
	for _, pp := range p.Parts {
		for _, w := range pp.Validity {
			out = append(out, result.Warning{Code: w.Code, Message: fmt.Sprintf("%s: %s", segmentsName(pp.Segments, p.N), w.Message)})
		}
	}
	return out
}

func segmentsName(ks []int, n int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = fmt.Sprint(k)
	}
	if len(ks) == 1 {
		return fmt.Sprintf("segment %s of %d", s[0], n)
	}
	return fmt.Sprintf("segments %s of %d", strings.Join(s, ", "), n)
}

// thresholds evaluates the parts' thresholds again on the merged result,
// its histograms as stored. Server thresholds have no merged figures: the
// merge keeps no server's.
func thresholds(ts []result.ThresholdResult, r *result.Result) ([]result.ThresholdResult, error) {
	var out []result.ThresholdResult
	h := threshold.Stored(r)
	for _, t := range ts {
		text := t.Text
		if t.Default {
			// The default checks threshold is written "checks == 100%",
			// which the grammar has as >=.
			text = strings.Replace(text, " == ", " >= ", 1)
		}
		parsed, err := threshold.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("threshold %q: %w", t.Text, err)
		}
		o := threshold.Evaluate(parsed, r, h, nil)
		out = append(out, result.ThresholdResult{Text: t.Text, Measured: o.Measured, Pass: o.Pass, Detail: o.Detail, Default: t.Default})
	}
	return out, nil
}
