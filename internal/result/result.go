// Package result defines what a run leaves behind: the versioned schema of
// result.json and of the summary that `loadlab run --json` prints. It owns no
// behaviour beyond encoding, decoding and checking the schema version, so
// every other package (engine, report, store, compare) can depend on it.
//
// Compatibility: fields are only ever added within a schema version. A
// change that removes or renames a field, or changes a unit, bumps the
// version; Decode refuses versions it does not know.
package result

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Schema versions.
const (
	SchemaResult  = "loadlab.result/v1"
	SchemaSummary = "loadlab.summary/v1"
)

// Result is the content of result.json.
type Result struct {
	Schema  string    `json:"schema"`
	Version string    `json:"loadlab_version"`
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`

	Settings Settings `json:"settings"`
	Summary  Summary  `json:"summary"`
	Steps    []Step   `json:"steps"`
	// Scenarios are the totals of each scenario's steps and its journeys
	// completed, when the plan has more than one.
	Scenarios []ScenarioTotals `json:"scenarios,omitempty"`
	// Histograms for the whole run, encoded losslessly.
	Histograms RunHistograms `json:"histograms"`
	Series     []Point       `json:"series"`
	Validity   []Warning     `json:"validity,omitempty"`
	// Server is what the server under test used, when loadlab started it.
	Server *Server `json:"server,omitempty"`
	// Generator is what loadlab itself used: a saturated load generator
	// makes every other figure suspect.
	Generator *Generator `json:"generator,omitempty"`
	// Thresholds are the pass/fail criteria and how the run measured up.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Plan is the plan file that produced the run, secrets masked.
	Plan string `json:"plan,omitempty"`
	// PlanInputs are what the plan's text does not say: --set overrides,
	// -e values, the environment it read, an experiment point's params.
	PlanInputs []string `json:"plan_inputs,omitempty"`
	// Fingerprint is what the run measured, in the terms compare checks
	// before it compares two results; absent in results of loadlab before it.
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	// Aborts counts why journeys could not go on, by reason.
	Aborts map[string]int64 `json:"aborts,omitempty"`
	// Stopped says why the run ended before its workload did.
	Stopped string `json:"stopped,omitempty"`

	// Machine is what else ran on the machine during the load: other
	// processes, and the hypervisor's steal.
	Machine *Machine `json:"machine,omitempty"`

	// Capacity is set on the result of an experiment's run that was a
	// capacity search (a plan with params and capacity:): the search's
	// answer. The rest of the result is the first step at the answer's
	// (or, with none, the first step's); the search is in capacity.json
	// beside it.
	Capacity *Capacity `json:"capacity,omitempty"`

	// Part says the result is execution segments of a plan's run: one
	// (`loadlab run --segment K/N`) or several merged (`loadlab merge`).
	// Absent for a run of the whole plan without --start-at.
	Part *Part `json:"part,omitempty"`
}

// Capacity is a capacity search's answer, as an experiment compares it.
type Capacity struct {
	By       string  `json:"by"`         // rate or vus
	RatePerS float64 `json:"rate_per_s"` // the answer by rate; by vus, the throughput at it
	VUs      float64 `json:"vus"`        // the answer by vus; by rate, the requests in flight at it
	AtLeast  bool    `json:"at_least"`
	Steps    int     `json:"steps"`
}

// Answer is what the search varied, at the answer: a rate, or VUs.
func (c *Capacity) Answer() float64 {
	if c.By == "vus" {
		return c.VUs
	}
	return c.RatePerS
}

// Part is which execution segments of a plan's run a result holds, and how
// they started.
type Part struct {
	// Segments are the K of each segment of N the result holds, ascending:
	// one for a run, several for a merge. A run of the whole plan with
	// --start-at has [1] of 1.
	Segments []int `json:"segments"`
	N        int   `json:"of"`
	// StartAt is the wall-clock instant --start-at asked the schedule to
	// start at; absent without it.
	StartAt *time.Time `json:"start_at,omitempty"`
	// StartLatenessMS is how long after its start instant the run's last
	// event loop began its load (the most of the parts' when merged).
	StartLatenessMS float64 `json:"start_lateness_ms"`
	// ClockOffset says what is known of this machine's clock against the
	// others': loadlab makes no estimate of its own ("none estimated");
	// keep the machines' clocks synchronized (NTP, chrony).
	ClockOffset string `json:"clock_offset"`
	// Parts are the merged results' own: each part's segments, start
	// lateness and validity warnings (merge only).
	Parts []PartSummary `json:"parts,omitempty"`
}

// PartSummary is one merged part.
type PartSummary struct {
	Segments        []int     `json:"segments"`
	Started         time.Time `json:"started"`
	StartLatenessMS float64   `json:"start_lateness_ms"`
	Validity        []Warning `json:"validity,omitempty"`
}

// NoClockOffset is Part.ClockOffset when loadlab made no estimate.
const NoClockOffset = "none estimated"

// Fingerprint is what a run measured: the load's kind and shape, the
// requests of its journeys, the target and the server under test. Two runs
// with the same Hash measured the same thing; compare lists the fields that
// differ and refuses to compare unlike runs unless told to.
type Fingerprint struct {
	// Hash is a hash of the fields below (not of Plan): equal fingerprints
	// have equal hashes, whichever plan file they came from.
	Hash string `json:"hash"`
	// Workload is the load's kind: "closed", "open", "ramping VUs",
	// "ramping arrival rate".
	Workload string `json:"workload"`
	// Shape is how much load and for how long: "10 VUs, 1 iteration each",
	// "1.5/s for 10s, at most 20 VUs".
	Shape string `json:"shape"`
	// Steps are the journeys' requests in plan order, "METHOD path" with
	// the path's template as written ("GET /products/{{ id }}"), after
	// "scenario (weight N): " when the plan has several.
	Steps []string `json:"steps"`
	// Target is the origin the load went to: scheme://host:port.
	Target string `json:"target,omitempty"`
	// Server is the server under test's command line, after its env
	// (NAME=value, sorted), secrets masked; empty when loadlab started none.
	Server string `json:"server,omitempty"`
	// Plan identifies the plan file and its inputs (--set, -e, the
	// environment and files it read), an experiment's params left out: two
	// runs of one plan differ only where their params do.
	Plan string `json:"plan,omitempty"`
}

// Settings are what the run was asked to do.
type Settings struct {
	Mode        string   `json:"mode"` // "closed" or "open"
	URL         string   `json:"url,omitempty"`
	Method      string   `json:"method,omitempty"`
	Headers     []string `json:"headers,omitempty"` // "Name: value", secrets masked
	BodyBytes   int      `json:"body_bytes,omitempty"`
	Connections int      `json:"connections,omitempty"` // closed: connections (VUs); open: the cap
	// Streams: HTTP/2 (--http2), concurrent streams on each connection.
	Streams   int      `json:"streams,omitempty"`
	Duration  Duration `json:"duration,omitempty"`
	Requests  int64    `json:"requests,omitempty"` // -n: total requests
	Rate      float64  `json:"rate_per_s,omitempty"`
	Timeout   Duration `json:"timeout"`
	KeepAlive bool     `json:"keepalive"`
	Insecure  bool     `json:"insecure,omitempty"`
	// Compressed: quick mode's --compressed (Accept-Encoding sent, bodies decoded).
	Compressed bool              `json:"compressed,omitempty"`
	MaxBody    int64             `json:"max_body_bytes"`
	MaxHeader  int               `json:"max_header_bytes"`
	Workers    int               `json:"workers"`          // event loops (OS threads) that sent the load
	Engine     string            `json:"engine,omitempty"` // the socket layer under them: "epoll" or "portable"
	Extra      map[string]string `json:"extra,omitempty"`
}

// Summary is the run's headline figures; `loadlab run --json` prints it.
type Summary struct {
	Schema        string  `json:"schema,omitempty"`
	Requests      int64   `json:"requests"`  // exchanges finished: responses of any status plus failures
	Responses     int64   `json:"responses"` // of any status
	DurationS     float64 `json:"duration_s"`
	ThroughputRPS float64 `json:"throughput_rps"` // window_responses / window_s; without a window, responses / duration_s
	Errors        Errors  `json:"errors"`
	// Protocol is "h2" (HTTP/2 over TLS) or "h2c" (cleartext HTTP/2) for
	// requests sent over HTTP/2, and absent for HTTP/1.1; a run whose steps
	// differ lists theirs ("h2, http/1.1").
	Protocol  string       `json:"protocol,omitempty"`
	ErrorRate float64      `json:"error_rate"` // errors.total / requests
	Latency   Percentiles  `json:"latency_ms"`
	Service   Percentiles  `json:"service_time_ms"`
	TTFB      Percentiles  `json:"ttfb_ms"`
	Connect   *Percentiles `json:"connect_ms,omitempty"`
	Late      Late         `json:"late"`
	Unsent    int64        `json:"unsent"` // open load: due within the run but never sent
	// Abandoned requests were still in flight when the grace period ended
	// (or the run was interrupted): sent, never answered, not counted above.
	Abandoned     int64  `json:"abandoned,omitempty"`
	Checks        Checks `json:"checks"`
	Iterations    int64  `json:"iterations"`         // journeys completed
	Aborted       int64  `json:"iterations_aborted"` // journeys that could not go on
	Dropped       int64  `json:"dropped"`            // open load: arrivals that found no free VU
	Interrupted   bool   `json:"interrupted"`        // stopped early by Ctrl-C or a signal
	BytesReceived int64  `json:"bytes_received"`
	// BytesDecoded is the bodies' size once content codings (gzip, br,
	// deflate, zstd) were undone, and Decoded how many bodies came in one;
	// both absent when none did.
	BytesDecoded int64  `json:"bytes_decoded,omitempty"`
	Decoded      int64  `json:"responses_decoded,omitempty"`
	Resolution   string `json:"resolution"` // of every latency figure

	// DurationS above is the elapsed time: from the start of the
	// measurement (after any warmup) to the last response. WindowS is the
	// load's own window within it: until the workload's end (its duration,
	// stages or arrivals) or an early stop, without the DrainS that journeys
	// in progress then took to finish in the grace period (DurationS =
	// WindowS + DrainS). With fixed work (iterations) the window is the
	// elapsed time. WindowResponses (any status) finished within the
	// window: throughput counts them, over it. All absent in results
	// written before they were.
	WindowS         float64 `json:"window_s,omitempty"`
	DrainS          float64 `json:"drain_s,omitempty"`
	WindowResponses int64   `json:"window_responses,omitempty"`

	// VUs is the most VUs (quick mode: connections) the workload could run
	// at once, VUsPeak the most that were in an iteration at once, VUsAvg
	// their average (of the per-second series, after any warmup).
	VUs     int     `json:"vus,omitempty"`
	VUsPeak int     `json:"vus_peak,omitempty"`
	VUsAvg  float64 `json:"vus_avg,omitempty"`

	// TLS is the TLS handshakes of new connections (after connect_ms, which
	// is the TCP connection's alone), TLSResumed how many of them resumed
	// a session; absent when no handshake was made.
	TLS        *Percentiles `json:"tls_ms,omitempty"`
	TLSResumed int64        `json:"tls_resumed,omitempty"`

	// Status counts the responses by status code ({"200": 95, "302": 5}):
	// a run of redirects or 304s is not all OK. Absent when no response came.
	Status map[int]int64 `json:"status,omitempty"`
}

// Checks count the outcomes of expectations and captures.
type Checks struct {
	Passed int64 `json:"passed"`
	Failed int64 `json:"failed"`
}

// Rate is the fraction that passed, or 1 when there were none.
func (c Checks) Rate() float64 {
	if c.Passed+c.Failed == 0 {
		return 1
	}
	return float64(c.Passed) / float64(c.Passed+c.Failed)
}

// Errors counts failed requests by class. Total = every class below.
type Errors struct {
	Total    int64 `json:"total"`
	Connect  int64 `json:"connect"`
	Timeout  int64 `json:"timeout"`
	Reset    int64 `json:"reset"`
	Protocol int64 `json:"protocol"`
	TLS      int64 `json:"tls"`
	// HTTP/2: exchanges the server reset (RST_STREAM), and those lost to a
	// GOAWAY (the server closed the connection before their response).
	Stream    int64 `json:"stream,omitempty"`
	Goaway    int64 `json:"goaway,omitempty"`
	Status4xx int64 `json:"status_4xx"`
	Status5xx int64 `json:"status_5xx"`
	// Examples give the first message of each failure class: why there was
	// no response ("connect: connection refused", "body over 1 MiB").
	Examples map[string]string `json:"examples,omitempty"`
}

// Percentiles of a duration distribution, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Late describes requests of an open workload that went out after their due
// time. Their latency still counts from the due time.
type Late struct {
	Count int64   `json:"count"` // sent 1 ms or more after due
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`

	// Waited arrivals found every VU (connection) busy and waited for one:
	// quick mode's --rate with -c. A plan's open load drops them instead.
	Waited int64 `json:"waited,omitempty"`
}

