// Package expr compiles the dynamic parts of a plan once, when it loads, so
// that the request path never parses plan text: {{ }} templates, captures
// (JSONPath, header, cookie, regex group, CSS selector) and expectations.
//
// A template is literal text with {{ expression }} parts. An expression that
// is a name ({{ product }}, {{ users.email }}) is a direct lookup: a constant
// folded into the template at compile time, or a per-VU slot (a captured
// value, a data row column, the VU number). Anything else ({{ uuid() }},
// {{ iteration + 1 }}) is compiled with github.com/expr-lang/expr against the
// scope, so an undefined name is an error when the plan loads.
//
// Scope owns the names known at compile time; State owns one VU's values.
package expr

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/google/uuid"

	"github.com/loadlab/loadlab/internal/suggest"
)

// Error is a problem in a template at a byte offset into its text.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Scope holds the names a template may use: constants, folded in at compile
// time, and slots, which each VU fills at run time.
type Scope struct {
	consts map[string]any
	slots  map[string]int
	order  []string // slot names by index
	// hints explain names that are not in scope, such as a capture made by a
	// later step.
	hints map[string]string
	// hidden names have a slot but may not be used here (a capture that a
	// later step makes): the slot numbering stays the same for every view.
	hidden map[string]bool
	// typed slots hold a value of a known type (vu and iteration are ints):
	// expressions compile against a sample of it, so {{ iteration + 1 }}
	// type-checks; other slots compile as strings.
	typed map[int]any
	// read marks the slots a compiled template may read, shared by a scope
	// and its clones: a slot no template reads need not be set (Reads).
	read *[]bool
	// limit is SetMaxText's, shared by a scope and its clones.
	limit *int
}

// NewScope returns an empty scope.
func NewScope() *Scope {
	return &Scope{consts: map[string]any{}, slots: map[string]int{}, hints: map[string]string{}, hidden: map[string]bool{}, read: new([]bool), limit: new(int)}
}

// Reads reports whether a template compiled in this scope, or in one of its
// clones, may read slot i: one that reads nothing need not set it (a VU
// that boxes its iteration number for nobody allocates for nothing). It
// errs towards true: an expression that names the slot, or $env, reads it.
func (s *Scope) Reads(i int) bool { return i < len(*s.read) && (*s.read)[i] }

func (s *Scope) markRead(i int) {
	for len(*s.read) <= i {
		*s.read = append(*s.read, false)
	}
	(*s.read)[i] = true
}

// Clone copies a scope so that a scenario can add its captures.
func (s *Scope) Clone() *Scope {
	c := &Scope{consts: map[string]any{}, slots: map[string]int{}, order: append([]string(nil), s.order...), hints: map[string]string{}, hidden: map[string]bool{}, read: s.read, limit: s.limit}
	for k, v := range s.hidden {
		c.hidden[k] = v
	}
	for k, v := range s.consts {
		c.consts[k] = v
	}
	for k, v := range s.slots {
		c.slots[k] = v
	}
	for k, v := range s.hints {
		c.hints[k] = v
	}
	for k, v := range s.typed {
		c.SlotType(k, v)
	}
	return c
}

// DefaultMaxText is the longest text repeat() makes unless SetMaxText
// says otherwise.
const DefaultMaxText = 16 << 20

// SetMaxText sets the longest text repeat() makes: the plan's largest
// bound on what a request renders (its body's).
func (s *Scope) SetMaxText(n int) { *s.limit = n }

func (s *Scope) maxText() int {
	if s.limit == nil || *s.limit <= 0 {
		return DefaultMaxText
	}
	return *s.limit
}

// SlotType says which type a slot's values have, by a sample of it.
func (s *Scope) SlotType(slot int, sample any) {
	if s.typed == nil {
		s.typed = map[int]any{}
	}
	s.typed[slot] = sample
}

// Const adds a constant. A dotted name ("env.HOME") is reached as such.
func (s *Scope) Const(name string, v any) { s.consts[name] = v }

// Slot adds a per-VU value and returns its index; adding a name twice
// returns the same index.
func (s *Scope) Slot(name string) int {
	if i, ok := s.slots[name]; ok {
		return i
	}
	s.slots[name] = len(s.order)
	s.order = append(s.order, name)
	return s.slots[name]
}

