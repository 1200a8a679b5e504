package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/journey"
	"github.com/loadlab/loadlab/internal/secret"
	execseg "github.com/loadlab/loadlab/internal/segment"
)

// Resolver finds the address of a target; the plan's base URLs go through it
// once, when the program is built.
type Resolver func(ctx context.Context, u *url.URL) (*httpx.Origin, error)

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
	_, _, err := p.compile(context.Background(), opts, func(_ context.Context, u *url.URL) (*httpx.Origin, error) {
		return &httpx.Origin{Scheme: u.Scheme, Host: u.Host}, nil
	})
	return err
}

// ProgramOptions are what a run adds to the plan.
type ProgramOptions struct {
	// Params are an experiment point's parameter values: constants in
	// every template, like plan variables.
	Params map[string]any
	// Seed seeds the template functions uuid, randomInt and randomString; zero
	// takes the plan's seed:, and a plan without one gets a random seed.
	Seed uint64
	// Segment is the run's execution segment (engine.Config.Segment): its
	// unique and sequential data sources take their rows of it.
	Segment execseg.Segment
	// Learned, if set, hears the credentials VUs capture (Plan.
	// LearnsSecrets): the server's log masks them as it is written.
	Learned *secret.Learned
}

// Program compiles the plan into the engine's program, resolving each
// target's address with resolve.
func (p *Plan) Program(ctx context.Context, po ProgramOptions, resolve Resolver) (*engine.Program, error) {
	prog, _, err := p.program(ctx, po, resolve)
	return prog, err
}

// program is Program with the runner its VU hooks come from.
func (p *Plan) program(ctx context.Context, po ProgramOptions, resolve Resolver) (*engine.Program, *journey.Runner, error) {
	opts := p.opts
	if po.Params != nil {
		opts.Params = po.Params
	}
	prog, r, err := p.compile(ctx, opts, resolve)
	if err != nil {
		return nil, nil, err
	}
	r.Seed = po.Seed
	r.Learned = po.Learned
	for _, sc := range r.Scenarios {
		for _, src := range sc.Sources {
			src.Segment = po.Segment
		}
	}
	if r.Seed == 0 && p.Experiment != nil {
		r.Seed = p.Experiment.Seed
	}
	r.Install(prog)
	return prog, r, nil
}

// compiler holds what compiling a plan needs.
type compiler struct {
	p       *Plan
	d       *decoder
	resolve Resolver
	ctx     context.Context
	targets map[string]*httpx.Origin
	global  *expr.Scope

	runner       *journey.Runner
	credCaptures map[string]bool // Plan.credentialCaptures
	feeders      []*journey.Source
	// columns are the data columns by slot, for checking before load what
	// a template made of them renders (dataBound).
	columns    map[int]dataColumn
	resolveErr error
	reported   map[Pos]bool // errors about shared text, said once
	// stepChecks names each request step's checks by its engine step ID
	// (journey.Step.CheckNames), for engine.StepInfo.Checks.
	stepChecks map[int][]string
}

// runtimePick is how the runtime picks a data source's rows.
func runtimePick(p Pick) journey.Pick {
	switch p {
	case PickUnique:
		return journey.Unique
	case PickRandom:
		return journey.Random
	case PickVU:
		return journey.PerVU
	}
	return journey.Sequential
}

