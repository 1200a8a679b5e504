// Package report renders results for people and tools: the terminal summary,
// the JSON summary that scripts parse, markdown, HTML and CSV, of a run, an
// experiment or a comparison. An experiment's verdict and a comparison are
// data (package experiment); their English is written here, by Describe
// and the renderers, and nowhere else. Every renderer takes what it renders
// and an io.Writer, and reports the first write error.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
)

// errWriter remembers the first write error so renderers can write freely
// and check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// jsonSummary is what `loadlab run --json` prints: the run's summary, with
// the figures of each step, the thresholds and the validity warnings.
type jsonSummary struct {
	result.Summary
	Steps      []jsonStep               `json:"steps,omitempty"`
	Scenarios  []jsonScenario           `json:"scenarios,omitempty"`
	Thresholds []result.ThresholdResult `json:"thresholds,omitempty"`
	Validity   []result.Warning         `json:"validity,omitempty"`
}

type jsonScenario struct {
	Scenario string `json:"scenario"`
	// Load is the kind of the scenario's own load, when it had one.
	Load string `json:"load,omitempty"`
	result.Summary
}

type jsonStep struct {
	Scenario string `json:"scenario"`
	Step     string `json:"step"`
	result.Summary
	FailedCheck *result.FailedCheck `json:"first_failed_check,omitempty"`
}