// Hint explains why a name is not available yet.
func (s *Scope) Hint(name, why string) { s.hints[name] = why }

// Hide keeps a slot's number but makes the name unusable in this scope, and
// says why.
func (s *Scope) Hide(name, why string) {
	s.hidden[name] = true
	s.hints[name] = why
}

// Has reports whether name is in scope.
func (s *Scope) Has(name string) bool {
	_, c := s.consts[name]
	_, v := s.slots[name]
	return c || v && !s.hidden[name]
}

// Slots is the number of slots a State for this scope needs.
func (s *Scope) Slots() int { return len(s.order) }

// Template is a compiled template.
type Template struct {
	Source string
	parts  []part
	// whole: the template is one expression and nothing else, so Eval keeps
	// the expression's type (a number stays a number in a JSON body).
	whole bool
	// Limit, when above zero, is the most bytes Append may render: past it,
	// Append stops with a *TooLongError instead of growing its buffer (a
	// header, URL or body cap). The check is one comparison per part.
	Limit int
}

// TooLongError is a template whose text would be longer than its Limit.
type TooLongError struct {
	Limit int
	// AtLeast is how long it got, or would have got, before Append stopped.
	AtLeast int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("renders at least %s, over its limit of %s", Bytes(e.AtLeast), Bytes(e.Limit))
}

// Bytes writes a byte count as loadlab's limits say them: 64 KiB, 16 MiB.
func Bytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

type part struct {
	lit  string
	val  any // a constant's value, when name is one
	slot int // -1: not a slot
	name string
	prog *vm.Program
	expr string
	// reads are the slots an expression names: when it fails to run with
	// one of them unset (a capture that found nothing), that is the error
	// it reports, rather than the type error of a function given nil.
	reads []int
	// folded: an expression that reads only constants (plan variables,
	// params, the environment), evaluated once when it compiled; val is
	// its value and lit its text.
	folded bool
}

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// Literal is a template of text as it is, braces and all (a body_file).
func Literal(text string) *Template {
	t := &Template{Source: text}
	if text != "" {
		t.parts = []part{{lit: text, slot: -1}}
	}
	return t
}

// Compile compiles a template against the scope.
func (s *Scope) Compile(src string) (*Template, error) {
	t := &Template{Source: src}
	rest, offset := src, 0
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest, slot: -1})
			}
			break
		}
		if open > 0 {
			t.parts = append(t.parts, part{lit: rest[:open], slot: -1})
		}
		end := closing(rest[open+2:])
		if end < 0 {
			return nil, &Error{Offset: offset + open, Msg: "unclosed {{: expected }}"}
		}
		inner := rest[open+2 : open+2+end]
		exprOffset := offset + open + 2
		p, err := s.compileExpr(inner, exprOffset)
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, p)
		consumed := open + 2 + end + 2
		rest, offset = rest[consumed:], offset+consumed
	}
	t.whole = len(t.parts) == 1 && (t.parts[0].slot >= 0 || t.parts[0].prog != nil || t.parts[0].name != "" || t.parts[0].folded)
	t.fold()
	return t, nil
}

// closing finds the "}}" that ends an expression, skipping quoted strings.
func closing(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			return i
		}
	}
	return -1
}