// Step is the figures of one step of one scenario. Quick mode has one.
type Step struct {
	Scenario   string         `json:"scenario"`
	Name       string         `json:"step"`
	Summary    Summary        `json:"summary"`
	Histograms StepHistograms `json:"histograms"`
	// FailedCheck is the step's first failed check and the response it
	// failed on, to show why.
	FailedCheck *FailedCheck `json:"first_failed_check,omitempty"`
	// ChecksByName counts the step's checks one by one, in the plan's
	// order (its expect: status, headers, each contains text, json paths;
	// then its captures; then the engine's own, such as "request built"):
	// their sums are Summary.Checks. The step's own checks are always
	// listed (0 and 0: it never ran), the engine's own (EngineChecks) only
	// when they failed. Absent in results written before checks were
	// counted by name, and for a step that has no checks (quick mode's).
	ChecksByName []NamedCheck `json:"checks_by_name,omitempty"`
}

// NamedCheck is one check of a step and its outcomes. Its name is the one
// a failure names (FailedCheck.Check): "status is 200", "body contains
// Welcome", "capture token".
type NamedCheck struct {
	Name   string `json:"name"`
	Passed int64  `json:"passed"`
	Failed int64  `json:"failed"`
}

// ScenarioTotals are one scenario's figures: its steps together.
type ScenarioTotals struct {
	Scenario string `json:"scenario"`
	// Load is the kind of the scenario's own load ("closed", "open",
	// "ramping VUs", "ramping arrival rate") when the plan's scenarios had
	// loads of their own, all at once; then Summary's window, vus,
	// vus_peak, dropped, late and unsent are the scenario's own. Empty
	// when they shared the plan's load by weight.
	Load    string  `json:"load,omitempty"`
	Summary Summary `json:"summary"`
	// PerSecond, with a load of its own, are the scenario's responses (of
	// any status) in each whole second of the run after any warmup: a
	// duet's per-second ratio B/A is made of them. Absent otherwise.
	PerSecond []int64 `json:"responses_per_second,omitempty"`
}