// JSON writes the run's summary as one JSON object: the stable interface for
// scripts (schema loadlab.summary/v1).
func JSON(w io.Writer, r *result.Result) error {
	out := jsonSummary{Summary: r.Summary, Thresholds: r.Thresholds, Validity: r.Validity}
	for _, st := range r.Steps {
		s := st.Summary
		s.Schema = ""
		out.Steps = append(out.Steps, jsonStep{Scenario: st.Scenario, Step: st.Name, Summary: s, FailedCheck: st.FailedCheck})
	}
	for _, sc := range r.Scenarios {
		s := sc.Summary
		s.Schema = ""
		out.Scenarios = append(out.Scenarios, jsonScenario{Scenario: sc.Scenario, Load: sc.Load, Summary: s})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Text writes the terminal summary of a run.
func Text(w io.Writer, r *result.Result) error {
	ew := &errWriter{w: w}
	s := &r.Summary
	ew.printf("%s\n", headline(r))
	if n := PartNote(r); n != "" {
		ew.printf("%s\n", n)
	}
	errs := "no errors"
	if s.Aborted > 0 {
		// Journeys stopped without an error status: "no errors" would read
		// as a run that went well.
		errs = "no error responses"
	}
	if s.Errors.Total > 0 {
		errs = fmt.Sprintf("%s errors (%.2f%%)", count(s.Errors.Total), 100*s.ErrorRate)
	}
	if s.Abandoned > 0 {
		errs += fmt.Sprintf(", %s still in flight when it ended (not counted)", count(s.Abandoned))
	}
	ew.printf("%s in %.2fs, %s/s, %s\n", counted(s.Requests, "request"), s.DurationS, rate(s.ThroughputRPS), errs)
	if d := DrainNote(s); d != "" {
		ew.printf("%s\n", d)
	}
	if s.Interrupted {
		ew.printf("interrupted: these are the figures measured until then\n")
	}
	if s.Aborted > 0 {
		// Before any latency: figures of journeys that could not go on
		// describe something else than the journey.
		ew.printf("%s of %s completed: %s could not go on (see aborted below)\n", count(s.Iterations), counted(s.Iterations+s.Aborted, "journey"), count(s.Aborted))
	}
	ew.printf("\n")
	open := r.Settings.Mode == "open"
	rows := []row{{"latency", s.Latency}}
	if open {
		rows = append(rows, row{"service time", s.Service})
	}
	rows = append(rows, row{"first byte", s.TTFB})
	if s.Connect != nil {
		rows = append(rows, row{"connect", *s.Connect})
	}
	if s.TLS != nil {
		rows = append(rows, row{"tls", *s.TLS})
	}
	percentileTable(ew, "(ms)", rows)
	if s.TLS != nil {
		ew.printf("tls         %s handshakes, %s resumed a session\n", count(s.TLS.Count), count(s.TLSResumed))
	}
	st, e := statusList(s.Status), errorList(&s.Errors)
	if st != "" {
		ew.printf("\nstatus      %s\n", st)
	}
	if e != "" {
		if st == "" {
			ew.printf("\n")
		}
		ew.printf("errors      %s\n", e)
		for _, class := range sortedKeys(s.Errors.Examples) {
			ew.printf("  %-9s e.g. %s\n", class, clip(s.Errors.Examples[class], 100))
		}
	}
	if open || s.Late.Count > 0 {
		ew.printf("late        %s requests went out 1 ms or more after their due time (lateness of all: p50 %s ms, p99 %s ms, max %s ms)\n",
			count(s.Late.Count), ms(s.Late.P50), ms(s.Late.P99), ms(s.Late.Max))
		if s.VUs > 0 {
			ew.printf("VUs busy    at most %s of %s, %.1f on average", count(int64(s.VUsPeak)), count(int64(s.VUs)), s.VUsAvg)
			if s.Late.Waited > 0 {
				ew.printf("; %s arrivals found every one busy and waited", count(s.Late.Waited))
			}
			ew.printf("\n")
		}
	}
	if s.Unsent > 0 {
		ew.printf("unsent      %s requests were due but never sent before the run ended\n", count(s.Unsent))
	}
	if r.Plan != "" {
		ew.printf("iterations  %s completed", count(s.Iterations))
		if s.Aborted > 0 {
			ew.printf(", %s aborted", count(s.Aborted))
		}
		if s.Dropped > 0 || r.Settings.Mode == "open" {
			ew.printf(", %s dropped", count(s.Dropped))
		}
		ew.printf("\n")
	}
	if n := s.Checks.Passed + s.Checks.Failed; n > 0 {
		ew.printf("checks      %s of %s passed (%.2f%%)%s\n", count(s.Checks.Passed), count(n), 100*s.Checks.Rate(), defaultChecksNote(r.Thresholds))
		checkMarks(ew, r.Steps)
	}
	if len(r.Steps) > 1 || s.Checks.Passed+s.Checks.Failed > 0 {
		ew.printf("\n")
		stepTable(ew, "step", r.Steps)
		if len(r.Scenarios) > 0 {
			var rows []result.Step
			for _, sc := range r.Scenarios {
				rows = append(rows, result.Step{Scenario: "default", Name: sc.Scenario, Summary: sc.Summary})
			}
			stepTable(ew, "scenario", rows)
		}
		scenarioLoadsText(ew, scenarioLoads(r))
		for _, st := range r.Steps {
			if f := st.FailedCheck; f != nil {
				ew.printf("first failed check of %s: %s; %s\n", stepName(st), f.Check, failedAnswer(f, 160))
				switch {
				case f.File != "":
					ew.printf("  the whole response: %s (loadlab report DIR --failures)\n", f.File)
				case f.Response != "":
					ew.printf("  the whole response was not kept (pass --out DIR to keep it)\n")
				}
			}
		}
	}
	for _, reason := range sortedReasons(r.Aborts) {
		ew.printf("aborted     %s × %s\n", count(r.Aborts[reason]), reason)
	}
	if r.Stopped != "" {
		ew.printf("stopped     %s\n", r.Stopped)
	}
	if sv := r.Server; sv != nil {
		serverText(ew, sv)
	}
	if g := r.Generator; g != nil && g.Cores > 0 {
		ew.printf("loadlab     CPU %.0f%% of one core (peak %.0f%%) of the %g it may use, RSS peak %s\n", g.CPUAvg, g.CPUPeak, g.Cores, quantity.FormatBytes(g.RSSPeak))
	}
	if m := r.Machine; m != nil {
		ew.printf("machine     %s\n", MachineText(m))
	}
	if len(r.Thresholds) > 0 {
		ew.printf("\nthresholds\n")
		for _, t := range r.Thresholds {
			mark := "pass"
			if !t.Pass {
				mark = "FAIL"
			}
			ew.printf("  %s  %-36s %s\n", mark, t.Text, t.Detail)
		}
		ew.printf("\n")
	}
	if s.Decoded > 0 {
		ew.printf("received    %s on the wire, %s decoded (%s of %s bodies compressed)\n", quantity.FormatBytes(s.BytesReceived),
			quantity.FormatBytes(s.BytesDecoded), count(s.Decoded), count(s.Responses))
	} else {
		ew.printf("received    %s\n", quantity.FormatBytes(s.BytesReceived))
	}
	if s.Protocol != "" {
		ew.printf("protocol    %s\n", protocolText(r))
	}
	for _, v := range r.Validity {
		ew.printf("WARNING     %s\n", v.Message)
	}
	ew.printf("resolution  %s\n", s.Resolution)
	return ew.err
}

// checkMarks are the checks as ✓ (every one passed) or ✗, with the count
// passed of those made: one line per named check of each step when the
// result counts them by name ("✓ browse / home: status is 200
// 4,318/4,318", "✗ login: body contains Welcome  0/1,423  (first failure:
// status 200: Sign in)"), a check that never ran left out; else, in a
// result written before they were, one line per step, with its first
// failed check's name ("✗ failing / broken  0/1,423  status is 2xx").
func checkMarks(ew *errWriter, steps []result.Step) {
	type mark struct {
		name          string
		passed, total int64
		note          string
	}
	var marks []mark
	for _, st := range steps {
		c := st.Summary.Checks
		if c.Passed+c.Failed == 0 {
			continue
		}
		if len(st.ChecksByName) == 0 {
			m := mark{name: clip(stepName(st), 40), passed: c.Passed, total: c.Passed + c.Failed}
			if f := st.FailedCheck; c.Failed > 0 && f != nil {
				m.note = clip(f.Check, 60)
			}
			marks = append(marks, m)
			continue
		}
		first := true
		for _, nc := range st.ChecksByName {
			if nc.Passed+nc.Failed == 0 {
				continue
			}
			m := mark{name: clip(stepName(st), 40) + ": " + clip(nc.Name, 50), passed: nc.Passed, total: nc.Passed + nc.Failed}
			if f := st.FailedCheck; nc.Failed > 0 && f != nil && f.Check == nc.Name && first {
				m.note = "(first failure: " + failedAnswer(f, 40) + ")"
				first = false
			}
			marks = append(marks, m)
		}
	}
	width := 0
	for _, m := range marks {
		width = max(width, len([]rune(m.name)))
	}
	for _, m := range marks {
		sign := "✓"
		if m.passed < m.total {
			sign = "✗"
		}
		counts := count(m.passed) + "/" + count(m.total)
		line := fmt.Sprintf("  %s %s%s  %s", sign, m.name, strings.Repeat(" ", width-len([]rune(m.name))), counts)
		if m.note != "" {
			line += "  " + m.note
		}
		ew.printf("%s\n", line)
	}
}

// defaultChecksNote says, after the checks line, that the default checks
// threshold failed the run: it is not in the plan, so the reader must be told
// where it comes from and how to change it.
func defaultChecksNote(ts []result.ThresholdResult) string {
	for _, t := range ts {
		if t.Default && !t.Pass {
			return fmt.Sprintf("; default threshold %s failed (a checks threshold in the plan, such as checks > 95%%, replaces it)", t.Text)
		}
	}
	return ""
}

func serverText(ew *errWriter, sv *result.Server) {
	ew.printf("\nserver      %s (%d processes at most)\n", clip(sv.Command, 70), sv.ProcessesPeak)
	ew.printf("  CPU       avg %.0f%%, peak %.0f%% of one core (%.0f%% and %.0f%% of %g CPUs); user %.1fs, system %.1fs\n",
		sv.CPUAvg, sv.CPUPeak, sv.MachineAvg, sv.MachinePeak, sv.Cores, sv.CPUUser, sv.CPUSystem)
	ew.printf("  memory    RSS avg %s, peak %s; PSS avg %s, peak %s; swap peak %s\n",
		quantity.FormatBytes(sv.RSSAvg), quantity.FormatBytes(sv.RSSPeak), quantity.FormatBytes(sv.PSSAvg), quantity.FormatBytes(sv.PSSPeak), quantity.FormatBytes(sv.SwapPeak))
	if q := sv.Quota; q != nil {
		verdict := "under it"
		switch {
		case q.AverageExceeded:
			verdict = fmt.Sprintf("EXCEEDED: peak %s over, average %s over", quantity.FormatBytes(q.PeakOver), quantity.FormatBytes(q.AverageOver))
		case q.PeakExceeded:
			verdict = fmt.Sprintf("EXCEEDED at peak by %s (average under)", quantity.FormatBytes(q.PeakOver))
		}
		ew.printf("  quota     %s against PSS + swap (avg %s, peak %s): %s\n", quantity.FormatBytes(q.Bytes), quantity.FormatBytes(q.Average), quantity.FormatBytes(q.Peak), verdict)
	}
	if l := sv.Limits; l != nil {
		ew.printf("  limits    %s\n", limitsInForce(l))
		ew.printf("  measured  %s\n", limitsMeasured(l))
	}
	ew.printf("  other     %d major faults, %d threads and %d open files at most\n", sv.MajorFaults, sv.ThreadsPeak, sv.FDsPeak)
	if sv.Exit != "" {
		ew.printf("  EXITED    %s; last lines of %s:\n", sv.Exit, sv.Log)
		for _, l := range sv.LogTail {
			ew.printf("    | %s\n", l)
		}
	}
}

func headline(r *result.Result) string {
	st := &r.Settings
	parts := []string{}
	if st.URL != "" {
		parts = append(parts, st.Method+" "+st.URL)
	} else if r.Name != "" {
		parts = append(parts, r.Name)
	}
	unit := "connection" // quick mode: a connection each; a plan's VUs may open several
	if r.Plan != "" || st.Extra["load"] != "" {
		unit = "VU"
	}
	switch {
	case st.Extra["load"] == "per scenario":
		parts = append(parts, fmt.Sprintf("a load per scenario, all at once, up to %s", plural(st.Connections, unit)))
	case st.Extra["load"] == "ramping arrival rate":
		parts = append(parts, fmt.Sprintf("open, ramping arrivals (%s in all), up to %s", st.Extra["arrivals"], plural(st.Connections, unit)))
	case st.Mode == "open":
		parts = append(parts, fmt.Sprintf("open, %s/s, up to %s", rate(st.Rate), plural(st.Connections, unit)))
	case st.Extra["load"] == "ramping VUs":
		parts = append(parts, fmt.Sprintf("ramping VUs, up to %s", plural(st.Connections, unit)))
	default:
		parts = append(parts, fmt.Sprintf("closed, %s", plural(st.Connections, unit)))
	}
	if st.Duration > 0 {
		parts = append(parts, st.Duration.String())
	}
	if st.Requests > 0 {
		parts = append(parts, count(st.Requests)+" requests")
	}
	return strings.Join(parts, " · ")
}

type row struct {
	name string
	p    result.Percentiles
}

func percentileTable(ew *errWriter, unit string, rows []row) {
	ew.printf("%-18s %9s %9s %9s %9s %9s %9s %9s\n", unit, "min", "p50", "p90", "p95", "p99", "p99.9", "max")
	for _, r := range rows {
		p := r.p
		if p.Count == 0 {
			ew.printf("%-18s %9s\n", r.name, "-")
			continue
		}
		ew.printf("%-18s %9s %9s %9s %9s %9s %9s %9s\n", r.name, ms(p.Min), ms(p.P50), ms(p.P90), ms(p.P95), ms(p.P99), ms(p.P999), ms(p.Max))
	}
}

func stepTable(ew *errWriter, heading string, steps []result.Step) {
	ew.printf("%-32s %9s %7s %9s %8s %8s %8s %8s\n", heading, "requests", "errors", "checks", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, st := range steps {
		s := &st.Summary
		name := st.Name
		if st.Scenario != "" && st.Scenario != "default" {
			name = st.Scenario + " / " + name
		}
		checks := "-"
		if n := s.Checks.Passed + s.Checks.Failed; n > 0 {
			checks = fmt.Sprintf("%s/%s", count(s.Checks.Passed), count(n))
		}
		p50, p95, p99, max := "-", "-", "-", "-" // no request measured: no latency, not 0
		if s.Latency.Count > 0 {
			p50, p95, p99, max = ms(s.Latency.P50), ms(s.Latency.P95), ms(s.Latency.P99), ms(s.Latency.Max)
		}
		ew.printf("%-32s %9s %7s %9s %8s %8s %8s %8s\n", clip(name, 32), count(s.Requests), count(s.Errors.Total), checks, p50, p95, p99, max)
	}
	ew.printf("\n")
}

func sortedReasons(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return m[out[i]] > m[out[j]] || m[out[i]] == m[out[j]] && out[i] < out[j] })
	return out
}

func errorList(e *result.Errors) string {
	var parts []string
	for _, c := range []struct {
		name string
		n    int64
	}{{"connect", e.Connect}, {"timeout", e.Timeout}, {"reset", e.Reset}, {"protocol", e.Protocol}, {"tls", e.TLS}, {"stream", e.Stream}, {"goaway", e.Goaway}, {"4xx", e.Status4xx}, {"5xx", e.Status5xx}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", c.name, count(c.n)))
		}
	}
	return strings.Join(parts, " · ")
}

