package plan

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/limits"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/secret"
	"github.com/loadlab/loadlab/internal/server"
)

// Server describes the server under test: how to start it, when it is
// ready, how to stop it, and files rendered from templates before it starts.
// Its texts are templates over the plan's variables, the environment and an
// experiment's parameters (never per-VU values).
type Server struct {
	Pos          Pos
	Run          Text   // a command line, run by /bin/sh -c
	Argv         []Text // or the command as a list, run directly
	Dir          Text
	Env          []Field
	Ready        Text
	ReadyTimeout time.Duration
	StopSignal   syscall.Signal
	Grace        time.Duration
	MemoryQuota  int64
	Files        []ServerFile
	// BeforeEachRun runs before the server starts, AfterEachRun after it
	// stops, once per run; each is bounded by EachRunTimeout.
	BeforeEachRun, AfterEachRun *Command
	EachRunTimeout              time.Duration
	Limits                      *ServerLimits // nil: none
}

// ServerLimits are server.limits: templates, so that params can sweep them,
// read by limits.ParseCPUs and quantity.ParseBytes when rendered. An empty
// Src is a limit not set.
type ServerLimits struct {
	Pos                Pos
	CPUs, Memory, Swap Text
}

// Command is a command line run by /bin/sh -c (Run), or an argument list
// run directly (Argv), as server.run is written.
type Command struct {
	Key  string // "server.before_each_run"
	Run  Text
	Argv []Text
	Pos  Pos
}

// command reads a command as server.run is written: a command line, or a
// list of arguments.
func (d *decoder) command(r *node, key string) *Command {
	c := &Command{Key: key, Pos: r.pos}
	if r.kind == kindSeq {
		if len(r.vals) == 0 {
			d.errorf(r.pos, "%s is an empty list", key)
		}
		for _, a := range r.vals {
			if t, ok := d.text(a, key+" argument"); ok {
				c.Argv = append(c.Argv, t)
			}
		}
		return c
	}
	c.Run, _ = d.text(r, key)
	if strings.TrimSpace(c.Run.Src) == "" {
		d.errorf(r.pos, "%s is empty", key)
	}
	return c
}

// ServerFile is a file written before the server starts.
type ServerFile struct {
	Path     string // where, relative to dir
	Template Text   // its content, a template
	Pos      Pos
}