func (s *Scope) compileExpr(inner string, offset int) (part, error) {
	e := strings.TrimSpace(inner)
	lead := offset + strings.Index(inner, e)
	if e == "" {
		return part{}, &Error{Offset: offset - 2, Msg: "empty {{ }}: expected a name or an expression"}
	}
	if namePattern.MatchString(e) {
		if v, ok := s.consts[e]; ok {
			return part{lit: format(v), val: v, slot: -1, name: e}, nil
		}
		if v, ok, err := s.constPath(e); ok {
			return part{lit: format(v), val: v, slot: -1, name: e}, nil
		} else if err != "" {
			return part{}, &Error{Offset: lead, Msg: err}
		}
		if i, ok := s.slots[e]; ok && !s.hidden[e] {
			s.markRead(i)
			return part{slot: i, name: e}, nil
		}
		return part{}, &Error{Offset: lead, Msg: s.undefined(e)}
	}
	opts := append(s.options(), expr.Env(s.sampleEnv()))
	prog, err := expr.Compile(e, opts...)
	var written ast.Node // the expression as written, without guard's calls
	if err == nil {
		written = prog.Node()
		// Again, with the bound on what it makes: a mistake in it is
		// reported above, as written, not inside guard's calls.
		prog, err = expr.Compile(e, append(opts, guardOptions()...)...)
	}
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			msg := fe.Message
			if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
				name = strings.TrimSpace(name)
				if strings.Contains(e, name+"(") {
					known := append([]string{"uuid", "randomInt", "randomString", "now", "timestamp"}, builtin.Names...)
					hint := ""
					if best := suggest.Closest(name, known); best != "" {
						hint = fmt.Sprintf("; did you mean %s()?", best)
					}
					msg = fmt.Sprintf("unknown function %s()%s (loadlab adds uuid, randomInt, randomString, now and timestamp to expr's built-ins)", name, hint)
				} else {
					msg = s.undefined(name)
				}
			}
			return part{}, &Error{Offset: lead + fe.Column, Msg: "in {{ " + e + " }}: " + msg}
		}
		return part{}, &Error{Offset: lead, Msg: "in {{ " + e + " }}: " + err.Error()}
	}
	if s.constOnly(written) {
		// Nothing in it changes per VU or per request: evaluate it now, so
		// that int("x") or [10, 20][2] of a param is an error where the
		// template is, when the plan loads, rather than at its first request.
		env := s.sampleEnv()
		env[budgetKey] = &budget{limit: growthBudget(s.maxText())}
		v, err := expr.Run(prog, env)
		if err != nil {
			return part{}, &Error{Offset: lead, Msg: "in {{ " + e + " }}: " + firstLine(err.Error())}
		}
		return part{lit: format(v), val: v, slot: -1, expr: e, folded: true}, nil
	}
	for i, name := range s.order {
		first, _, _ := strings.Cut(name, ".") // users["email"] reads users.email
		if strings.Contains(e, first) || strings.Contains(e, "$env") {
			s.markRead(i)
		}
	}
	return part{slot: -1, prog: prog, expr: e, reads: s.named(prog.Node())}, nil
}

// named are the slots whose names (or their first part, users of
// users.email) an expression's identifiers are.
func (s *Scope) named(root ast.Node) []int {
	ids := map[string]bool{}
	ast.Walk(&root, identVisitor(ids))
	var out []int
	for i, name := range s.order {
		if first, _, _ := strings.Cut(name, "."); ids[first] && !s.hidden[name] {
			out = append(out, i)
		}
	}
	return out
}

type identVisitor map[string]bool

func (v identVisitor) Visit(node *ast.Node) {
	if n, ok := (*node).(*ast.IdentifierNode); ok {
		v[n.Value] = true
	}
}

// runPart runs an expression part. When it fails and a slot it names is
// unset, the error is that slot's UnsetError: split(location, '/') of a
// capture that found nothing says so, not that nil is not a string.
func (st *State) runPart(p *part) (any, error) {
	v, err := st.run(p.prog)
	if err == nil {
		return v, nil
	}
	for _, i := range p.reads {
		if st.slots[i] == nil {
			return nil, &UnsetError{Name: st.scope.order[i]}
		}
	}
	return nil, err
}

// varying are the functions whose value changes from call to call.
var varying = map[string]bool{"uuid": true, "randomInt": true, "randomString": true, "now": true, "timestamp": true, "date": true}

// constOnly reports whether an expression reads nothing but constants:
// no slot (a VU's values, captures, data), no $env, no function whose
// value varies. Such an expression has one value for the whole run.
func (s *Scope) constOnly(root ast.Node) bool {
	v := &constVisitor{scope: s, ok: true}
	ast.Walk(&root, v)
	return v.ok
}

type constVisitor struct {
	scope *Scope
	ok    bool
}