// CheckRequestBuilt is the check a step fails when its request could not be
// made from its templates (a capture found nothing, say): nothing was sent.
const CheckRequestBuilt = "request built"

// CheckRequestSize is the check a step fails when a header, the URL or the
// body its templates render is over its limit (http.max_request_header,
// max_url, max_request_body): nothing was sent.
const CheckRequestSize = "request within size limits"

// CheckRedirect is the check a step fails when the Location of its
// redirect could not be followed.
const CheckRedirect = "the redirect could be followed"

// EngineChecks are the engine's own checks of every request step, in
// their order after the step's own in Step.ChecksByName.
var EngineChecks = [...]string{CheckRequestBuilt, CheckRequestSize, CheckRedirect}

// FailedCheck is a check that failed and what the server answered: its
// status, the part of its body around what the check looked for (512
// bytes at most, secrets masked), and where the whole response is kept.
type FailedCheck struct {
	Check  string `json:"check"`
	Status int    `json:"status"` // 0: no response
	Error  string `json:"error,omitempty"`
	Body   string `json:"body,omitempty"`
	// Shown says which part of the body Body is: around "Welcome", the
	// page's flash or error element, the value at $.user, the start of the
	// page's visible text.
	Shown string `json:"shown,omitempty"`
	// File is the response kept whole (status line, headers, the body up to
	// 256 KiB, secrets masked), relative to the run's directory:
	// failures/login.http.
	File string `json:"file,omitempty"`
	// Response is File's content, for the run that made it; results read
	// back do not have it (read File).
	Response string `json:"-"`
}

