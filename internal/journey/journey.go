// Package journey runs one VU's journey through a compiled plan: it builds
// each step's request from its templates, follows redirects, keeps the VU's
// cookies, applies captures and checks, and picks the VU's data rows.
//
// The plan package decodes, validates and compiles a plan file into the
// types here (Runner, Step, Check, Capture, JSON, Source); the engine runs
// them through its Program and RequestStep hooks. Runner and the compiled
// steps are shared by every VU and never change during a run; a VU's
// variables, cookie jar and scratch buffers are its State.
package journey

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/secret"
	execseg "github.com/loadlab/loadlab/internal/segment"
)

// Runner holds what every VU of a program shares: the scope its templates
// were compiled in, the slots the runtime sets, the scenarios with their data
// sources, the targets redirects may reach, and the seed of the template
// functions' generators.
type Runner struct {
	// Scope is the scope every template of the program was compiled in (or a
	// clone of it): each VU's State holds values for its slots.
	Scope *expr.Scope
	// VUSlot, IterationSlot and ScenarioSlot are where {{ vu }},
	// {{ iteration }} and {{ scenario }} live.
	VUSlot, IterationSlot, ScenarioSlot int
	// CaptureSlots are cleared when an iteration begins.
	CaptureSlots []int
	// SecretSlots hold captured values that are credentials (a capture
	// named as one, or one a credential header is made from): masked in
	// the failing responses kept.
	SecretSlots []int
	// SecretExprs make values from captured credentials with a function or
	// an operator (upper(session_token)): their values are secrets too.
	SecretExprs []*expr.Template
	// Learned, if set, hears each value captured into a SecretSlot
	// (Capture.Secret), so that server.log masks it from then on.
	Learned   *secret.Learned
	Scenarios []*Scenario
	// Targets are the resolved targets by "scheme://host": a redirect may go
	// to any of them and nowhere else.
	Targets map[string]*httpx.Origin
	// Seed seeds uuid, randomInt, randomString and random data picks: a VU's
	// generators restart at every iteration from the seed, the VU's number
	// and the iteration's, so that the same seed sends the same bodies. Zero
	// picks one.
	Seed uint64
}

// Scenario is one scenario's engine form and the data sources its steps read.
type Scenario struct {
	Engine  *engine.Scenario
	Sources []*Source
	name    any // Engine.Name, boxed once rather than on every iteration
}

// NewScenario pairs an engine scenario with the data sources it reads.
func NewScenario(es *engine.Scenario, sources []*Source) *Scenario {
	return &Scenario{Engine: es, Sources: sources, name: es.Name}
}

// Install sets the program's per-VU hooks: NewState and Begin.
func (r *Runner) Install(p *engine.Program) {
	if r.Seed == 0 {
		r.Seed = rand.Uint64()
	}
	for _, sc := range r.Scenarios {
		for _, src := range sc.Sources {
			src.readers = 0
		}
	}
	for _, sc := range r.Scenarios {
		for _, src := range sc.Sources {
			src.readers++
		}
	}
	p.NewState = func(*engine.VU) any { return r.NewState() }
	p.Begin = func(v *engine.VU) error {
		return r.begin(v.State.(*State), v.ID, v.Iteration(), v.Scenario(), unitOf(v))
	}
	p.Secrets = func(v *engine.VU, dst []string) []string { return r.Secrets(v.State.(*State), dst) }
}

// learn adds a captured credential to l, as text.
func learn(l *secret.Learned, v any) {
	switch v := v.(type) {
	case nil:
	case string:
		l.Add(v)
	default:
		l.Add(fmt.Sprint(v))
	}
}

// Secrets appends the secret values a VU's state holds now: its captured
// credentials (SecretSlots), as text.
func (r *Runner) Secrets(s *State, dst []string) []string {
	for _, slot := range r.SecretSlots {
		switch v := s.vars.Get(slot).(type) {
		case nil:
		case string:
			dst = append(dst, v)
		default:
			dst = append(dst, fmt.Sprint(v))
		}
	}
	return s.derivedSecrets(dst)
}

// derivedSecrets appends the values of the VU's SecretExprs now.
func (s *State) derivedSecrets(dst []string) []string {
	for _, t := range s.secretExprs {
		if v, err := t.String(s.vars); err == nil && v != "" {
			dst = append(dst, v)
		}
	}
	return dst
}

// NewState makes a VU's state.
func (r *Runner) NewState() *State {
	s := &State{vars: r.Scope.NewState(), vu: -1, learned: r.Learned, secretExprs: r.SecretExprs}
	s.rng = rand.New(&s.pcg)
	return s
}

// Begin starts an iteration: it clears the captures and cookies, sets vu,
// iteration and scenario, restarts the VU's generators (the template
// functions' and random data picks') and takes a row of each data source the
// scenario reads. An error wrapping engine.ErrStop ends the run (a unique
// source ran out).
func (r *Runner) Begin(s *State, vu int, iteration int64, es *engine.Scenario) error {
	return r.begin(s, vu, iteration, es, workUnit{n: -1, groups: 1})
}

// workUnit is an iteration's unit of work in the whole plan
// (engine.VU.Unit) within its workload (engine.VU.Group); n is -1 when it
// is not known.
type workUnit struct {
	n             int64
	group, groups int
}