func (v *constVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == "$env" || varying[n.Value] {
			v.ok = false
			return
		}
		for _, name := range v.scope.order {
			if first, _, _ := strings.Cut(name, "."); first == n.Value {
				v.ok = false
				return
			}
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && varying[id.Value] {
			v.ok = false
		}
	case *ast.BuiltinNode:
		if varying[n.Name] {
			v.ok = false
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (s *Scope) undefined(name string) string {
	if why, ok := s.hints[name]; ok {
		return fmt.Sprintf("undefined variable %q: %s", name, why)
	}
	if rest, ok := strings.CutPrefix(name, "env."); ok {
		return fmt.Sprintf("environment variable %s is not set (pass it with -e %s=VALUE or export it)", rest, rest)
	}
	known := make([]string, 0, len(s.consts)+len(s.slots))
	for k := range s.consts {
		if !strings.HasPrefix(k, "env.") {
			known = append(known, k)
		}
	}
	for _, k := range s.order {
		if !s.hidden[k] {
			known = append(known, k)
		}
	}
	msg := fmt.Sprintf("undefined variable %q", name)
	sort.Strings(known)
	if best := suggest.Closest(name, known); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return msg
}

// fold merges adjacent literal parts (constants included).
func (t *Template) fold() {
	var out []part
	for _, p := range t.parts {
		if p.slot < 0 && p.prog == nil && len(out) > 0 && out[len(out)-1].slot < 0 && out[len(out)-1].prog == nil {
			out[len(out)-1].lit += p.lit
			continue
		}
		out = append(out, p)
	}
	t.parts = out
}

// Const returns the value of a template that is one constant and nothing
// else ("{{ product }}" of a plan variable), with its type.
func (t *Template) Const() (any, bool) {
	if !t.whole {
		return nil, false
	}
	p := t.parts[0]
	if p.slot >= 0 || p.prog != nil {
		return nil, false
	}
	return p.val, true
}

// Static returns the template's text when it has no per-VU part.
func (t *Template) Static() (string, bool) {
	switch len(t.parts) {
	case 0:
		return "", true
	case 1:
		p := t.parts[0]
		if p.slot < 0 && p.prog == nil {
			return p.lit, true
		}
	}
	return "", false
}

// Append evaluates the template for st and appends the text to dst. A
// template with a Limit stops at it, before a string value that would pass
// it is copied, with a *TooLongError; dst is then cut back to its length
// on entry.
func (t *Template) Append(dst []byte, st *State) ([]byte, error) {
	start := len(dst)
	for i := range t.parts {
		p := &t.parts[i]
		var v any
		switch {
		case p.slot >= 0:
			if v = st.slots[p.slot]; v == nil {
				return dst, &UnsetError{Name: p.name}
			}
		case p.prog != nil:
			var err error
			if v, err = st.runPart(p); err != nil {
				return dst, fmt.Errorf("{{ %s }}: %w", p.expr, err)
			}
		default:
			if t.Limit > 0 && len(dst)-start+len(p.lit) > t.Limit {
				return dst[:start], &TooLongError{Limit: t.Limit, AtLeast: len(dst) - start + len(p.lit)}
			}
			dst = append(dst, p.lit...)
			continue
		}
		if t.Limit > 0 {
			if s, ok := v.(string); ok && len(dst)-start+len(s) > t.Limit {
				return dst[:start], &TooLongError{Limit: t.Limit, AtLeast: len(dst) - start + len(s)}
			}
		}
		dst = appendValue(dst, v)
		if t.Limit > 0 && len(dst)-start > t.Limit {
			return dst[:start], &TooLongError{Limit: t.Limit, AtLeast: len(dst) - start}
		}
	}
	return dst, nil
}

// Lookups are the slots the template reads by name ({{ users.email }}),
// and its literal text's length; ok is false when it also has an
// expression, whose value cannot be known without running it.
func (t *Template) Lookups() (slots []int, literal int, ok bool) {
	for i := range t.parts {
		p := &t.parts[i]
		switch {
		case p.prog != nil:
			return nil, 0, false
		case p.slot >= 0:
			slots = append(slots, p.slot)
		default:
			literal += len(p.lit)
		}
	}
	return slots, literal, true
}

// String evaluates the template to a string.
func (t *Template) String(st *State) (string, error) {
	if s, ok := t.Static(); ok {
		return s, nil
	}
	b, err := t.Append(nil, st)
	return string(b), err
}

// Eval evaluates the template to a value: a template that is one expression
// and nothing else keeps the expression's type; any other is a string.
func (t *Template) Eval(st *State) (any, error) {
	if t.whole {
		p := &t.parts[0]
		switch {
		case p.slot >= 0:
			if v := st.slots[p.slot]; v != nil {
				return v, nil
			}
			return nil, &UnsetError{Name: p.name}
		case p.prog != nil:
			return st.runPart(p)
		case p.folded:
			return p.val, nil
		}
		return constValue(p.name, st), nil
	}
	return t.String(st)
}

// constValue returns a folded constant with its original type.
func constValue(name string, st *State) any {
	if v, ok := st.scope.consts[name]; ok {
		return v
	}
	if v, ok, _ := st.scope.constPath(name); ok {
		return v
	}
	return nil
}

// constPath reads a field of a constant mapping ("case.vus" of a param whose
// value is {vus: 100, iterations: 10}). ok is false when name does not start
// with such a constant; msg says what is wrong when it does but the field is
// missing.
func (s *Scope) constPath(name string) (v any, ok bool, msg string) {
	parts := strings.Split(name, ".")
	cur, found := s.consts[parts[0]]
	if !found {
		return nil, false, ""
	}
	for i, p := range parts[1:] {
		m, isMap := cur.(map[string]any)
		if !isMap {
			return nil, false, fmt.Sprintf("%s is not a mapping: %s has no field %s", strings.Join(parts[:i+1], "."), strings.Join(parts[:i+1], "."), p)
		}
		if cur, found = m[p]; !found {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, false, fmt.Sprintf("%s has no field %s (fields: %s)", strings.Join(parts[:i+1], "."), p, strings.Join(keys, ", "))
		}
	}
	return cur, true, ""
}

// UnsetError is a slot read before anything set it: typically a capture
// whose step found nothing.
type UnsetError struct {
	Name string
	// Why, when set, says why in words: "capture issue_location found no
	// Location header: the POST answered 422".
	Why string
}

func (e *UnsetError) Error() string {
	if e.Why != "" {
		return e.Why
	}
	return fmt.Sprintf("%s has no value (did its capture find nothing?)", e.Name)
}

// State is one VU's values for the names of a scope.
//
// Expressions run against an environment of nested maps (users.email is
// users["email"]). It is built once, on the first expression; after that Set
// and Clear write a slot's value straight into the map that holds it, so an
// iteration costs no rebuild. A slot whose name overlaps another ("a" and
// "a.b") has no place of its own: changing it rebuilds the environment.
type State struct {
	scope *Scope
	slots []any
	env   map[string]any
	at    []place // where each slot lives in env; a nil map: nowhere of its own
	dirty bool
	vm    vm.VM
	// pcg and rng are what randomInt, randomString and uuid draw from.
	pcg rand.PCG
	rng *rand.Rand
	// budget bounds what one evaluation makes (growthGuard).
	budget budget
}

type place struct {
	m   map[string]any
	key string
}

// NewState makes the values of one VU.
// Until Seed is called, its random functions draw from a randomly seeded
// generator of its own.
func (s *Scope) NewState() *State {
	st := &State{scope: s, slots: make([]any, len(s.order))}
	st.pcg.Seed(rand.Uint64(), rand.Uint64())
	st.rng = rand.New(&st.pcg)
	return st
}

// Seed restarts the generator that randomInt, randomString and uuid draw from:
// the same two numbers give the same values in the same order. A VU seeds
// it with the plan's seed and its own place in the run, so that a run with
// the same seed sends the same bodies.
func (st *State) Seed(seed, stream uint64) { st.pcg.Seed(seed, stream) }

// Set gives slot i a value; nil unsets it.
func (st *State) Set(i int, v any) {
	st.slots[i] = v
	st.write(i, v)
}

func (st *State) write(i int, v any) {
	if st.env == nil {
		return
	}
	if p := st.at[i]; p.m != nil {
		p.m[p.key] = v
	} else {
		st.dirty = true
	}
}

// Get returns slot i's value.
func (st *State) Get(i int) any { return st.slots[i] }

// Clear unsets the given slots (a new iteration's captures).
func (st *State) Clear(slots []int) {
	for _, i := range slots {
		st.slots[i] = nil
		st.write(i, nil)
	}
}

func (st *State) run(p *vm.Program) (any, error) {
	if st.env == nil || st.dirty {
		st.env = st.scope.envWith(st.slots)
		st.env[randKey] = st.rng
		st.env[budgetKey] = &st.budget
		st.at = st.scope.places(st.env)
		st.dirty = false
	}
	st.budget = budget{limit: growthBudget(st.scope.maxText())}
	return st.vm.Run(p, st.env)
}

// places finds where each slot lives in an environment made by envWith. A
// slot has a place of its own when no other name in scope is a path through
// it or it a path through another name.
func (s *Scope) places(env map[string]any) []place {
	at := make([]place, len(s.order))
	for i, name := range s.order {
		if s.overlaps(name) {
			continue
		}
		parts := strings.Split(name, ".")
		m := env
		for _, p := range parts[:len(parts)-1] {
			m, _ = m[p].(map[string]any)
		}
		if m != nil {
			at[i] = place{m, parts[len(parts)-1]}
		}
	}
	return at
}

// overlaps reports whether another name is a path through name or name a
// path through it.
func (s *Scope) overlaps(name string) bool {
	through := func(other string) bool {
		return strings.HasPrefix(other, name+".") || strings.HasPrefix(name, other+".")
	}
	for other := range s.consts {
		if through(other) {
			return true
		}
	}
	for _, other := range s.order {
		if through(other) {
			return true
		}
	}
	return false
}

// sampleEnv is the environment expressions compile against: every name in
// scope, with a placeholder value for slots: a sample of a typed slot's
// type, a string for the others.
func (s *Scope) sampleEnv() map[string]any {
	slots := make([]any, len(s.order))
	for i := range slots {
		slots[i] = ""
		if v, ok := s.typed[i]; ok {
			slots[i] = v
		}
	}
	env := s.envWith(slots)
	for name := range s.hidden {
		delete(env, name)
	}
	return env
}

// envWith nests dotted names into maps: users.email becomes users["email"].
func (s *Scope) envWith(slots []any) map[string]any {
	env := map[string]any{}
	put := func(name string, v any) {
		parts := strings.Split(name, ".")
		m := env
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	for k, v := range s.consts {
		put(k, v)
	}
	for i, name := range s.order {
		put(name, slots[i])
	}
	return env
}

// options are the functions templates may call, beside expr's built-ins.
// randomInt, randomString and uuid draw from the State's generator (see
// State.Seed), which they reach through the environment: randomArgs rewrites
// each call to pass $env first, so the same seed gives the same values.
func (s *Scope) options() []expr.Option {
	return []expr.Option{
		expr.Patch(randomArgs{}),
		expr.Function("uuid", func(p ...any) (any, error) {
			// A version 4 UUID from the State's generator, not the
			// system's: random, but the same for the same seed.
			rng := envRand(p[0])
			var u uuid.UUID
			binary.LittleEndian.PutUint64(u[:8], rng.Uint64())
			binary.LittleEndian.PutUint64(u[8:], rng.Uint64())
			u[6] = u[6]&0x0f | 0x40 // version 4
			u[8] = u[8]&0x3f | 0x80 // the RFC 4122 variant
			return u.String(), nil
		}, new(func(any) string)),
		expr.Function("randomInt", func(p ...any) (any, error) {
			rng, lo, hi := envRand(p[0]), p[1].(int), p[2].(int)
			if hi < lo {
				return nil, fmt.Errorf("randomInt(%d, %d): the second bound is lower", lo, hi)
			}
			return lo + int(rng.Int64N(int64(hi-lo)+1)), nil
		}, new(func(any, int, int) int)),
		expr.Function("randomString", func(p ...any) (any, error) {
			rng, n := envRand(p[0]), p[1].(int)
			if n < 0 || n > 1<<20 {
				return nil, fmt.Errorf("randomString(%d): length out of range", n)
			}
			const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			b := make([]byte, n)
			for i := range b {
				b[i] = letters[rng.IntN(len(letters))]
			}
			return string(b), nil
		}, new(func(any, int) string)),
		// expr's own repeat makes up to a million copies of any string, a
		// terabyte of one of randomString's: this one stops at the scope's
		// MaxText, before it allocates.
		expr.Function("repeat", func(p ...any) (any, error) {
			text, n := p[0].(string), p[1].(int)
			if n < 0 {
				return nil, fmt.Errorf("repeat(%d): the count is negative", n)
			}
			if limit := s.maxText(); len(text) > 0 && n > limit/len(text) {
				return nil, fmt.Errorf("repeat: %d copies of %s would be over %s, the longest text a template makes (see Limits in docs/plan.md)", n, Bytes(len(text)), Bytes(limit))
			}
			return strings.Repeat(text, n), nil
		}, new(func(string, int) string)),
		// expr's replace makes len(new)/len(old) times its input at one
		// call: this one says so before it allocates.
		expr.Function("replace", func(p ...any) (any, error) {
			text, old, repl := p[0].(string), p[1].(string), p[2].(string)
			if grow := len(repl) - len(old); grow > 0 {
				n := strings.Count(text, old)
				if limit := s.maxText(); n > 0 && (limit-len(text))/n < grow {
					return nil, fmt.Errorf("replace: %d replacements would make over %s, the longest text a template makes (see Limits in docs/plan.md)", n, Bytes(limit))
				}
			}
			return strings.ReplaceAll(text, old, repl), nil
		}, new(func(string, string, string) string)),
		expr.Function("now", func(...any) (any, error) { return time.Now().UTC().Format(time.RFC3339Nano), nil }, new(func() string)),
		expr.Function("timestamp", func(...any) (any, error) { return int(time.Now().UnixMilli()), nil }, new(func() int)),
	}
}

// randKey is where a State's environment holds its generator: not a name a
// template can write, so no plan variable can shadow it.
const randKey = "$rand"

// randomArgs passes the environment ($env) as the first argument of every
// call of randomInt, randomString and uuid.
type randomArgs struct{}

func (randomArgs) Visit(node *ast.Node) {
	call, ok := (*node).(*ast.CallNode)
	if !ok {
		return
	}
	id, ok := call.Callee.(*ast.IdentifierNode)
	if !ok || id.Value != "randomInt" && id.Value != "randomString" && id.Value != "uuid" {
		return
	}
	if len(call.Arguments) > 0 {
		if a, ok := call.Arguments[0].(*ast.IdentifierNode); ok && a.Value == "$env" {
			return // patched already: expr runs visitors more than once
		}
	}
	ast.Patch(node, &ast.CallNode{Callee: call.Callee, Arguments: append([]ast.Node{&ast.IdentifierNode{Value: "$env"}}, call.Arguments...)})
}

// envRand is the generator of the State whose environment env is; an
// environment without one (an expression evaluated outside a State) draws
// from the process's generator.
func envRand(env any) *rand.Rand {
	if m, ok := env.(map[string]any); ok {
		if r, ok := m[randKey].(*rand.Rand); ok {
			return r
		}
	}
	return globalRand
}

// globalRand draws from math/rand/v2's process-wide, randomly seeded source.
var globalRand = rand.New(globalSource{})

type globalSource struct{}

func (globalSource) Uint64() uint64 { return rand.Uint64() }

// format writes a value as template text.
func format(v any) string { return string(appendValue(nil, v)) }

func appendValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return append(dst, v...)
	case []byte:
		return append(dst, v...)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e21 {
			return strconv.AppendFloat(dst, v, 'f', -1, 64)
		}
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, v)
	case json.Number:
		return append(dst, v...)
	case nil:
		return dst
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Appendf(dst, "%v", v)
	}
	return append(dst, b...)
}

// Unhide makes a hidden name usable again.
func (s *Scope) Unhide(name string) {
	delete(s.hidden, name)
	delete(s.hints, name)
}