// FailuresDir is the directory of a run's kept failing responses.
const FailuresDir = "failures"

// StepHistograms are a step's distributions in HdrHistogram's V2 compressed
// encoding (base64), by status class: "ok" (1xx to 3xx), "4xx", "5xx", and
// "failed" (no response). Two results merge exactly by merging these.
type StepHistograms struct {
	Latency map[string]string `json:"latency,omitempty"`
	Service map[string]string `json:"service,omitempty"`
	TTFB    string            `json:"ttfb,omitempty"`
}

// RunHistograms are the run-wide distributions, encoded as in StepHistograms.
type RunHistograms struct {
	Connect  string `json:"connect,omitempty"`
	TLS      string `json:"tls,omitempty"` // TLS handshakes
	Lateness string `json:"lateness,omitempty"`
}

// Point is one interval of the time series, normally one second.
type Point struct {
	T          float64 `json:"t"`   // end of the interval, seconds since the start
	Len        float64 `json:"len"` // its length in seconds (the last one may be short)
	Requests   int64   `json:"requests"`
	Responses  int64   `json:"responses"` // of any status
	Errors     int64   `json:"errors"`
	RPS        float64 `json:"rps"` // responses per second
	P50        float64 `json:"p50_ms"`
	P90        float64 `json:"p90_ms"`
	P95        float64 `json:"p95_ms"`
	P99        float64 `json:"p99_ms"`
	Max        float64 `json:"max_ms"`
	Late       int64   `json:"late"`
	Dropped    int64   `json:"dropped"`
	Iterations int64   `json:"iterations"`
	Active     int64   `json:"active"` // exchanges in flight at the end of the interval
	Bytes      int64   `json:"bytes"`
	// Hist is the interval's latency histogram (HdrHistogram V2 compressed,
	// base64), kept only in an execution segment's result (--segment K/N)
	// and in merges of segments, so that `loadlab merge` computes each
	// second's percentiles exactly instead of bounding them.
	Hist string `json:"hist,omitempty"`
}

