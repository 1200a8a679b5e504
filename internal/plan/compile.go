package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/httpx"
)

// Resolver finds the address of a target; the plan's base URLs go through it
// once, when the program is built.
type Resolver func(ctx context.Context, u *url.URL) (*httpx.Target, error)

// constScope holds the names known before any VU exists: plan variables and
// the environment.
func (p *Plan) constScope(opts Options) *expr.Scope {
	sc := expr.NewScope()
	if opts.LookupEnv != nil {
		for _, kv := range os.Environ() {
			if k, _, ok := strings.Cut(kv, "="); ok {
				if v, ok := opts.LookupEnv(k); ok {
					sc.Const("env."+k, v)
				}
			}
		}
	}
	for k, v := range opts.Env {
		sc.Const("env."+k, v)
	}
	for _, v := range p.Vars {
		sc.Const(v.Name, v.Value)
	}
	for k, v := range opts.Params {
		sc.Const(k, v)
	}
	return sc
}

// compileCheck compiles the whole plan without resolving any address, to
// report every template, capture and expectation error when the plan loads.
func (p *Plan) compileCheck(opts Options) error {
	_, err := p.compile(context.Background(), opts, func(_ context.Context, u *url.URL) (*httpx.Target, error) {
		return &httpx.Target{Scheme: u.Scheme, Host: u.Host}, nil
	})
	return err
}

// ProgramOptions are what a run adds to the plan.
type ProgramOptions struct {
	// Params are an experiment point's parameter values: constants in
	// every template, like plan variables.
	Params map[string]any
}

// Program compiles the plan into the engine's program, resolving each
// target's address with resolve.
func (p *Plan) Program(ctx context.Context, po ProgramOptions, resolve Resolver) (*engine.Program, error) {
	opts := p.opts
	if po.Params != nil {
		opts.Params = po.Params
	}
	return p.compile(ctx, opts, resolve)
}

// compiler holds what compiling a plan needs.
type compiler struct {
	p       *Plan
	d       *decoder
	resolve Resolver
	ctx     context.Context
	targets map[string]*httpx.Target
	global  *expr.Scope

	vuSlot, iterSlot, scenarioSlot int
	captureSlots                   []int
	feeders                        []*feederState
	scenarios                      []*scenarioC
	resolveErr                     error
	reported                       map[Pos]bool // errors about shared text, said once
}

type feederState struct {
	f     *Feeder
	slots []int
	next  atomic.Int64
}

type scenarioC struct {
	es      *engine.Scenario
	name    any // es.Name, boxed once rather than on every iteration
	feeders []*feederState
}