func (d *decoder) server(p *Plan, n *node) {
	m, ok := d.fields(n, "server", "run", "dir", "env", "ready", "ready_timeout", "stop_signal", "grace", "memory_quota", "files", "before_each_run", "after_each_run", "each_run_timeout", "limits")
	if !ok {
		return
	}
	s := &Server{Pos: n.pos, Dir: Text{Src: ".", Pos: n.pos}}
	switch r := m.get("run"); {
	case r == nil:
		if !d.misspelt["run"] {
			d.errorf(n.pos, "server needs run: the command that starts it, as a command line or a list of arguments")
		}
	case r.kind == kindSeq:
		if len(r.vals) == 0 {
			d.errorf(r.pos, "server.run is an empty list")
		}
		for _, a := range r.vals {
			if t, ok := d.text(a, "server.run argument"); ok {
				s.Argv = append(s.Argv, t)
			}
		}
	default:
		s.Run, _ = d.text(r, "server.run")
		if strings.TrimSpace(s.Run.Src) == "" {
			d.errorf(r.pos, "server.run is empty")
		}
	}
	if v := m.get("dir"); v != nil {
		s.Dir, _ = d.text(v, "server.dir")
	}
	s.Env = d.fieldsOf(m.get("env"), "server.env")
	if v := m.get("before_each_run"); v != nil {
		s.BeforeEachRun = d.command(v, "server.before_each_run")
	}
	if v := m.get("after_each_run"); v != nil {
		s.AfterEachRun = d.command(v, "server.after_each_run")
	}
	if v := m.get("each_run_timeout"); v != nil {
		s.EachRunTimeout, _ = d.duration(v, "server.each_run_timeout")
	}
	if v := m.get("ready"); v != nil {
		if t, ok := d.text(v, "server.ready"); ok {
			if !strings.HasPrefix(t.Src, "http://") && !strings.HasPrefix(t.Src, "https://") && !strings.HasPrefix(t.Src, "tcp://") {
				d.errorf(v.pos, "server.ready must be an http:// URL (answering 2xx or 3xx) or tcp://host:port, got %q", t.Src)
			}
			s.Ready = t
		}
	}
	if v := m.get("ready_timeout"); v != nil {
		s.ReadyTimeout, _ = d.duration(v, "server.ready_timeout")
	}
	if v := m.get("grace"); v != nil {
		s.Grace, _ = d.duration(v, "server.grace")
	}
	if v := m.get("stop_signal"); v != nil {
		if name, ok := d.str(v, "server.stop_signal"); ok {
			sig, ok := signals[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
			if !ok {
				d.errorf(v.pos, "server.stop_signal must be TERM, INT, QUIT, HUP, USR1, USR2 or KILL, got %q", name)
			}
			s.StopSignal = sig
		}
	}
	if v := m.get("memory_quota"); v != nil {
		s.MemoryQuota, _ = d.size(v, "server.memory_quota")
	}
	if v := m.get("limits"); v != nil {
		s.Limits = d.serverLimits(v, p.Experiment.BoxesSetMemory())
	}
	if f := m.get("files"); f != nil {
		if f.kind != kindMap {
			d.errorf(f.pos, "server.files must map each file to write to a template file, or to {content: ...}")
		}
		for i, k := range f.keys {
			sf := ServerFile{Path: k.value, Pos: k.pos}
			// Written into dir, and only there: not /etc/passwd, not ../../x.
			if !filepath.IsLocal(k.value) {
				d.errorf(k.pos, "server.files %q must be a relative path inside dir, such as conf/haproxy.cfg: not absolute, not climbing out with ..", k.value)
				continue
			}
			v := f.vals[i]
			switch v.kind {
			case kindScalar:
				src := v.value
				if !filepath.IsAbs(src) {
					src = filepath.Join(p.Dir, src)
				}
				data, err := readFile(src, MaxTemplateBytes)
				if err != nil {
					d.errorf(v.pos, "server.files %s: the template: %v", k.value, err)
					continue
				}
				sf.Template = Text{Src: string(data), Pos: Pos{File: src, Line: 1, Col: 1}}
			case kindMap:
				cm, ok := d.fields(v, "server.files "+k.value, "content")
				if !ok {
					continue
				}
				c := cm.get("content")
				if c == nil {
					d.errorf(v.pos, "server.files %s: expected content:", k.value)
					continue
				}
				sf.Template, _ = d.text(c, "content")
			default:
				d.errorf(v.pos, "server.files %s must name a template file or give {content: ...}", k.value)
				continue
			}
			s.Files = append(s.Files, sf)
		}
	}
	p.Server = s
}

func (d *decoder) serverLimits(n *node, boxMemory bool) *ServerLimits {
	m, ok := d.fields(n, "server.limits", "cpus", "memory", "swap")
	if !ok {
		return nil
	}
	l := &ServerLimits{Pos: n.pos}
	for _, f := range []struct {
		key string
		dst *Text
	}{{"cpus", &l.CPUs}, {"memory", &l.Memory}, {"swap", &l.Swap}} {
		v := m.get(f.key)
		if v == nil {
			continue
		}
		t, ok := d.text(v, "server.limits."+f.key)
		if !ok {
			continue
		}
		*f.dst = t
		if !strings.Contains(t.Src, "{{") {
			// Checked here too, so that a plain value's mistake is found at load
			// even when the plan is not rendered.
			if _, err := parseLimit(f.key, t.Src); err != nil {
				d.errorf(t.Pos, "server.limits.%s: %v", f.key, err)
			}
		}
	}
	if l.Swap.Src != "" && l.Memory.Src == "" && !boxMemory {
		d.errorf(l.Swap.Pos, "server.limits.swap needs server.limits.memory: swap is allowed beside a memory limit")
	}
	return l
}

// parseLimit reads one rendered limit; cpus gives a limits.CPUs, memory and
// swap an int64 of bytes.
func parseLimit(key, src string) (any, error) {
	if key == "cpus" {
		return limits.ParseCPUs(src)
	}
	b, err := quantity.ParseBytes(src)
	if err == nil && key == "memory" && b < minMemoryLimit {
		return nil, fmt.Errorf("%s is below %s: no server starts in that", quantity.FormatBytes(b), quantity.FormatBytes(minMemoryLimit))
	}
	return b, err
}

// minMemoryLimit keeps a mistyped unit (512 for 512MiB) from starting a
// server that dies before its first line.
const minMemoryLimit = 4 << 20

// limits renders the limits for a run; errors are placed at their value.
func (l *ServerLimits) render(render func(Text) string) (limits.Limits, Errors) {
	var out limits.Limits
	var errs Errors
	for _, f := range []struct {
		key string
		t   Text
	}{{"cpus", l.CPUs}, {"memory", l.Memory}, {"swap", l.Swap}} {
		if f.t.Src == "" {
			continue
		}
		src := render(f.t)
		v, err := parseLimit(f.key, src)
		if err != nil {
			errs = append(errs, &Error{Pos: f.t.Pos, Msg: fmt.Sprintf("server.limits.%s: %v", f.key, err)})
			continue
		}
		switch f.key {
		case "cpus":
			out.CPUs = v.(limits.CPUs)
		case "memory":
			out.Memory = v.(int64)
		case "swap":
			out.Swap, out.SwapSet = v.(int64), true
		}
	}
	return out, errs
}

// ServerSpec renders the server section for a run; params are an
// experiment point's parameter values (nil for a single run).
func (p *Plan) ServerSpec(params map[string]any) (server.Spec, error) {
	s := p.Server
	opts := p.opts
	if params != nil {
		opts.Params = params
	}
	sc := p.constScope(opts)
	var errs Errors
	render := renderStatic(sc, &errs, "the server's settings")
	spec := server.Spec{
		Dir:          render(s.Dir),
		ReadyTimeout: s.ReadyTimeout,
		StopSignal:   s.StopSignal,
		Grace:        s.Grace,
		MemoryQuota:  s.MemoryQuota,
		Secrets:      p.Secrets(),
	}
	if !filepath.IsAbs(spec.Dir) {
		spec.Dir = filepath.Join(p.Dir, spec.Dir)
	}
	if len(s.Argv) > 0 {
		for _, a := range s.Argv {
			spec.Argv = append(spec.Argv, render(a))
		}
	} else {
		spec.Shell = render(s.Run)
	}
	if s.Env != nil {
		spec.Env = map[string]string{}
		for _, e := range s.Env {
			spec.Env[e.Name] = render(e.Value)
		}
	}
	if s.Ready.Src != "" {
		spec.Ready = render(s.Ready)
	}
	for _, f := range s.Files {
		content := render(f.Template)
		file := server.File{Path: f.Path, Content: []byte(content)}
		if holdsSecret(content, spec.Secrets) {
			file.Mode = 0o600 // for the server's user alone, as a key file is
		}
		spec.Files = append(spec.Files, file)
	}
	if s.Limits != nil {
		var limitErrs Errors
		spec.Limits, limitErrs = s.Limits.render(render)
		errs = append(errs, limitErrs...)
	}
	var boxErrs Errors
	spec.Limits, boxErrs = p.boxLimits(opts.Params, spec.Limits)
	errs = append(errs, boxErrs...)
	if len(errs) > 0 {
		return spec, errs.sorted()
	}
	if err := spec.Validate(); err != nil {
		return spec, s.specErrors(err)
	}
	return spec, nil
}

// holdsSecret reports whether text holds one of secrets in any of its
// forms (secret.Forms), however short the secret.
func holdsSecret(text string, secrets []string) bool {
	for _, v := range secrets {
		if v != "" && strings.Contains(text, v) {
			return true
		}
	}
	return secret.Replace(text, secrets) != text
}

// specErrors places the problems server.Spec found at the plan keys they
// came from: "ready: port 99999 is not 1..65535" at ready's value.
func (s *Server) specErrors(err error) Errors {
	var errs Errors
	var joined interface{ Unwrap() []error }
	list := []error{err}
	if errors.As(err, &joined) {
		list = joined.Unwrap()
	}
	for _, e := range list {
		var se *server.SpecError
		if !errors.As(e, &se) {
			errs = append(errs, &Error{Pos: s.Pos, Msg: "server: " + e.Error()})
			continue
		}
		pos, key := s.Pos, "server"
		field, index := se.Field, -1
		if name, rest, ok := strings.Cut(field, "["); ok {
			field = name
			if n, err := strconv.Atoi(strings.SplitN(rest, "]", 2)[0]); err == nil {
				index = n
			}
		}
		switch field {
		case "Ready":
			pos, key = s.Ready.Pos, "server.ready"
		case "Dir":
			pos, key = s.Dir.Pos, "server.dir"
		case "Shell":
			pos, key = s.Run.Pos, "server.run"
		case "Argv":
			key = "server.run"
			if index >= 0 && index < len(s.Argv) {
				pos = s.Argv[index].Pos
			}
		case "Env":
			key = "server.env"
			for _, f := range s.Env {
				if strings.Contains(se.Field, "["+f.Name+"]") || strings.Contains(se.Msg, strconv.Quote(f.Name)) {
					pos, key = f.Pos, "server.env."+f.Name
				}
			}
		case "Files":
			key = "server.files"
			if index >= 0 && index < len(s.Files) {
				pos, key = s.Files[index].Pos, "server.files "+s.Files[index].Path
			}
		}
		errs = append(errs, &Error{Pos: pos, Msg: key + ": " + se.Msg})
	}
	return errs.sorted()
}

func templateErr(t Text, err error) *Error {
	d := &decoder{}
	d.templateError(t, err)
	return d.errs[0]
}

// sampleParams are parameter values to validate templates with: the
// point's, or the baseline's.
func (p *Plan) sampleParams() map[string]any { return p.opts.Params }

// EachRunSpecs renders server.before_each_run and server.after_each_run for
// a run (nil where the plan has none): each runs in the server's dir with
// its env, its secrets masked, and is stopped as the server is
// (stop_signal, then SIGKILL after grace). before_each_run also writes
// server.files first, so that it may read them. params are as for
// ServerSpec.
func (p *Plan) EachRunSpecs(params map[string]any) (before, after *server.Spec, err error) {
	s := p.Server
	if s == nil || (s.BeforeEachRun == nil && s.AfterEachRun == nil) {
		return nil, nil, nil
	}
	base, err := p.ServerSpec(params)
	if err != nil {
		return nil, nil, err
	}
	opts := p.opts
	if params != nil {
		opts.Params = params
	}
	sc := p.constScope(opts)
	var errs Errors
	build := func(c *Command, files []server.File) *server.Spec {
		if c == nil {
			return nil
		}
		spec := base
		spec.Argv, spec.Shell, spec.Ready, spec.MemoryQuota, spec.Files = nil, "", "", 0, files
		render := renderStatic(sc, &errs, c.Key)
		if len(c.Argv) > 0 {
			for _, a := range c.Argv {
				spec.Argv = append(spec.Argv, render(a))
			}
		} else {
			spec.Shell = render(c.Run)
		}
		if err := spec.Validate(); err != nil {
			errs = append(errs, &Error{Pos: c.Pos, Msg: c.Key + ": " + err.Error()})
		}
		return &spec
	}
	before = build(s.BeforeEachRun, base.Files)
	after = build(s.AfterEachRun, nil)
	if len(errs) > 0 {
		return nil, nil, errs.sorted()
	}
	return before, after, nil
}

// renderStatic renders a template of the server section once, for the whole
// run: it may use plan variables, env.NAME and params, not per-VU values; a
// mistake is added to errs, naming what holds it.
func renderStatic(sc *expr.Scope, errs *Errors, what string) func(Text) string {
	return func(t Text) string {
		tpl, err := sc.Compile(t.Src)
		if err != nil {
			*errs = append(*errs, templateErr(t, err))
			return ""
		}
		out, ok := tpl.Static()
		if !ok {
			*errs = append(*errs, &Error{Pos: t.Pos, Msg: what + " may use plan variables, env.NAME and params, not per-VU values"})
		}
		return out
	}
}