// compile compiles the plan into the engine's program and the runner that
// its VUs' hooks are installed from.
func (p *Plan) compile(ctx context.Context, opts Options, resolve Resolver) (*engine.Program, *journey.Runner, error) {
	c := &compiler{p: p, d: &decoder{}, resolve: resolve, ctx: ctx, targets: map[string]*httpx.Origin{}, credCaptures: p.credentialCaptures()}
	c.global = p.constScope(opts)
	c.global.SetMaxText(p.HTTP.MaxRequestBody)
	r := &journey.Runner{Scope: c.global, Targets: c.targets}
	c.runner = r
	r.VUSlot = c.global.Slot("vu")
	r.IterationSlot = c.global.Slot("iteration")
	c.global.SlotType(r.VUSlot, 0) // both are set as ints in Begin
	c.global.SlotType(r.IterationSlot, 0)
	r.ScenarioSlot = c.global.Slot("scenario")
	for _, f := range p.Data {
		src := &journey.Source{Name: f.Name, File: f.File, Rows: f.Rows, Pick: runtimePick(f.Pick)}
		for i, col := range f.Columns {
			slot := c.global.Slot(f.Name + "." + col)
			src.Slots = append(src.Slots, slot)
			if c.columns == nil {
				c.columns = map[int]dataColumn{}
			}
			c.columns[slot] = dataColumn{feeder: f, index: i}
		}
		c.feeders = append(c.feeders, src)
	}
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			for _, cp := range st.Captures {
				r.CaptureSlots = append(r.CaptureSlots, c.global.Slot(cp.Var))
			}
		}
	}
	credCaptures := p.credentialCaptures()
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			for _, cp := range st.Captures {
				if credCaptures[cp.Var] {
					r.SecretSlots = append(r.SecretSlots, c.global.Slot(cp.Var))
				}
			}
		}
	}
	for _, e := range p.capturedDerived() {
		if tpl, err := c.global.Compile("{{" + e + "}}"); err == nil {
			r.SecretExprs = append(r.SecretExprs, tpl)
		}
	}
	prog := &engine.Program{}
	for _, sc := range p.Scenarios {
		c.scenario(prog, sc)
	}
	if c.resolveErr != nil {
		return nil, nil, c.resolveErr
	}
	if len(c.d.errs) > 0 {
		sort.SliceStable(c.d.errs, func(i, j int) bool {
			a, b := c.d.errs[i].Pos, c.d.errs[j].Pos
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, nil, c.d.errs
	}
	return prog, r, nil
}

var identInText = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*\.`)

func (c *compiler) scenario(prog *engine.Program, sc *Scenario) {
	es := &engine.Scenario{Name: sc.Name, Weight: sc.Weight}
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
	used := map[*journey.Source]bool{}
	for i, st := range sc.Steps {
		for _, m := range identInText.FindAllString(stepText(st), -1) {
			for _, src := range c.feeders {
				if m == src.Name+"." {
					used[src] = true
				}
			}
		}
		if st.IsThink {
			es.Steps = append(es.Steps, &engine.Step{Name: "think", Think: journey.Think(st.Think, st.ThinkMax)})
			continue
		}
		id := len(prog.Steps)
		prog.Steps = append(prog.Steps, engine.StepInfo{Scenario: sc.Name, Name: st.Name})
		switch {
		case st.WS != nil:
			es.Steps = append(es.Steps, c.wsStep(prog, id, sc.Name, st, view))
		case st.Group != nil:
			// The requests of a group are consecutive: one engine step.
			r := &engine.Step{ID: id, Name: st.Name, Request: c.request(st, id, view)}
			if n := len(es.Steps); i > 0 && sc.Steps[i-1].Group == st.Group {
				p := es.Steps[n-1].Parallel
				p.Steps = append(p.Steps, r)
			} else {
				es.Steps = append(es.Steps, &engine.Step{Name: st.Group.Name, Parallel: &engine.ParallelStep{Max: st.Group.Max, Steps: []*engine.Step{r}}})
			}
		default:
			r := c.request(st, id, view)
			es.Steps = append(es.Steps, &engine.Step{ID: id, Name: st.Name, Request: r})
		}
		if names, ok := c.stepChecks[id]; ok {
			prog.Steps[id].Checks = names
		}
		// Its captures are usable from the next step on.
		for _, cp := range st.Captures {
			if later[cp.Var] == i+1 {
				view = view.Clone()
				view.Unhide(cp.Var)
			}
		}
	}
	var sources []*journey.Source
	for _, src := range c.feeders {
		if used[src] {
			sources = append(sources, src)
		}
	}
	prog.Scenarios = append(prog.Scenarios, es)
	c.runner.Scenarios = append(c.runner.Scenarios, journey.NewScenario(es, sources))
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
	if mp := st.Multipart; mp != nil {
		for _, f := range mp.Fields {
			b.WriteString(" " + f.Value.Src)
		}
		for _, f := range mp.Files {
			if f.Content != nil {
				b.WriteString(" " + f.Content.Src)
			}
		}
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
	b.WriteString(wsText(st))
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

func (c *compiler) fields(fs []Field, scope *expr.Scope) []journey.Field {
	out := make([]journey.Field, 0, len(fs))
	for _, f := range fs {
		if t := c.template(f.Value, scope); t != nil {
			out = append(out, journey.Field{Name: f.Name, Value: t})
		}
	}
	return out
}

func (c *compiler) target(base *url.URL) *httpx.Origin {
	key := base.Scheme + "://" + base.Host
	if t, ok := c.targets[key]; ok {
		return t
	}
	t, err := c.resolve(c.ctx, base)
	if err != nil {
		if c.resolveErr == nil {
			c.resolveErr = fmt.Errorf("%s: %w", key, err)
		}
		t = &httpx.Origin{Scheme: base.Scheme, Host: base.Host}
	}
	if t.TLS != nil && c.p.HTTP.Insecure {
		t.TLS.InsecureSkipVerify = true
	}
	t.ConfigureTLS(c.p.HTTP.TLS)
	c.targets[key] = t
	return t
}

func (c *compiler) request(st *Step, id int, scope *expr.Scope) *engine.RequestStep {
	h := c.p.HTTP
	rs := &journey.Step{ID: id, Name: st.Name, Method: st.Method, KeepAlive: h.KeepAlive, AcceptEncoding: h.AcceptEncoding}
	rs.Parallel = st.Group != nil
	follow := h.FollowRedirects
	if st.Redirects != nil {
		follow = *st.Redirects
	}
	var base *url.URL
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
		u, err := url.Parse(src[:len(src)-len(rest)+end])
		if err != nil || u.Host == "" {
			c.d.errorf(st.URL.Pos, "bad URL %q", src)
			return nil
		}
		if msg := badPort(u); msg != "" {
			c.d.errorf(st.URL.Pos, "%s: URL %q: %s", st.Name, clip(src), msg)
			return nil
		}
		base = u
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
		base = &url.URL{Scheme: c.p.Target.Scheme, Host: c.p.Target.Host}
		rs.Prefix = strings.TrimSuffix(c.p.Target.Path, "/")
		pathSrc = src
	default:
		c.d.errorf(st.URL.Pos, "a step URL must be a path starting with / (relative to target) or a URL starting with http:// or https://, got %q", src)
		return nil
	}
	rs.Path = c.template(Text{Src: pathSrc, Pos: textPos(st.URL, pathOff), quoted: false}, scope)
	rs.Query = c.fields(st.Query, scope)
	rs.MaxURL, rs.MaxBody = h.MaxURL, h.MaxRequestBody
	if rs.Path != nil {
		rs.Path.Limit = h.MaxURL
		if msg := c.dataBound(rs.Path, h.MaxURL-len(rs.Prefix), "max_url", false); msg != "" {
			c.d.errorf(st.URL.Pos, "%s: the URL %s", st.Name, msg)
		}
		if text, ok := rs.Path.Static(); ok {
			if bad := badEscape(text); bad != "" {
				c.d.errorf(st.URL.Pos, "%s: the URL has %q, which is not a %%XX escape (write %%25 for a %%)", st.Name, bad)
			}
			c.checkSize(st.URL.Pos, st.Name, "URL", len(rs.Prefix)+len(text), h.MaxURL, "max_url")
		}
	}
	for i, q := range rs.Query {
		q.Value.Limit = h.MaxURL
		if text, ok := q.Value.Static(); ok {
			c.checkSize(st.Query[i].Value.Pos, st.Name, "query "+q.Name, len(url.QueryEscape(text)), h.MaxURL, "max_url")
		}
	}
	// A step's header replaces the plan-wide one of the same name.
	var all []Field
	for _, f := range h.Headers {
		if !slices.ContainsFunc(st.Headers, func(g Field) bool { return strings.EqualFold(g.Name, f.Name) }) {
			all = append(all, f)
		}
	}
	all = append(all, st.Headers...)
	rs.Headers = c.fields(all, scope)
	for _, f := range rs.Headers {
		f.Value.Limit = h.MaxRequestHeader
		i := slices.IndexFunc(all, func(g Field) bool { return g.Name == f.Name })
		pos := all[i].Value.Pos
		text, ok := f.Value.Static()
		if !ok {
			if !c.reported[pos] {
				if msg := c.dataBound(f.Value, h.MaxRequestHeader, "max_request_header", true); msg != "" {
					c.report(pos, "%s: header %s: %s", st.Name, f.Name, msg)
				}
			}
			continue
		}
		if c.reported[pos] {
			continue // http.headers are every step's: say it once
		}
		if err := httpx.CheckHeaderValue(text); err != nil && httpx.CheckHeaderValue(all[i].Value.Src) == nil { // the text as written is checked when the plan decodes
			c.report(pos, "%s: header %s: %v", st.Name, f.Name, err)
			continue
		}
		if len(text) > h.MaxRequestHeader {
			c.report(pos, "%s: the header %s is %s, over its limit of %s (raise it with http.max_request_header; see Limits in docs/plan.md)", st.Name, f.Name, byteCount(len(text)), byteCount(h.MaxRequestHeader))
		}
	}
	for _, f := range all {
		if (strings.EqualFold(f.Name, "Content-Length") || strings.EqualFold(f.Name, "Cookie")) && !c.reported[f.Pos] {
			if c.reported == nil {
				c.reported = map[Pos]bool{}
			}
			c.reported[f.Pos] = true // http.headers are every step's: say it once
			c.d.errorf(f.Pos, "loadlab sets the %s header itself (the cookie jar sends cookies; Content-Length follows the body)", f.Name)
		}
	}
	switch {
	case st.JSON != nil:
		rs.JSON = c.jsonTemplate(st.JSON, scope)
		rs.ContentType = "application/json"
		if b, ok := rs.JSON.Static(); ok {
			c.checkSize(st.JSON.pos, st.Name, "json body", len(b), h.MaxRequestBody, "max_request_body")
		}
	case st.Form != nil:
		rs.Form = c.fields(st.Form, scope)
		rs.ContentType = "application/x-www-form-urlencoded"
		for i, f := range rs.Form {
			f.Value.Limit = h.MaxRequestBody
			if text, ok := f.Value.Static(); ok {
				c.checkSize(st.Form[i].Value.Pos, st.Name, "form "+f.Name, len(url.QueryEscape(text)), h.MaxRequestBody, "max_request_body")
			}
		}
	case st.Multipart != nil:
		c.multipart(rs, st, scope)
	case st.BodyFile != nil:
		path := st.BodyFile.Src
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.p.Dir, path)
		}
		if f, err := streamFile(path, int64(h.MaxRequestBody)); err != nil {
			c.report(st.BodyFile.Pos, "body_file: %v", err)
			break
		} else if f != nil {
			rs.BodyFile = f
			break
		}
		data, err := readFile(path, int64(h.MaxRequestBody))
		if err != nil {
			c.report(st.BodyFile.Pos, "body_file: %v", err)
			break
		}
		rs.Raw = expr.Literal(string(data))
	case st.Body != nil:
		rs.Raw = c.template(*st.Body, scope)
		if rs.Raw != nil {
			rs.Raw.Limit = h.MaxRequestBody
			if msg := c.dataBound(rs.Raw, h.MaxRequestBody, "max_request_body", false); msg != "" {
				c.d.errorf(st.Body.Pos, "%s: the body %s", st.Name, msg)
			}
			if text, ok := rs.Raw.Static(); ok {
				c.checkSize(st.Body.Pos, st.Name, "body", len(text), h.MaxRequestBody, "max_request_body")
			}
		}
	}
	if st.Expect != nil {
		rs.Checks = c.checks(st.Expect, scope)
	}
	for _, cp := range st.Captures {
		kind := map[string]expr.CaptureKind{"json": expr.FromJSON, "header": expr.FromHeader, "cookie": expr.FromCookie, "regex": expr.FromRegex, "css": expr.FromCSS}[cp.Kind]
		cc, err := expr.NewCapture(kind, cp.Arg, cp.Attr)
		if err != nil {
			c.d.errorf(cp.ArgP, "capture %s: %v", cp.Var, err)
			continue
		}
		rs.Captures = append(rs.Captures, journey.Capture{Slot: c.global.Slot(cp.Var), Capture: cc, Name: cp.Var, Secret: c.credCaptures[cp.Var]})
	}
	if c.stepChecks == nil {
		c.stepChecks = map[int][]string{}
	}
	c.stepChecks[id] = rs.CheckNames()
	if base == nil {
		return nil
	}
	rs.Target = c.target(base)
	if follow {
		rs.MaxRedirects = h.MaxRedirects
	}
	return rs.Request(c.runner)
}

// multipart compiles a multipart: body: its fields' and files' templates
// (a file: read now, as body_file: is), and a boundary of the step's own.
func (c *compiler) multipart(rs *journey.Step, st *Step, scope *expr.Scope) {
	h := c.p.HTTP
	mp := st.Multipart
	total := 0
	rs.Boundary = journey.Boundary(fmt.Sprintf("%s:%d:%d", st.Name, mp.Pos.Line, mp.Pos.Col))
	rs.ContentType = "multipart/form-data; boundary=" + rs.Boundary
	holdsBoundary := func(pos Pos, what, text string) {
		if strings.Contains(text, rs.Boundary) {
			c.d.errorf(pos, "%s: the %s holds the multipart boundary %s, which would end its part early", st.Name, what, rs.Boundary)
		}
	}
	for _, f := range mp.Fields {
		t := c.template(f.Value, scope)
		if t == nil {
			continue
		}
		t.Limit = h.MaxRequestBody
		if text, ok := t.Static(); ok {
			total += len(text)
			c.checkSize(f.Value.Pos, st.Name, "multipart field "+f.Name, len(text), h.MaxRequestBody, "max_request_body")
			holdsBoundary(f.Value.Pos, "multipart field "+f.Name, text)
		}
		rs.Multipart = append(rs.Multipart, journey.Part{Name: f.Name, Value: t})
	}
	for _, f := range mp.Files {
		part := journey.Part{Name: f.Name, File: true, Filename: f.Filename, ContentType: f.ContentType}
		switch {
		case f.File != nil && f.Content != nil: // said when it decoded
			continue
		case f.File != nil:
			path := f.File.Src
			if !filepath.IsAbs(path) {
				path = filepath.Join(c.p.Dir, path)
			}
			data, err := readFile(path, int64(h.MaxRequestBody))
			if err != nil {
				c.report(f.File.Pos, "multipart file %s: %v", f.Name, err)
				continue
			}
			part.Value = expr.Literal(string(data))
		case f.Content != nil:
			part.Value = c.template(*f.Content, scope)
			if part.Value == nil {
				continue
			}
			part.Value.Limit = h.MaxRequestBody
		default:
			part.Value = expr.Literal("")
		}
		if text, ok := part.Value.Static(); ok {
			total += len(text)
			pos := f.Pos
			if f.Content != nil {
				pos = f.Content.Pos
			}
			c.checkSize(pos, st.Name, "multipart file "+f.Name, len(text), h.MaxRequestBody, "max_request_body")
			holdsBoundary(pos, "multipart file "+f.Name, text)
		}
		rs.Multipart = append(rs.Multipart, part)
	}
	if total > h.MaxRequestBody {
		c.checkSize(mp.Pos, st.Name, "multipart body", total, h.MaxRequestBody, "max_request_body")
	}
	if rs.Multipart == nil {
		rs.Multipart = []journey.Part{}
	}
}

// dataColumn is a data source's column, by its slot.
type dataColumn struct {
	feeder *Feeder
	index  int
}

// dataBound checks, before load, a template made of literal text and data
// columns only (no expression, no capture): that no row renders it over
// limit, and, for a header, that no value it uses has a line break. It
// says what is wrong, or "". A template that reads anything else is
// checked as it renders.
func (c *compiler) dataBound(t *expr.Template, limit int, key string, header bool) string {
	if t == nil || len(c.columns) == 0 {
		return ""
	}
	slots, literal, ok := t.Lookups()
	if !ok || len(slots) == 0 {
		return ""
	}
	byFeeder := map[*Feeder][]int{}
	var order []*Feeder
	for _, slot := range slots {
		col, ok := c.columns[slot]
		if !ok {
			return "" // a capture, vu or iteration
		}
		if _, seen := byFeeder[col.feeder]; !seen {
			order = append(order, col.feeder)
		}
		byFeeder[col.feeder] = append(byFeeder[col.feeder], col.index)
	}
	// Rows of different sources pair up at run time: the longest row of
	// each adds up to the longest the template can be.
	total := literal
	var widest string
	for _, f := range order {
		most, at := 0, 0
		for r, row := range f.Rows {
			n := 0
			for _, i := range byFeeder[f] {
				if i >= len(row) {
					continue
				}
				if header {
					if err := httpx.CheckHeaderValue(row[i]); err != nil {
						return fmt.Sprintf("column %s of data source %s, row %d: %v", f.Columns[i], f.Name, r+1, err)
					}
				}
				n += len(row[i])
			}
			if n > most {
				most, at = n, r
			}
		}
		total += most
		widest = fmt.Sprintf("data source %s's row %d", f.Name, at+1)
	}
	if total > limit {
		return fmt.Sprintf("renders up to %s with %s, over its limit of %s (raise it with http.%s; see Limits in docs/plan.md)", byteCount(total), widest, byteCount(limit), key)
	}
	return ""
}

// checkSize reports a part of a request that is over its limit when the
// plan loads: its text depends on nothing that changes per VU.
func (c *compiler) checkSize(pos Pos, step, what string, n, limit int, key string) {
	if n > limit {
		c.d.errorf(pos, "%s: the %s is %s, over its limit of %s (raise it with http.%s; see Limits in docs/plan.md)", step, what, byteCount(n), byteCount(limit), key)
	}
}

// report reports an error once for text that every step shares.
func (c *compiler) report(pos Pos, format string, args ...any) {
	if c.reported == nil {
		c.reported = map[Pos]bool{}
	}
	if !c.reported[pos] {
		c.reported[pos] = true
		c.d.errorf(pos, format, args...)
	}
}

// badEscape is the first % in s that does not start a %XX escape.
func badEscape(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
			return s[i:min(i+3, len(s))]
		}
	}
	return ""
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (c *compiler) checks(e *Expect, scope *expr.Scope) []journey.Check {
	var out []journey.Check
	if len(e.Status) > 0 {
		want := make([]journey.Status, 0, len(e.Status))
		for _, s := range e.Status {
			want = append(want, journey.Status{Code: s.Code, Class: s.Class})
		}
		out = append(out, journey.StatusCheck(want))
	}
	for _, f := range e.Headers {
		if t := c.template(f.Value, scope); t != nil {
			out = append(out, journey.HeaderCheck(f.Name, t))
		}
	}
	for _, ct := range e.Contains {
		if t := c.template(ct, scope); t != nil {
			out = append(out, journey.ContainsCheck(t))
		}
	}
	for _, f := range e.JSON {
		path, err := expr.CompileJSONPath(f.Name)
		if err != nil {
			c.d.errorf(f.Pos, "expect.json: %v", err)
			continue
		}
		if t := c.template(f.Value, scope); t != nil {
			out = append(out, journey.JSONCheck(f.Name, path, t))
		}
	}
	return out
}

// jsonTemplate compiles a json: body: the YAML value with templates in its
// strings, its unchanging parts written out once.
func (c *compiler) jsonTemplate(n *node, scope *expr.Scope) *journey.JSON {
	switch n.kind {
	case kindNull:
		return journey.JSONStatic([]byte("null"))
	case kindScalar:
		if !n.quoted {
			switch v := value(n).(type) {
			case bool:
				return journey.JSONStatic(strconv.AppendBool(nil, v))
			case int:
				return journey.JSONStatic(strconv.AppendInt(nil, int64(v), 10))
			case float64:
				if !math.IsInf(v, 0) && !math.IsNaN(v) {
					return journey.JSONStatic(strconv.AppendFloat(nil, v, 'g', -1, 64))
				}
			}
			if n.value == "null" || n.value == "~" {
				return journey.JSONStatic([]byte("null"))
			}
		}
		t := c.template(Text{Src: n.value, Pos: n.pos, quoted: n.quoted}, scope)
		if t == nil {
			return new(journey.JSON)
		}
		t.Limit = c.p.HTTP.MaxRequestBody
		if v, ok := t.Const(); ok {
			if b, err := json.Marshal(v); err == nil {
				return journey.JSONStatic(b)
			}
			return journey.JSONStatic(journey.AppendJSONString(nil, format(v)))
		}
		if s, ok := t.Static(); ok {
			return journey.JSONStatic(journey.AppendJSONString(nil, s))
		}
		return journey.JSONExpr(t)
	case kindMap:
		keys := make([]string, 0, len(n.keys))
		vals := make([]*journey.JSON, 0, len(n.keys))
		for i, k := range n.keys {
			keys = append(keys, k.value)
			vals = append(vals, c.jsonTemplate(n.vals[i], scope))
		}
		return journey.JSONObject(keys, vals)
	case kindSeq:
		vals := make([]*journey.JSON, 0, len(n.vals))
		for _, v := range n.vals {
			vals = append(vals, c.jsonTemplate(v, scope))
		}
		return journey.JSONArray(vals)
	}
	return new(journey.JSON)
}
