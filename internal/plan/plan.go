// Package plan loads a plan file (YAML) into typed, validated structs, and
// compiles its scenarios into the engine's program, whose per-VU runtime is
// package journey. Every problem it finds is
// reported with file:line:col and what was expected, and all of them are
// found before any load is sent.
//
// The format is documented in docs/plan.md; the structs here mirror it.
// Loading goes: read the file, parse YAML into positioned nodes, apply
// command-line overrides (--set), decode and validate each section, read data
// files, then compile templates, captures and expectations (package expr)
// into journey steps and an engine.Program. Nothing about the plan is parsed
// again while the load runs; what a VU does with it (requests, cookies,
// captures, checks, redirects, data rows) is journey's.
package plan

import (
	"net/url"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/spec"
	"github.com/loadlab/loadlab/internal/threshold"
)

// Plan is a loaded plan file.
type Plan struct {
	File   string // as given
	Dir    string // relative paths in the plan are relative to this
	Source []byte // the file as read, for the record

	Name       string
	Target     *url.URL // base for relative step URLs; nil when every step has an absolute URL
	Vars       []Var
	Data       []*Feeder
	Scenarios  []*Scenario
	Load       Workload
	Thresholds []Threshold
	HTTP       HTTP
	Server     *Server
	Experiment *Experiment // params and friends; nil for a single run
	Capacity   *Capacity   // the capacity: section; nil without one
	// Notices are what loadlab decided for the user while loading, to be
	// shown before any run: "the first value, 1, is the baseline".
	Notices []string

	opts Options // as loaded, for rendering later
	// baselineParams: opts.Params are the baseline's, filled in to check
	// the templates, not a point's given by the caller.
	baselineParams bool
	// derived are the values templates make from secrets (derivedSecrets).
	derived     *derived
	targetGiven bool // the plan has a target: key (reported there if it is bad)
}

// Var is a plan variable.
type Var struct {
	Name  string
	Value any // string, int, float64 or bool
	// Secret: written secret: true, or named as a credential by
	// secret.Name (password, api_key): either way its value is masked
	// everywhere the plan is shown.
	Secret bool
	// Env is the environment variable the value is read from, written
	// { env: NAME }, or "".
	Env string
	Pos Pos
	// where the value is written, and as written, for masking
	valuePos  Pos
	valueText string
}

// Pick is how a data feeder hands rows to iterations.
type Pick string

const (
	PickSequential Pick = "sequential" // row after row, starting over at the end
	PickUnique     Pick = "unique"     // each row once in the whole run; then no new iterations
	PickRandom     Pick = "random"     // any row, with replacement
	PickVU         Pick = "vu"         // VU n (from 0) always row n+1: one user per VU
)

// Feeder is a CSV data source.
type Feeder struct {
	Name    string
	File    string
	Pick    Pick
	Columns []string
	Rows    [][]string
	Secret  map[string]bool // columns whose values are masked
	Pos     Pos
	PickPos Pos // where pick: is, when given
}

// Scenario is one user journey.
type Scenario struct {
	Name   string
	Weight int
	Steps  []*Step
	Pos    Pos
	// Load, if set, is the scenario's own load: every scenario then has
	// one, they all run at once, and the plan's Load is empty.
	Load *Workload

	weightPos Pos   // where weight: is, when given
	loadNode  *node // Load as written, until it is decoded
}

// Step is a request or a pause.
type Step struct {
	Pos  Pos
	Name string

	// A pause: Think to ThinkMax (equal for a fixed pause).
	Think, ThinkMax time.Duration
	IsThink         bool

	// A request.
	Method  string
	URL     Text
	Headers []Field
	Query   []Field
	JSON    *node // a JSON body, with templates in strings
	Form    []Field
	// Multipart is a multipart/form-data body: text fields and files.
	Multipart *Multipart
	Body      *Text
	// BodyFile is body_file:, a file sent as the body as it is (no
	// templates), read when the plan compiles: a regular file of at most
	// http.max_request_body, relative to the plan's directory.
	BodyFile  *Text
	Expect    *Expect
	Captures  []CaptureSpec
	Redirects *bool // follow redirects; nil: the plan's default

	// A WebSocket (ws: URL): its do: list; Captures are its receives'.
	WS *WSSpec

	// Group, if set, is the parallel group (parallel:) the request is in:
	// the steps of a group are consecutive in their scenario's Steps.
	Group *Group
}

// Multipart is a multipart: body as written: its text fields, then its
// files, each a part of a multipart/form-data body whose boundary loadlab
// picks.
type Multipart struct {
	Fields []Field
	Files  []FilePart
	Pos    Pos
}

// FilePart is a file of a multipart: body: its field name, the file name
// and type sent with it, and its content, a template (content:) or a file
// read when the plan compiles (file:, relative to the plan's directory).
type FilePart struct {
	Name, Filename, ContentType string
	Content                     *Text
	File                        *Text
	Pos                         Pos
}

// Group is a parallel: step as written: its requests are sent at once, at
// most Max at a time, on connections of the VU's own.
type Group struct {
	Name string
	Max  int
	Pos  Pos
}