// Server is the resource use of the server under test over the measured
// window, sampled every 250 ms over its whole process tree.
type Server struct {
	Command string `json:"command"`
	PID     int    `json:"pid"`
	Log     string `json:"log,omitempty"` // the log file, beside result.json when --out is given
	// CPU in percent of one core (150 is one and a half cores) and of the
	// machine (the CPUs or the cgroup quota the server may use).
	CPUAvg        float64 `json:"cpu_avg_pct"`
	CPUPeak       float64 `json:"cpu_peak_pct"`
	MachineAvg    float64 `json:"machine_cpu_avg_pct"`
	MachinePeak   float64 `json:"machine_cpu_peak_pct"`
	Cores         float64 `json:"cores"`
	CPUUser       float64 `json:"cpu_user_s"`
	CPUSystem     float64 `json:"cpu_system_s"`
	RSSAvg        int64   `json:"rss_avg_bytes"`
	RSSPeak       int64   `json:"rss_peak_bytes"`
	PSSAvg        int64   `json:"pss_avg_bytes"`
	PSSPeak       int64   `json:"pss_peak_bytes"`
	SwapPeak      int64   `json:"swap_peak_bytes"`
	MajorFaults   int64   `json:"major_faults"`
	ThreadsPeak   int     `json:"threads_peak"`
	FDsPeak       int     `json:"fds_peak"`
	ProcessesPeak int     `json:"processes_peak"`
	// CPUWaitPct is the share, in percent, of the time the server's threads
	// wanted a CPU that they spent waiting for one (their run-queue delay,
	// /proc/PID/task/TID/schedstat, over that delay plus their CPU time):
	// a neighbour on the same CPUs raises it, as do more busy threads than
	// CPUs (alike in every run of one setting).
	CPUWaitPct float64 `json:"cpu_wait_pct"`
	// Unmeasured names the figures above that the platform could not measure
	// ("pss", "swap", "major_faults", "fds", "cpu_wait"): outside Linux they
	// read 0 (PSS reads RSS) but are unknown. Absent on Linux.
	Unmeasured []string `json:"unmeasured,omitempty"`
	Quota      *Quota   `json:"memory_quota,omitempty"`
	// Limits are server.limits, when the plan set them.
	Limits *Limits `json:"limits,omitempty"`
	// Exit says how the server ended when it ended by itself mid-run.
	Exit    string        `json:"exit,omitempty"`
	LogTail []string      `json:"log_tail,omitempty"`
	Series  []ServerPoint `json:"series"`
}

