package runner

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
)

// Saturated is the share of its usable CPUs above which loadlab calls
// itself saturated: its own queueing then shows up as server latency.
const Saturated = 0.90

// LateShare is the share of requests that may go out late (1 ms or more
// after their due time) before a run is called suspect, when there are at
// least LateMinRequests requests and LateMinCount late ones: 2 late of 110
// is a share, not evidence.
const (
	LateShare       = 0.01
	LateMinRequests = 500
	LateMinCount    = 10
)

// GeneratorBusy is the share of the CPUs its event loops can use (one
// thread each) above which loadlab, not the schedule, is the likely cause
// of requests going out late.
const GeneratorBusy = 0.5

// MajorFaults is how many major page faults the server may take during the
// load before a run is called suspect: a handful is a cold start reading a
// library; more is memory pressure.
const MajorFaults = 10

// MachineBusy is the share of the machine's CPUs that other processes
// (everything but loadlab and the server under test's tree) may use during
// the load before a run is called suspect: they compete for the CPUs, and
// repeats of one point then differ.
const MachineBusy = 0.10

// CPUSteal is the share of CPU time a virtual machine's hypervisor may steal
// (give to other guests while this one wanted to run) before a run is
// called suspect.
const CPUSteal = 0.05

// NoResponseShare is the share of requests that may end without any
// response (connect, timeout, reset...) before the latency figures are said
// to describe failures rather than the server's answers.
const NoResponseShare = 0.5