// Text is a template as written, with where it was written.
type Text struct {
	Src string
	Pos Pos
	// col0 is where the template's first character is on its line: past the
	// quote of a quoted string.
	quoted bool
	// written is the text in the plan file when the plan's constants were
	// rendered into Src when it loaded (http.headers, say); else "".
	written string
}

// Written is the template's text as the plan file has it.
func (t Text) Written() string {
	if t.written != "" {
		return t.written
	}
	return t.Src
}

// Field is a name and a template: a header, a query parameter, a form field.
type Field struct {
	Name  string
	Value Text
	Pos   Pos
}

// Expect are a step's expectations; each becomes a check.
type Expect struct {
	Status   []StatusMatch
	Headers  []Field // exact value
	Contains []Text
	JSON     []Field // JSONPath: expected value
	Pos      Pos
}

// StatusMatch matches one status code, or a class such as 2xx (Code 200, Class true).
type StatusMatch struct {
	Code  int
	Class bool
}

// CaptureSpec saves a value from a response into a variable.
type CaptureSpec struct {
	Var  string
	Kind string // json, header, cookie, regex, css
	Arg  string
	Attr string
	Pos  Pos
	ArgP Pos
}

// LoadKind is the shape of the load.
type LoadKind string

const (
	LoadClosed   LoadKind = "closed"
	LoadOpen     LoadKind = "open"
	LoadRampVUs  LoadKind = "ramping VUs"
	LoadRampRate LoadKind = "ramping arrival rate"
)

// Workload describes how much load and when.
type Workload struct {
	Kind LoadKind
	// closed
	VUs        int
	Iterations int64 // per VU
	Duration   time.Duration
	// open
	Rate   quantity.Rate
	MaxVUs int
	// stages
	StartVUs   int
	StartRate  quantity.Rate
	VUStages   []VUStage
	RateStages []RateStage
	Grace      time.Duration
	Pos        Pos
}

// MostVUs is the most VUs the load may have at once, each with at least
// one connection.
func (w *Workload) MostVUs() int {
	n := max(w.VUs, w.MaxVUs, w.StartVUs)
	for _, s := range w.VUStages {
		n = max(n, s.Target)
	}
	return n
}

// Length is how long the load lasts when that is fixed by time (a closed
// load with a duration, an open rate, stages), 0 when it ends with its
// iterations.
func (w *Workload) Length() time.Duration {
	var total time.Duration
	for _, s := range w.VUStages {
		total += s.Over
	}
	for _, s := range w.RateStages {
		total += s.Over
	}
	if total > 0 {
		return total
	}
	return w.Duration
}

// VUStage ramps or holds the number of VUs.
type VUStage struct {
	Target int
	Over   time.Duration
}

// RateStage ramps or holds the arrival rate.
type RateStage struct {
	Target quantity.Rate
	Over   time.Duration
}

// Threshold is a pass/fail criterion.
type Threshold struct {
	Text string
	Pos  Pos
	T    *threshold.Threshold
}

// HTTP are the options of every request.
type HTTP struct {
	Timeout         time.Duration
	FollowRedirects bool
	MaxRedirects    int
	KeepAlive       bool
	Insecure        bool
	MaxBody         int64
	MaxHeader       int64
	// MaxRequestHeader, MaxURL and MaxRequestBody bound what a step's
	// templates render: each header's value, the request target (path and
	// query), the body (DefaultMaxRequestHeader, DefaultMaxURL,
	// DefaultMaxRequestBody unless http: sets them).
	MaxRequestHeader, MaxURL, MaxRequestBody int
	Headers                                  []Field
	// AcceptEncoding is sent with every request unless a step sets its own
	// (compression: true, the default, sends httpx.AcceptEncoding, as a
	// browser does; false sends none; a list sends those codings).
	AcceptEncoding string
	// TLS are http.tls's settings for every https origin (nil: the defaults).
	TLS *httpx.TLSSettings
	// Version is 2 for HTTP/2 (http.version: 2): h2 by ALPN for https
	// targets, h2c with prior knowledge for http; a VU's requests share its
	// connection, one stream at a time. Zero is HTTP/1.1 (http.version: 1.1).
	Version int
}

// The experiment section's types are spec's, which the analysis reads
// without linking the compiler that this package still holds.
type (
	Experiment    = spec.Experiment
	CompareReason = spec.CompareReason
	Vary          = spec.Vary
	Param         = spec.Param
	ParamValue    = spec.ParamValue
	Box           = spec.Box
)

const (
	CompareNamed    = spec.CompareNamed
	CompareBaseline = spec.CompareBaseline
	CompareLast     = spec.CompareLast
	CompareOlder    = spec.CompareOlder
	OneAtATime      = spec.OneAtATime
	Matrix          = spec.Matrix
)

// Head is what an experiment's outcome keeps of the plan: its name, its
// text with secrets masked, and its inputs.
func (p *Plan) Head() spec.Head {
	return spec.Head{Name: p.Name, Text: p.Masked(), Inputs: p.Inputs()}
}