func (p *Plan) compile(ctx context.Context, opts Options, resolve Resolver) (*engine.Program, error) {
	c := &compiler{p: p, d: &decoder{}, resolve: resolve, ctx: ctx, targets: map[string]*httpx.Target{}}
	c.global = p.constScope(opts)
	c.vuSlot = c.global.Slot("vu")
	c.iterSlot = c.global.Slot("iteration")
	c.global.SlotType(c.vuSlot, 0) // both are set as ints in Begin
	c.global.SlotType(c.iterSlot, 0)
	c.scenarioSlot = c.global.Slot("scenario")
	for _, f := range p.Data {
		fs := &feederState{f: f}
		for _, col := range f.Columns {
			fs.slots = append(fs.slots, c.global.Slot(f.Name+"."+col))
		}
		c.feeders = append(c.feeders, fs)
	}
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			for _, cp := range st.Captures {
				c.captureSlots = append(c.captureSlots, c.global.Slot(cp.Var))
			}
		}
	}
	prog := &engine.Program{}
	for _, sc := range p.Scenarios {
		c.scenario(prog, sc)
	}
	if c.resolveErr != nil {
		return nil, c.resolveErr
	}
	if len(c.d.errs) > 0 {
		sort.SliceStable(c.d.errs, func(i, j int) bool {
			a, b := c.d.errs[i].Pos, c.d.errs[j].Pos
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, c.d.errs
	}
	scenarios := c.scenarios
	prog.NewState = func(v *engine.VU) any {
		return &vuState{st: c.global.NewState(), vu: -1}
	}
	prog.Begin = func(v *engine.VU) error {
		s := v.State.(*vuState)
		s.st.Clear(c.captureSlots)
		s.jar.Reset()
		if s.vu != v.ID { // an open workload's VU takes a number from a pool per journey
			s.vu = v.ID
			s.st.Set(c.vuSlot, v.ID)
		}
		s.st.Set(c.iterSlot, int(v.Iteration()))
		var sc *scenarioC
		for _, x := range scenarios {
			if x.es == v.Scenario() {
				sc = x
				break
			}
		}
		s.st.Set(c.scenarioSlot, sc.name)
		for _, fs := range sc.feeders {
			row, err := fs.pick(v)
			if err != nil {
				return err
			}
			for i, slot := range fs.slots {
				if i < len(row) {
					s.st.Set(slot, row[i])
				} else {
					s.st.Set(slot, "")
				}
			}
		}
		return nil
	}
	return prog, nil
}

// pick takes the data row for an iteration.
func (fs *feederState) pick(v *engine.VU) ([]string, error) {
	rows := fs.f.Rows
	switch fs.f.Pick {
	case PickUnique:
		i := fs.next.Add(1) - 1
		if i >= int64(len(rows)) {
			return nil, fmt.Errorf("%w: data source %s (%s) ran out after %d rows; pick: unique uses each row once", engine.ErrStop, fs.f.Name, fs.f.File, len(rows))
		}
		return rows[i], nil
	case PickRandom:
		return rows[v.Rand().Int64N(int64(len(rows)))], nil
	}
	i := fs.next.Add(1) - 1
	return rows[i%int64(len(rows))], nil
}

// vuState is one VU's variables, cookies and scratch space.
type vuState struct {
	st   *expr.State
	vu   int // the VU number st holds
	jar  httpx.Jar
	resp expr.Response
	body []byte
	path []byte // the path of the request in flight, for cookies and redirects
	vals []string
	// the request in flight, for redirects
	target *httpx.Target
	method string
}

var identInText = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*\.`)

func (c *compiler) scenario(prog *engine.Program, sc *Scenario) {
	es := &engine.Scenario{Name: sc.Name, Weight: sc.Weight}
	scC := &scenarioC{es: es, name: es.Name}
	// Captures of this scenario become usable after the step that makes them.
	view := c.global.Clone()
	later := map[string]int{}
	for i, st := range sc.Steps {
		for _, cp := range st.Captures {
			if _, ok := later[cp.Var]; !ok {
				later[cp.Var] = i + 1
			}
		}
	}
	for _, other := range c.p.Scenarios {
		for _, st := range other.Steps {
			for _, cp := range st.Captures {
				if _, ours := later[cp.Var]; !ours {
					view.Hide(cp.Var, fmt.Sprintf("it is captured in scenario %s, not in %s", other.Name, sc.Name))
				}
			}
		}
	}
	for name, step := range later {
		view.Hide(name, fmt.Sprintf("it is captured by step %d of scenario %s, later than this", step, sc.Name))
	}
	used := map[*feederState]bool{}
	for i, st := range sc.Steps {
		for _, m := range identInText.FindAllString(stepText(st), -1) {
			for _, fs := range c.feeders {
				if m == fs.f.Name+"." {
					used[fs] = true
				}
			}
		}
		if st.IsThink {
			lo, hi := st.Think, st.ThinkMax
			es.Steps = append(es.Steps, &engine.Step{Name: "think", Think: func(v *engine.VU) time.Duration {
				if hi <= lo {
					return lo
				}
				return lo + time.Duration(v.Rand().Int64N(int64(hi-lo)+1))
			}})
			continue
		}
		id := len(prog.Steps)
		prog.Steps = append(prog.Steps, engine.StepInfo{Scenario: sc.Name, Name: st.Name})
		r := c.request(st, id, view)
		es.Steps = append(es.Steps, &engine.Step{ID: id, Name: st.Name, Request: r})
		// Its captures are usable from the next step on.
		for _, cp := range st.Captures {
			if later[cp.Var] == i+1 {
				view = view.Clone()
				view.Unhide(cp.Var)
			}
		}
	}
	for _, fs := range c.feeders {
		if used[fs] {
			scC.feeders = append(scC.feeders, fs)
		}
	}
	prog.Scenarios = append(prog.Scenarios, es)
	c.scenarios = append(c.scenarios, scC)
}

// stepText is every template text of a step, to see which data sources it uses.
func stepText(st *Step) string {
	var b strings.Builder
	b.WriteString(st.URL.Src)
	for _, f := range append(append(append([]Field{}, st.Headers...), st.Query...), st.Form...) {
		b.WriteString(" " + f.Value.Src)
	}
	if st.Body != nil {
		b.WriteString(" " + st.Body.Src)
	}
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		b.WriteString(" " + n.value)
		for _, v := range n.vals {
			walk(v)
		}
	}
	walk(st.JSON)
	if st.Expect != nil {
		for _, f := range append(st.Expect.Headers, st.Expect.JSON...) {
			b.WriteString(" " + f.Value.Src)
		}
		for _, t := range st.Expect.Contains {
			b.WriteString(" " + t.Src)
		}
	}
	return b.String()
}

// templateError reports a template error at its place in the file.
func (d *decoder) templateError(t Text, err error) {
	var te *expr.Error
	pos := t.Pos
	msg := err.Error()
	if errors.As(err, &te) {
		pos = textPos(t, te.Offset)
		msg = te.Msg
	}
	d.errorf(pos, "%s", msg)
}

// textPos is where byte offset off of a template is in the file.
func textPos(t Text, off int) Pos {
	pos := t.Pos
	if pos.Line == 0 {
		return pos
	}
	off = min(max(off, 0), len(t.Src))
	before := t.Src[:off]
	if nl := strings.Count(before, "\n"); nl > 0 && !t.quoted {
		pos.Line += nl
		pos.Col = len(before) - strings.LastIndexByte(before, '\n')
		return pos
	}
	if t.quoted {
		pos.Col++
	}
	pos.Col += off
	return pos
}

func (c *compiler) template(t Text, scope *expr.Scope) *expr.Template {
	tpl, err := scope.Compile(t.Src)
	if err != nil {
		c.d.templateError(t, err)
		return nil
	}
	return tpl
}

// field is a compiled name and template.
type field struct {
	name  string
	value *expr.Template
}

func (c *compiler) fields(fs []Field, scope *expr.Scope) []field {
	out := make([]field, 0, len(fs))
	for _, f := range fs {
		if t := c.template(f.Value, scope); t != nil {
			out = append(out, field{f.Name, t})
		}
	}
	return out
}

// reqStep is a compiled request step.
type reqStep struct {
	id          int
	name        string
	method      string
	target      *httpx.Target
	base        *url.URL
	prefix      string // the target's own path, before the step's
	path        *expr.Template
	query       []field
	headers     []field
	hasAgent    bool
	hasType     bool
	json        *jsonT
	form        []field
	raw         *expr.Template
	contentType string
	keepAlive   bool
	checks      []check
	captures    []capture
	follow      bool
}

type capture struct {
	slot int
	c    *expr.Capture
	name string
}

type check struct {
	name string
	ok   func(s *vuState, x *httpx.Exchange) bool
}

func (c *compiler) target(base *url.URL) *httpx.Target {
	key := base.Scheme + "://" + base.Host
	if t, ok := c.targets[key]; ok {
		return t
	}
	t, err := c.resolve(c.ctx, base)
	if err != nil {
		if c.resolveErr == nil {
			c.resolveErr = fmt.Errorf("%s: %w", key, err)
		}
		t = &httpx.Target{Scheme: base.Scheme, Host: base.Host}
	}
	if t.TLS != nil && c.p.HTTP.Insecure {
		t.TLS.InsecureSkipVerify = true
	}
	c.targets[key] = t
	return t
}

func (c *compiler) request(st *Step, id int, scope *expr.Scope) *engine.RequestStep {
	h := c.p.HTTP
	rs := &reqStep{id: id, name: st.Name, method: st.Method, keepAlive: h.KeepAlive, follow: h.FollowRedirects}
	if st.Redirects != nil {
		rs.follow = *st.Redirects
	}
	src := st.URL.Src
	var pathSrc string
	pathOff := 0
	switch {
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		rest := src[strings.Index(src, "//")+2:]
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		hostPart := rest[:end]
		if strings.Contains(hostPart, "{{") {
			c.d.errorf(st.URL.Pos, "the host of a URL cannot be a template; use a plan variable in target: instead")
			return nil
		}
		base, err := url.Parse(src[:len(src)-len(rest)+end])
		if err != nil || base.Host == "" {
			c.d.errorf(st.URL.Pos, "bad URL %q", src)
			return nil
		}
		rs.base = base
		pathSrc = rest[end:]
		pathOff = len(src) - len(pathSrc)
		if pathSrc == "" {
			pathSrc = "/"
		}
	case strings.HasPrefix(src, "/"):
		if c.p.Target == nil {
			if !c.p.targetGiven {
				c.d.errorf(st.URL.Pos, "%s has a relative URL but the plan has no target: add target: http://host:port", st.Name)
			}
			return nil
		}
		rs.base = &url.URL{Scheme: c.p.Target.Scheme, Host: c.p.Target.Host}
		rs.prefix = strings.TrimSuffix(c.p.Target.Path, "/")
		pathSrc = src
	default:
		c.d.errorf(st.URL.Pos, "a step URL must be a path starting with / (relative to target) or a URL starting with http:// or https://, got %q", src)
		return nil
	}
	rs.path = c.template(Text{Src: pathSrc, Pos: textPos(st.URL, pathOff), quoted: false}, scope)
	rs.query = c.fields(st.Query, scope)
	// A step's header replaces the plan-wide one of the same name.
	var all []Field
	for _, f := range h.Headers {
		if !slices.ContainsFunc(st.Headers, func(g Field) bool { return strings.EqualFold(g.Name, f.Name) }) {
			all = append(all, f)
		}
	}
	all = append(all, st.Headers...)
	rs.headers = c.fields(all, scope)
	for _, f := range all {
		rs.hasAgent = rs.hasAgent || strings.EqualFold(f.Name, "User-Agent")
		rs.hasType = rs.hasType || strings.EqualFold(f.Name, "Content-Type")
		if (strings.EqualFold(f.Name, "Content-Length") || strings.EqualFold(f.Name, "Host") || strings.EqualFold(f.Name, "Cookie")) && !c.reported[f.Pos] {
			if c.reported == nil {
				c.reported = map[Pos]bool{}
			}
			c.reported[f.Pos] = true // http.headers are every step's: say it once
			c.d.errorf(f.Pos, "loadlab sets the %s header itself (the cookie jar sends cookies; Host and Content-Length follow the URL and body)", f.Name)
		}
	}
	switch {
	case st.JSON != nil:
		rs.json = c.jsonTemplate(st.JSON, scope)
		rs.contentType = "application/json"
	case st.Form != nil:
		rs.form = c.fields(st.Form, scope)
		rs.contentType = "application/x-www-form-urlencoded"
	case st.Body != nil:
		rs.raw = c.template(*st.Body, scope)
	}
	if st.Expect != nil {
		rs.checks = c.checks(st.Expect, scope)
	}
	for _, cp := range st.Captures {
		kind := map[string]expr.CaptureKind{"json": expr.FromJSON, "header": expr.FromHeader, "cookie": expr.FromCookie, "regex": expr.FromRegex, "css": expr.FromCSS}[cp.Kind]
		cc, err := expr.NewCapture(kind, cp.Arg, cp.Attr)
		if err != nil {
			c.d.errorf(cp.ArgP, "capture %s: %v", cp.Var, err)
			continue
		}
		rs.captures = append(rs.captures, capture{slot: c.global.Slot(cp.Var), c: cc, name: cp.Var})
	}
	if rs.base == nil {
		return nil
	}
	rs.target = c.target(rs.base)
	r := &engine.RequestStep{
		Target:     rs.target,
		Build:      rs.build,
		Head:       st.Method == "HEAD",
		Idempotent: httpx.Idempotent(st.Method),
		CloseAfter: !h.KeepAlive,
		Keep:       true,
		After:      rs.after,
	}
	if rs.follow && h.MaxRedirects > 0 {
		r.Redirect = c.redirect(rs)
		r.MaxRedirects = h.MaxRedirects
	}
	return r
}

func (c *compiler) checks(e *Expect, scope *expr.Scope) []check {
	var out []check
	if len(e.Status) > 0 {
		want := e.Status
		var names []string
		for _, s := range want {
			if s.Class {
				names = append(names, fmt.Sprintf("%dxx", s.Code/100))
			} else {
				names = append(names, strconv.Itoa(s.Code))
			}
		}
		out = append(out, check{name: "status is " + strings.Join(names, " or "), ok: func(_ *vuState, x *httpx.Exchange) bool {
			if x.Err != nil {
				return false
			}
			for _, s := range want {
				if s.Code == x.Status || s.Class && x.Status/100 == s.Code/100 {
					return true
				}
			}
			return false
		}})
	}
	for _, f := range e.Headers {
		name := f.Name
		t := c.template(f.Value, scope)
		if t == nil {
			continue
		}
		out = append(out, check{name: "header " + name, ok: func(s *vuState, x *httpx.Exchange) bool {
			got, ok := s.resp.HeaderValue(name)
			want, err := t.String(s.st)
			return ok && err == nil && got == want
		}})
	}
	for _, ct := range e.Contains {
		t := c.template(ct, scope)
		if t == nil {
			continue
		}
		out = append(out, check{name: "body contains " + ct.Src, ok: func(s *vuState, x *httpx.Exchange) bool {
			want, err := t.Append(s.body[:0], s.st)
			return err == nil && bytes.Contains(x.Body, want)
		}})
	}
	for _, f := range e.JSON {
		path, err := expr.CompileJSONPath(f.Name)
		if err != nil {
			c.d.errorf(f.Pos, "expect.json: %v", err)
			continue
		}
		t := c.template(f.Value, scope)
		if t == nil {
			continue
		}
		out = append(out, check{name: "json " + f.Name, ok: func(s *vuState, x *httpx.Exchange) bool {
			doc, err := s.resp.JSON()
			if err != nil {
				return false
			}
			want, err := t.Eval(s.st)
			if err != nil {
				return false
			}
			for got := range path.Select(doc).All() {
				return expr.Equal(got, want)
			}
			return false
		}})
	}
	return out
}

// build appends the step's request for a VU.
func (rs *reqStep) build(v *engine.VU, dst []byte) ([]byte, error) {
	s := v.State.(*vuState)
	s.target, s.method = rs.target, rs.method
	var err error
	s.body = s.body[:0]
	switch {
	case rs.json != nil:
		s.body, err = rs.json.append(s.body, s.st)
	case rs.form != nil:
		for i, f := range rs.form {
			if i > 0 {
				s.body = append(s.body, '&')
			}
			s.body = append(s.body, url.QueryEscape(f.name)...)
			s.body = append(s.body, '=')
			start := len(s.body)
			if s.body, err = f.value.Append(s.body, s.st); err != nil {
				return dst, fmt.Errorf("form %s: %w", f.name, err)
			}
			s.body = append(s.body[:start], url.QueryEscape(string(s.body[start:]))...)
		}
	case rs.raw != nil:
		s.body, err = rs.raw.Append(s.body, s.st)
	}
	if err != nil {
		return dst, err
	}
	// The path and query.
	s.path = append(s.path[:0], rs.prefix...)
	start := len(s.path)
	if s.path, err = rs.path.Append(s.path, s.st); err != nil {
		return dst, err
	}
	s.path = escapePath(s.path, start)
	for i, q := range rs.query {
		sep := byte('&')
		if i == 0 && bytes.IndexByte(s.path, '?') < 0 {
			sep = '?'
		}
		s.path = append(s.path, sep)
		s.path = append(s.path, url.QueryEscape(q.name)...)
		s.path = append(s.path, '=')
		vstart := len(s.path)
		if s.path, err = q.value.Append(s.path, s.st); err != nil {
			return dst, fmt.Errorf("query %s: %w", q.name, err)
		}
		s.path = append(s.path[:vstart], url.QueryEscape(string(s.path[vstart:]))...)
	}
	return rs.encode(s, dst, rs.method, rs.target, s.body, len(s.body) > 0 || rs.json != nil || rs.form != nil || rs.raw != nil)
}

// encode writes the request line, headers and body.
func (rs *reqStep) encode(s *vuState, dst []byte, method string, t *httpx.Target, body []byte, hasBody bool) ([]byte, error) {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, s.path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, t.Host...)
	dst = append(dst, "\r\n"...)
	if !rs.hasAgent {
		dst = append(dst, "User-Agent: "...)
		dst = append(dst, httpx.UserAgent...)
		dst = append(dst, "\r\n"...)
	}
	var err error
	for _, h := range rs.headers {
		if t != rs.target && strings.EqualFold(h.name, "Authorization") {
			continue // credentials do not follow a redirect to another host
		}
		dst = append(dst, h.name...)
		dst = append(dst, ": "...)
		start := len(dst)
		if dst, err = h.value.Append(dst, s.st); err != nil {
			return dst, fmt.Errorf("header %s: %w", h.name, err)
		}
		if bytes.ContainsAny(dst[start:], "\r\n") {
			return dst, fmt.Errorf("header %s: the value has a line break", h.name)
		}
		dst = append(dst, "\r\n"...)
	}
	dst = s.jar.AppendHeader(dst, t.Host, pathOnly(s.path), t.TLS != nil, time.Now())
	if hasBody {
		if rs.contentType != "" && !rs.hasType {
			dst = append(dst, "Content-Type: "...)
			dst = append(dst, rs.contentType...)
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(body)), 10)
		dst = append(dst, "\r\n"...)
	}
	if !rs.keepAlive {
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, body...), nil
}

func pathOnly(p []byte) string {
	if i := bytes.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return string(p)
}

// escapePath percent-encodes bytes that cannot appear in a request target.
func escapePath(b []byte, from int) []byte {
	clean := true
	for _, c := range b[from:] {
		if c <= ' ' || c >= 0x7f || c == '#' {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	raw := string(b[from:])
	b = b[:from]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			b = fmt.Appendf(b, "%%%02X", c)
		} else {
			b = append(b, c)
		}
	}
	return b
}

// after stores cookies, runs the checks and the captures.
func (rs *reqStep) after(v *engine.VU, x *httpx.Exchange) bool {
	s := v.State.(*vuState)
	s.resp.Reset(x.Status, x.Header, x.Body)
	if x.Err == nil {
		rs.storeCookies(s, x)
	}
	for _, ch := range rs.checks {
		if ch.ok(s, x) {
			v.Check(rs.id, true)
		} else {
			v.CheckFailed(rs.id, ch.name, x, nil)
		}
	}
	for _, cp := range rs.captures {
		var val any
		ok := false
		if x.Err == nil {
			val, ok, _ = cp.c.Extract(&s.resp)
		}
		if ok {
			s.st.Set(cp.slot, val)
			v.Check(rs.id, true)
		} else {
			s.st.Set(cp.slot, nil)
			v.CheckFailed(rs.id, "capture "+cp.name, x, nil)
		}
	}
	return true
}

func (rs *reqStep) storeCookies(s *vuState, x *httpx.Exchange) {
	if !bytes.Contains(x.Header, []byte("et-Cookie")) && !bytes.Contains(x.Header, []byte("et-cookie")) {
		return
	}
	s.resp.Reset(x.Status, x.Header, x.Body)
	s.vals = s.resp.HeaderValues("Set-Cookie", s.vals[:0])
	if len(s.vals) > 0 {
		s.jar.Store(s.target.Host, pathOnly(s.path), s.vals, time.Now())
	}
}

// redirect builds the request that follows a 3xx response.
func (c *compiler) redirect(rs *reqStep) func(v *engine.VU, x *httpx.Exchange, dst []byte) ([]byte, *httpx.Target, error) {
	return func(v *engine.VU, x *httpx.Exchange, dst []byte) ([]byte, *httpx.Target, error) {
		s := v.State.(*vuState)
		s.resp.Reset(x.Status, x.Header, x.Body)
		loc, ok := s.resp.HeaderValue("Location")
		if !ok || loc == "" {
			return nil, nil, nil // a 3xx without Location is the answer itself
		}
		rs.storeCookies(s, x)
		cur := &url.URL{Scheme: s.target.Scheme, Host: s.target.Host}
		if ref, err := url.Parse(string(s.path)); err == nil {
			cur = cur.ResolveReference(ref)
		}
		next, err := url.Parse(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("bad Location %q", loc)
		}
		next = cur.ResolveReference(next)
		t := s.target
		if next.Scheme != s.target.Scheme || next.Host != s.target.Host {
			key := next.Scheme + "://" + next.Host
			if t = c.targets[key]; t == nil {
				return nil, nil, fmt.Errorf("redirect to %s, a host the plan does not name; add a step for it so loadlab resolves it before the run", key)
			}
		}
		method, body, hasBody := s.method, s.body, len(s.body) > 0
		if x.Status == 301 || x.Status == 302 || x.Status == 303 {
			if method != "HEAD" {
				method = "GET"
			}
			body, hasBody = nil, false
		}
		s.target, s.method = t, method
		s.path = append(s.path[:0], next.RequestURI()...)
		req, err := rs.encode(s, dst, method, t, body, hasBody)
		return req, t, err
	}
}

// jsonT is a JSON body template: the YAML value with templates in its strings.
type jsonT struct {
	static []byte // the whole value when nothing in it changes
	keys   [][]byte
	vals   []*jsonT
	isObj  bool
	isArr  bool
	tpl    *expr.Template
}

func (c *compiler) jsonTemplate(n *node, scope *expr.Scope) *jsonT {
	j := &jsonT{}
	switch n.kind {
	case kindNull:
		j.static = []byte("null")
	case kindScalar:
		if !n.quoted {
			switch v := value(n).(type) {
			case bool:
				j.static = strconv.AppendBool(nil, v)
				return j
			case int:
				j.static = strconv.AppendInt(nil, int64(v), 10)
				return j
			case float64:
				if !math.IsInf(v, 0) && !math.IsNaN(v) {
					j.static = strconv.AppendFloat(nil, v, 'g', -1, 64)
					return j
				}
			}
			if n.value == "null" || n.value == "~" {
				j.static = []byte("null")
				return j
			}
		}
		t := c.template(Text{Src: n.value, Pos: n.pos, quoted: n.quoted}, scope)
		if t == nil {
			return j
		}
		if v, ok := t.Const(); ok {
			if b, err := json.Marshal(v); err == nil {
				j.static = b
			} else {
				j.static = appendJSONString(nil, format(v))
			}
		} else if s, ok := t.Static(); ok {
			j.static = appendJSONString(nil, s)
		} else {
			j.tpl = t
		}
	case kindMap:
		j.isObj = true
		for i, k := range n.keys {
			j.keys = append(j.keys, appendJSONString(nil, k.value))
			j.vals = append(j.vals, c.jsonTemplate(n.vals[i], scope))
		}
	case kindSeq:
		j.isArr = true
		for _, v := range n.vals {
			j.vals = append(j.vals, c.jsonTemplate(v, scope))
		}
	}
	if (j.isObj || j.isArr) && j.allStatic() {
		j.static, _ = j.append(nil, nil)
		j.keys, j.vals, j.isObj, j.isArr = nil, nil, false, false
	}
	return j
}

func (j *jsonT) allStatic() bool {
	for _, v := range j.vals {
		if v.static == nil {
			return false
		}
	}
	return true
}

func (j *jsonT) append(dst []byte, st *expr.State) ([]byte, error) {
	switch {
	case j.static != nil:
		return append(dst, j.static...), nil
	case j.tpl != nil:
		v, err := j.tpl.Eval(st)
		if err != nil {
			return dst, err
		}
		return appendJSONValue(dst, v), nil
	case j.isObj:
		dst = append(dst, '{')
		for i, k := range j.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, k...)
			dst = append(dst, ':')
			var err error
			if dst, err = j.vals[i].append(dst, st); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case j.isArr:
		dst = append(dst, '[')
		for i, v := range j.vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = v.append(dst, st); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return append(dst, "null"...), nil
}

func appendJSONValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return appendJSONString(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return append(dst, "null"...)
		}
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, v)
	case nil:
		return append(dst, "null"...)
	}
	return appendJSONString(dst, fmt.Sprint(v))
}

func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