// statusList is the responses by status code, "200 ×95 · 302 ×5"; empty
// when all were 200 (nothing to say) or none came.
func statusList(m map[int]int64) string {
	if len(m) == 0 || len(m) == 1 && m[200] > 0 {
		return ""
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d ×%s", code, count(m[code])))
	}
	return strings.Join(parts, " · ")
}

// clip cuts s to n characters, the last an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…" // by runes: a byte cut could split one
}

// ms formats milliseconds with three significant digits.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func rate(v float64) string {
	if v >= 100 {
		return count(int64(v + 0.5))
	}
	return fmt.Sprintf("%.2f", v)
}

// count writes an integer with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + count(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func stepName(st result.Step) string {
	if st.Scenario != "default" && st.Scenario != "" {
		return st.Scenario + " / " + st.Name
	}
	return st.Name
}

// failedAnswer says what the server answered to a failed check, on one
// line, the body cut to width characters.
func failedAnswer(f *result.FailedCheck, width int) string {
	if f.Status == 0 {
		if f.Check == result.CheckRequestBuilt || f.Check == result.CheckRequestSize {
			return "not sent: " + f.Error
		}
		if f.Error != "" {
			return "no response: " + f.Error
		}
		return "no response"
	}
	body := strings.Join(strings.Fields(f.Body), " ")
	if r := []rune(body); len(r) > width {
		body = string(r[:width]) + "…"
	}
	if body == "" {
		return fmt.Sprintf("status %d", f.Status)
	}
	if f.Shown != "" {
		return fmt.Sprintf("status %d, %s: %s", f.Status, f.Shown, body)
	}
	return fmt.Sprintf("status %d: %s", f.Status, body)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// counted writes a large count of things: "1 request", "12,345 requests".
func counted(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return count(n) + " " + thing + "s"
}

// plural writes a count of things: "1 connection", "50 connections".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// DrainNote says, for a run whose journeys went on past the load's window
// into the grace period, what throughput counts; "" when there was no drain.
func DrainNote(s *result.Summary) string {
	// A drain of a few milliseconds (the last responses of the window) is
	// not worth a line.
	if s.DrainS < 0.01 || s.WindowS <= 0 || s.Responses == s.WindowResponses {
		return ""
	}
	return fmt.Sprintf("throughput: the %s responses within the load's %.2fs, over it; journeys in progress then took %.2fs more (the drain), whose %s responses count in latency, not in throughput",
		count(s.WindowResponses), s.WindowS, s.DrainS, count(s.Responses-s.WindowResponses))
}

// MachineText sums up what ran on the machine during the load.
func MachineText(m *result.Machine) string {
	others := "others"
	if m.ServerUnwatched {
		others = "others (the server among them: loadlab did not start it)"
	}
	srv := "the server"
	if f := m.ServerFound; f != nil {
		srv = fmt.Sprintf("the server (%s, pid %d, found by its listening socket)", f.Command, f.PID)
		if f.Command == "" {
			srv = fmt.Sprintf("the server (pid %d, found by its listening socket)", f.PID)
		}
	}
	if len(m.ServersFound) > 1 {
		var each []string
		for _, f := range m.ServersFound {
			name := fmt.Sprintf("pid %d", f.PID)
			if f.Command != "" {
				name = fmt.Sprintf("%s, pid %d", f.Command, f.PID)
			}
			each = append(each, fmt.Sprintf("%s %.0f%%", name, f.CPUPct))
		}
		srv = fmt.Sprintf("%d servers found by their listening sockets (%s)", len(m.ServersFound), strings.Join(each, "; "))
	}
	steal := fmt.Sprintf("%.0f%% stolen by the hypervisor", m.StealPct)
	if slices.Contains(m.Unmeasured, "steal") {
		steal = "steal not measured here"
	}
	return fmt.Sprintf("%d CPUs %.0f%% busy: loadlab %.0f%%, %s %.0f%%, %s %.0f%%; %s", m.CPUs, m.BusyPct, m.LoadlabPct, srv, m.ServerPct, others, m.OthersPct, steal)
}

// protocolText says what an HTTP/2 run spoke: the protocol, the streams
// on each connection in quick mode, and each step's when they differ.
func protocolText(r *result.Result) string {
	s := r.Summary.Protocol
	switch n := r.Settings.Streams; {
	case n == 1:
		s += " (1 stream a connection)"
	case n > 1:
		s += fmt.Sprintf(" (%d streams a connection)", n)
	}
	if strings.Contains(r.Summary.Protocol, ",") {
		var steps []string
		for _, st := range r.Steps {
			p := st.Summary.Protocol
			if p == "" {
				p = "http/1.1"
			}
			steps = append(steps, st.Name+": "+p)
		}
		s += "; " + strings.Join(steps, ", ")
	}
	return s
}