func unitOf(v *engine.VU) workUnit {
	g, n := v.Group()
	return workUnit{n: v.Unit(), group: g, groups: n}
}

// begin is Begin for the iteration that is the plan's unit of work u.
func (r *Runner) begin(s *State, vu int, iteration int64, es *engine.Scenario, u workUnit) error {
	s.vars.Clear(r.CaptureSlots)
	if len(s.why) > 0 {
		clear(s.why)
	}
	s.jar.Reset()
	if s.vu != vu { // an open workload's VU takes a number from a pool per journey
		s.vu = vu
		s.vars.Set(r.VUSlot, vu)
	}
	if r.Scope.Reads(r.IterationSlot) { // boxing an iteration past 255 allocates
		s.vars.Set(r.IterationSlot, int(iteration))
	}
	stream := uint64(vu)<<32 | uint64(uint32(iteration))
	s.vars.Seed(r.Seed, stream)
	s.pcg.Seed(^r.Seed, stream) // another sequence than the templates'

	var sc *Scenario
	for _, x := range r.Scenarios {
		if x.Engine == es {
			sc = x
			break
		}
	}
	if sc == nil {
		return fmt.Errorf("scenario %q is not the runner's", es.Name)
	}
	s.vars.Set(r.ScenarioSlot, sc.name)
	for _, src := range sc.Sources {
		unit := u.n
		if unit >= 0 && src.readers > 1 && u.groups > 1 {
			// Scenarios of loads of their own number their units
			// each from 0: interleaved, they stay apart.
			unit = unit*int64(u.groups) + int64(u.group)
		}
		row, err := src.pick(s.rng, vu, unit)
		if err != nil {
			return err
		}
		for i, slot := range src.Slots {
			if i < len(row) {
				s.vars.Set(slot, row[i])
			} else {
				s.vars.Set(slot, "")
			}
		}
	}
	return nil
}

// Pick is how a data source hands rows to iterations.
type Pick int

const (
	Sequential Pick = iota // row after row, starting over at the end
	Unique                 // each row once in the whole run; then no new iterations
	Random                 // any row, with replacement
	PerVU                  // VU n (from 0) always reads row n: one user per VU
)

// Source is a data source: its rows, and the slots of its columns.
type Source struct {
	Name, File string
	Rows       [][]string
	Pick       Pick
	Slots      []int // one per column, in order
	// Segment, when not the whole, is the run's execution segment: an
	// iteration then takes, of a unique or sequential source, the row
	// numbered as the iteration's unit of work in the whole plan
	// (engine.VU.Unit; modulo the rows, for sequential), so that the N
	// segments of a plan use each row of a unique source once between
	// them, the rows one machine would.
	Segment execseg.Segment
	next    atomic.Int64
	readers int // scenarios that read it (Runner.Install counts them)
}

// pick takes the data row for an iteration.
func (src *Source) pick(rnd *rand.Rand, vu int, unit int64) ([]string, error) {
	rows := src.Rows
	next := func() int64 {
		if !src.Segment.Whole() && unit >= 0 {
			return unit
		}
		return src.next.Add(1) - 1
	}
	switch src.Pick {
	case PerVU:
		// The plan checks before the load that there is a row for every
		// VU; this is the guard should a VU ever be numbered past them.
		if vu < 0 || vu >= len(rows) {
			return nil, fmt.Errorf("%w: data source %s (%s) has %d rows, none for VU %d; pick: vu needs a row per VU", engine.ErrStop, src.Name, src.File, len(rows), vu)
		}
		return rows[vu], nil
	case Unique:
		i := next()
		if i >= int64(len(rows)) {
			return nil, fmt.Errorf("%w: data source %s (%s) ran out after %d rows; pick: unique uses each row once", engine.ErrStop, src.Name, src.File, len(rows))
		}
		return rows[i], nil
	case Random:
		return rows[rnd.Int64N(int64(len(rows)))], nil
	}
	i := next()
	return rows[i%int64(len(rows))], nil
}

// Think is a pause step's duration: lo, or a uniform pick in [lo, hi].
func Think(lo, hi time.Duration) func(v *engine.VU) time.Duration {
	return func(v *engine.VU) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(v.Rand().Int64N(int64(hi-lo)+1))
	}
}

// State is one VU's variables, cookies and scratch space.
type State struct {
	vars        *expr.State
	learned     *secret.Learned  // Runner.Learned
	secretExprs []*expr.Template // Runner.SecretExprs
	vu          int              // the VU number vars holds
	jar         httpx.Jar
	resp        expr.Response
	body        []byte
	path        []byte // the request target of the request in flight, for cookies and redirects
	vals        []string
	// failed and failedCaptures are the checks and captures of the step
	// just answered that failed, recorded after its captures ran.
	failed, failedCaptures []int
	// why says, by variable, why a capture of this iteration found
	// nothing, for the error of a later step that reads it.
	why map[string]miss
	// the request in flight, for redirects
	target *httpx.Origin
	method string
	// lanes keep the requests in flight of a parallel group, by lane.
	lanes []laneRequest
	// pcg and rng draw random data rows, restarted at every iteration.
	pcg rand.PCG
	rng *rand.Rand
}

// Vars are the VU's values of the program's names.
func (s *State) Vars() *expr.State { return s.vars }

// Jar is the VU's cookie jar.
func (s *State) Jar() *httpx.Jar { return &s.jar }