// Validity lists the reasons not to trust a run's figures: the load
// generator was saturated, requests went out late or were dropped, most
// requests got no response, the server swapped or took major page faults.
func Validity(res *result.Result, out *engine.Outcome) []result.Warning {
	var w []result.Warning
	add := func(code, format string, args ...any) {
		w = append(w, result.Warning{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	s := &res.Summary
	if g := res.Generator; g != nil && g.Cores > 0 && g.CPUAvg/100 > Saturated*g.Cores {
		add("generator_saturated", "loadlab used %.0f%% of the %g CPUs it may use (over %.0f%%): it was saturated, so part of the latency is its own queueing; give it more CPUs or send less load", g.CPUAvg/g.Cores, g.Cores, 100*Saturated)
	}
	if sent := max(s.Requests, s.Late.Count); sent >= LateMinRequests && s.Late.Count >= LateMinCount && float64(s.Late.Count) > LateShare*float64(sent) {
		// sent: late ones may still be in flight at the end.
		// The lateness figures are of every arrival, on time or not.
		add("late", "%d of %d requests (%.1f%%) went out 1 ms or more after they were due (of all requests, %s ms late at the median, %s at p99, %s at most): %s",
			s.Late.Count, sent, 100*float64(s.Late.Count)/float64(sent), msNum(s.Late.P50), msNum(s.Late.P99), msNum(s.Late.Max), lateCause(res))
	}
	if failed := s.Requests - s.Responses; s.Requests > 0 && float64(failed) > NoResponseShare*float64(s.Requests) {
		add("no_response", "%d of %d requests (%.1f%%) got no response%s: the latency figures describe failures, not the server's answers",
			failed, s.Requests, 100*float64(failed)/float64(s.Requests), firstExample(s.Errors.Examples))
	}
	if s.Unsent > 0 {
		add("unsent", "%d requests were due but never sent: the run fell behind its schedule", s.Unsent)
	}
	if s.Dropped > 0 {
		total := s.Dropped + s.Iterations + s.Aborted
		add("dropped", "%d arrivals (%.1f%%) were dropped: every VU was busy when they were due. The server could not keep up, or max_vus is too low.",
			s.Dropped, 100*float64(s.Dropped)/float64(max(total, 1)))
	}
	if s.Aborted > 0 {
		add("aborted", "%d journeys could not go on%s", s.Aborted, abortReasons(res.Aborts))
	}
	if out != nil && out.InFlight > 0 && !out.Interrupted {
		add("abandoned", "%d requests were still in flight when the grace period ended and are not counted", out.InFlight)
	}
	if out != nil && out.Stopped != nil {
		add("stopped", "the run stopped early: %s", strings.TrimPrefix(out.Stopped.Error(), "stop: "))
	}
	if m := res.Machine; m != nil {
		if m.OthersPct > 100*MachineBusy && !m.ServerUnwatched {
			add("machine_busy", "other processes used %.0f%% of the machine's %d CPUs during the load (over %.0f%%; loadlab %.0f%%, the server under test %.0f%%): they competed with the server and loadlab for CPU, so the figures are lower and vary between runs. Quiet the machine, or give the test one of its own.",
				m.OthersPct, m.CPUs, 100*MachineBusy, m.LoadlabPct, m.ServerPct)
		}
		if m.StealPct > 100*CPUSteal {
			add("cpu_steal", "the hypervisor stole %.0f%% of the CPU time (over %.0f%%): the virtual machine's host ran other guests on its CPUs, so throughput is lower and varies between runs. Use dedicated CPUs, or repeat when the host is quieter.",
				m.StealPct, 100*CPUSteal)
		}
	}
	if sv := res.Server; sv != nil {
		if sv.SwapPeak > 0 {
			add("server_swapped", "the server had %s in swap: memory was short, and its latency includes paging", quantity.FormatBytes(sv.SwapPeak))
		}
		if sv.MajorFaults >= MajorFaults {
			add("server_major_faults", "the server took %d major page faults (pages read from disk) during the load: memory pressure or a cold start", sv.MajorFaults)
		}
		if q := sv.Quota; q != nil && q.PeakExceeded {
			add("memory_quota", "the server's memory (PSS and swap) peaked at %s, %s over its %s quota (average %s): on a platform with that limit it would swap or be killed",
				quantity.FormatBytes(q.Peak), quantity.FormatBytes(q.PeakOver), quantity.FormatBytes(q.Bytes), quantity.FormatBytes(q.Average))
		}
		if len(sv.Unmeasured) > 0 {
			words := strings.NewReplacer("pss", "PSS", "major_faults", "major faults", "fds", "open files", "cpu_wait", "CPU wait")
			add("server_unmeasured", "on %s loadlab cannot measure the server's %s: they read 0 here (PSS reads RSS), so swapping or paging would go unseen", runtime.GOOS, words.Replace(strings.Join(sv.Unmeasured, ", ")))
		}
		if sv.Exit != "" {
			add("server_exited", "the server exited mid-run (%s): the figures stop there", sv.Exit)
		}
	}
	return w
}

// lateCause says why requests went out late, from what was measured, and
// what to do: every VU (connection) was busy, so arrivals waited for one;
// loadlab's event loops were busy; or neither, and the lateness is the
// machine's scheduling jitter, which raising -c or max_vus would not cure.
func lateCause(res *result.Result) string {
	s := &res.Summary
	vus := ""
	if s.VUs > 0 {
		vus = fmt.Sprintf("at most %d of %d VUs were busy, %.1f on average", s.VUsPeak, s.VUs, s.VUsAvg)
	}
	g := res.Generator
	loops := 0.0
	if g != nil {
		loops = g.Cores
		if w := float64(res.Settings.Workers); w > 0 && w < loops {
			loops = w
		}
	}
	switch {
	case 2*s.Late.Waited >= s.Late.Count:
		raise := "raise -c"
		if res.Plan != "" {
			raise = "raise max_vus"
		}
		return fmt.Sprintf("%d arrivals found every connection busy and waited for one; %s. Their latency counts from the due time; %s if the server can take more.", s.Late.Waited, vus, raise)
	case loops > 0 && g.CPUAvg/100 >= GeneratorBusy*loops:
		return fmt.Sprintf("loadlab itself was busy, at %.0f%% of a core on average for its %g event loops, and sent late. Give it more CPUs (or a machine of its own), or send less load.", g.CPUAvg, loops)
	default:
		why := "no arrival waited for a VU"
		if vus != "" {
			why = vus + ", none waited for one"
		}
		if g != nil {
			why += fmt.Sprintf(", and loadlab used %.0f%% of a core", g.CPUAvg)
		}
		machine := ""
		if m := res.Machine; m != nil {
			machine = fmt.Sprintf(" (the machine's %d CPUs were %.0f%% busy, %.0f%% of their time stolen by the hypervisor)", m.CPUs, m.BusyPct, m.StealPct)
		}
		return fmt.Sprintf("%s: this is the machine's scheduling jitter%s, not a lack of VUs; more VUs would not help. Their latency counts from the due time. If it matters, quiet the machine.", why, machine)
	}
}

// msNum formats a figure in milliseconds with up to three significant digits.
func msNum(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// firstExample is " (class: message)" for the first class of failure without
// a response that has an example.
func firstExample(examples map[string]string) string {
	for _, class := range []string{"connect", "timeout", "reset", "tls", "protocol", "stream", "goaway"} {
		if m, ok := examples[class]; ok {
			return fmt.Sprintf(" (%s: %s)", class, m)
		}
	}
	return ""
}

// abortReasons is ": REASON (N), ..." for the commonest reasons journeys
// were aborted, at most three.
func abortReasons(aborts map[string]int64) string {
	reasons := make([]string, 0, len(aborts))
	for r := range aborts {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := reasons[i], reasons[j]
		return aborts[a] > aborts[b] || aborts[a] == aborts[b] && a < b
	})
	var parts []string
	for _, r := range reasons[:min(3, len(reasons))] {
		parts = append(parts, fmt.Sprintf("%s (%d)", r, aborts[r]))
	}
	if len(parts) == 0 {
		return ""
	}
	more := ""
	if len(reasons) > 3 {
		more = fmt.Sprintf(", and %d other reasons", len(reasons)-3)
	}
	return ": " + strings.Join(parts, ", ") + more
}
