package engine

import (
	"errors"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/result"
)

// Program is what the VUs run: weighted scenarios of steps. Quick mode is a
// program of one scenario with one request step.
type Program struct {
	Scenarios []*Scenario
	// Steps lists every request step of every scenario; a step's ID is its
	// index here, and the metrics are kept per ID.
	Steps []StepInfo
	// NewState, if set, makes the per-VU state of a scripted program
	// (variables, cookies), kept in VU.State.
	NewState func(v *VU) any
	// Begin, if set, runs when a VU starts an iteration, after its scenario
	// is picked: reset variables, take data rows. An error wrapping ErrStop
	// ends the run: no iteration starts after it.
	Begin func(v *VU) error
	// Secrets, if set, appends to dst the secret values the VU holds now
	// (captured tokens), to mask in the failing response CheckFailed keeps.
	// It is called only then: once per step and worker.
	Secrets func(v *VU, dst []string) []string
}

// ErrStop, wrapped by Program.Begin's error, ends the run gracefully: a
// unique data source has run out, say. The error's text says why.
var ErrStop = errors.New("stop")

// StepInfo names a request step for the results.
type StepInfo struct {
	Scenario string
	Name     string
	// Checks names the step's own checks (its expectations and captures)
	// by index, as a failure names them: the After of its request counts
	// check i as VU.Check(ID, i, ...). The engine's own checks of every
	// step (OwnChecks) come after them.
	Checks []string
}

// The engine's own checks of a request step, after the step's own
// (StepInfo.Checks): a request that could not be built, or was over its
// size limits, and a redirect that could not be followed.
const (
	checkBuilt = iota
	checkSize
	checkRedirect
	numOwnChecks
)

// CheckRedirect is the check a step fails when the Location of its
// redirect could not be followed.
const CheckRedirect = result.CheckRedirect

// OwnChecks names the engine's own checks, in their order.
var OwnChecks [numOwnChecks]string = result.EngineChecks

// checkCounts is each step's number of checks, for metrics.Recorder.CountChecks.
func (p *Program) checkCounts() []int {
	out := make([]int, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = len(s.Checks) + numOwnChecks
	}
	return out
}

// ownCheck is the index of the engine's own check k of step id.
func (p *Program) ownCheck(id, k int) int {
	if id < len(p.Steps) {
		return len(p.Steps[id].Checks) + k
	}
	return k
}

// Scenario is one user journey.
type Scenario struct {
	Name   string
	Weight int
	Steps  []*Step
}

// Step is a request, a socket, a pause or a parallel group. Exactly one of
// Think, Request, Socket and Parallel is set.
type Step struct {
	ID   int // index into Program.Steps; unused for pauses
	Name string

	// Think returns how long the VU pauses.
	Think func(v *VU) time.Duration

	Request *RequestStep

	// Socket, if set instead of Request, is a step that holds a socket of
	// its own (a WebSocket): see SocketStep.
	Socket *SocketStep

	// Parallel, if set instead, is a group of request steps sent at once:
	// see ParallelStep. The group's own ID is unused.
	Parallel *ParallelStep
}

// ParallelStep sends the requests of its steps at once, at most Max at a
// time, as a browser fetches a page's assets: each in flight on a lane of
// the VU's own, with its connection to each target. Lane 0 uses the VU's
// usual connections; the others' are opened when first needed, kept for the
// VU's later iterations (keep-alive) and closed with its own, so a VU has at
// most Max connections to a target. When a lane's request ends, the lane
// takes the group's next one; the iteration goes on once every request has
// ended. Each step (all request steps) is recorded under its own ID, its
// latency counted from when its lane sent it. A step whose After returns
// false, or whose request cannot be built, starts no more of the group's
// requests and ends the iteration once those in flight have ended.
type ParallelStep struct {
	Max   int
	Steps []*Step
}

// RequestStep sends one request and looks at the response.
type RequestStep struct {
	Target *httpx.Origin
	// Static is the encoded request when it never changes; otherwise Build
	// appends the encoded request for this VU to dst.
	Static []byte
	// StaticBody, with Static, is a body sent from a file after Static's
	// head (quick mode's --body-file over what is held in memory).
	StaticBody *httpx.BodyFile
	Build      func(v *VU, dst []byte) ([]byte, error)
	// Method facts the connection needs.
	Head       bool
	Idempotent bool
	CloseAfter bool
	// Keep asks for the header block and body, for After.
	Keep bool
	// After inspects the response: checks and captures. It returns false to
	// end the iteration early (a failed check that is marked fatal, say).
	After func(v *VU, x *httpx.Exchange) bool
	// Redirect, if set, is asked about every 3xx response: it appends the
	// request that follows the redirect to dst and says where it goes, or
	// returns nil to take the response as it is. MaxRedirects bounds the hops.
	Redirect     func(v *VU, x *httpx.Exchange, dst []byte) ([]byte, *httpx.Origin, error)
	MaxRedirects int
}

// QuickProgram is the program of `loadlab run --url`: one request, again and again.
func QuickProgram(name string, target *httpx.Origin, request []byte, method string, closeAfter, keep bool) *Program {
	step := &Step{Name: name, Request: &RequestStep{
		Target:     target,
		Static:     request,
		Head:       method == "HEAD",
		Idempotent: httpx.Idempotent(method),
		CloseAfter: closeAfter,
		Keep:       keep,
	}}
	return &Program{
		Scenarios: []*Scenario{{Name: "default", Weight: 1, Steps: []*Step{step}}},
		Steps:     []StepInfo{{Scenario: "default", Name: name}},
	}
}