// Limits are the limits the server ran under: as the plan set them, as the
// kernel enforced them (read back), and what the cgroups measured over the
// server's whole life (its start and warmup included).
type Limits struct {
	Set       string `json:"set"`       // as the plan gave them: "cpus 1, memory 512 MiB"
	Mechanism string `json:"mechanism"` // "cgroup v1", "cgroup v2", "affinity", "cgroup v1 + affinity"
	// In force: the CPUs the server may run on, its CPU quota in CPUs, its
	// memory limit, and its swap limit (absent: not limited by loadlab).
	CPUList  string  `json:"cpu_list,omitempty"`
	CPUQuota float64 `json:"cpu_quota,omitempty"`
	Memory   int64   `json:"memory_bytes,omitempty"`
	Swap     *int64  `json:"swap_bytes,omitempty"`
	// Measured by the memory cgroup: its peak (page cache included), the
	// times the limit was hit, and the processes the OOM killer killed.
	MemoryPeak    int64 `json:"memory_peak_bytes,omitempty"`
	MemoryFailcnt int64 `json:"memory_limit_hits,omitempty"`
	OOMKills      int64 `json:"oom_kills,omitempty"`
	// CPUThrottled is the time the CPU quota held the server back.
	CPUThrottled *Throttled `json:"cpu_throttled,omitempty"`
	// OOM says how the server was killed at its memory limit, if it was.
	OOM string `json:"oom,omitempty"`
}

// Throttled is CFS throttling under a CPU quota (cpu.stat).
type Throttled struct {
	Seconds          float64 `json:"seconds"`
	Periods          int64   `json:"periods"`           // 100 ms periods in which the server was runnable
	ThrottledPeriods int64   `json:"throttled_periods"` // of which it used up its quota
}

// Quota compares memory (PSS, which counts pages shared by forked workers
// once) with a hosting platform's memory limit.
type Quota struct {
	Bytes int64 `json:"bytes"`
	// Peak and Average are what is checked: PSS plus swap.
	Peak            int64 `json:"peak_bytes"`
	Average         int64 `json:"average_bytes"`
	PeakExceeded    bool  `json:"peak_exceeded"`
	PeakOver        int64 `json:"peak_over_bytes"`
	AverageExceeded bool  `json:"average_exceeded"`
	AverageOver     int64 `json:"average_over_bytes"`
}

// ServerPoint is one sample of the server's resource use.
type ServerPoint struct {
	T           float64 `json:"t"` // seconds since the load started
	CPU         float64 `json:"cpu_pct"`
	RSS         int64   `json:"rss_bytes"`
	PSS         int64   `json:"pss_bytes"`
	Swap        int64   `json:"swap_bytes"`
	MajorFaults int64   `json:"major_faults"`
	Threads     int     `json:"threads"`
	FDs         int     `json:"fds"`
	Processes   int     `json:"processes"`
}

// Generator is loadlab's own resource use during the run.
type Generator struct {
	CPUAvg  float64 `json:"cpu_avg_pct"` // percent of one core
	CPUPeak float64 `json:"cpu_peak_pct"`
	Cores   float64 `json:"cores"` // the CPUs loadlab may use
	RSSPeak int64   `json:"rss_peak_bytes"`
	// CPUWaitPct is loadlab's own run-queue wait, as Server.CPUWaitPct
	// (0 outside Linux, where it is unmeasured). loadlab mostly sleeps, so
	// the waits of its wake-ups are a large share of its little CPU time:
	// 20 to 100% on a shared 2-core machine.
	CPUWaitPct float64 `json:"cpu_wait_pct"`
}

// FoundServer is a loopback target's server that loadlab did not start,
// found by the socket it listens on.
type FoundServer struct {
	PID     int    `json:"pid"`
	Command string `json:"command,omitempty"`
	// CPUPct is its CPU, as a percentage of all the machine's CPUs: set
	// in ServersFound, where ServerPct is their sum.
	CPUPct float64 `json:"cpu_pct,omitempty"`
	// CPUWaitPct is its run-queue wait, as Server.CPUWaitPct (Linux).
	CPUWaitPct float64 `json:"cpu_wait_pct"`
}

// Machine is the whole machine's CPU over the measured window, from
// /proc/stat (gopsutil outside Linux), as percentages of all its CPUs.
type Machine struct {
	CPUs int `json:"cpus"` // online CPUs
	// BusyPct is everything that ran; LoadlabPct loadlab itself, ServerPct
	// the server under test's tree (0 when loadlab did not start it);
	// OthersPct the rest: BusyPct less the two.
	BusyPct    float64 `json:"busy_pct"`
	LoadlabPct float64 `json:"loadlab_pct"`
	ServerPct  float64 `json:"server_pct"`
	OthersPct  float64 `json:"others_pct"`
	// StealPct is the CPU time the hypervisor gave the virtual CPUs to
	// others while they wanted to run.
	StealPct float64 `json:"steal_pct"`
	// ServerUnwatched: loadlab did not start the server and the target is on
	// a loopback address, so the server is likely among the others.
	ServerUnwatched bool `json:"server_unwatched,omitempty"`
	// ServerFound is the server of a loopback target that loadlab did not
	// start, found by its listening socket (Linux): its CPU is ServerPct,
	// not among the others'. Nil when loadlab started the server or found
	// none.
	ServerFound *FoundServer `json:"server_found,omitempty"`
	// ServersFound, when the load went to the listening sockets of more
	// than one process (a duet's two servers), are each of them with its
	// own CPU; ServerFound is the first and ServerPct their sum, so that
	// neither side's CPU counts as a neighbour's.
	ServersFound []FoundServer `json:"servers_found,omitempty"`
	// Unmeasured lists what this platform cannot read: "steal" outside
	// Linux (it reads 0 there).
	Unmeasured []string `json:"unmeasured,omitempty"`
}

// ThresholdResult is one threshold and its verdict.
type ThresholdResult struct {
	Text     string  `json:"threshold"`
	Measured float64 `json:"measured"` // in the metric's unit: ms, a fraction, bytes, per second
	Pass     bool    `json:"pass"`
	Detail   string  `json:"detail"`
	// Default: not written in the plan, but loadlab's own (checks == 100%,
	// which a checks threshold in the plan replaces).
	Default bool `json:"default,omitempty"`
}

// Warning says why a run's figures may not be trusted.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Duration is a time.Duration written as a Go duration string ("1m30s").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Encode writes r as indented JSON.
func Encode(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Decode reads a result and checks its schema version.
func Decode(rd io.Reader) (*Result, error) {
	var r Result
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("not a loadlab result: %w", err)
	}
	if r.Schema != SchemaResult {
		return nil, fmt.Errorf("unsupported result schema %q (this loadlab reads %s)", r.Schema, SchemaResult)
	}
	return &r, nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// Sum is the hash of the fingerprint's compared fields (all but Hash and
// Plan): 16 hex digits of their SHA-256.
func (f *Fingerprint) Sum() string {
	h := sha256.New()
	for _, s := range append([]string{f.Workload, f.Shape, f.Target, f.Server}, f.Steps...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
