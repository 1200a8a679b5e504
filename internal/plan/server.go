package plan

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

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
}

// ServerFile is a file written before the server starts.
type ServerFile struct {
	Path     string // where, relative to dir
	Template Text   // its content, a template
	Pos      Pos
}

func (d *decoder) server(p *Plan, n *node) {
	m, ok := d.fields(n, "server", "run", "dir", "env", "ready", "ready_timeout", "stop_signal", "grace", "memory_quota", "files")
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
	render := func(t Text) string {
		tpl, err := sc.Compile(t.Src)
		if err != nil {
			errs = append(errs, templateErr(t, err))
			return ""
		}
		out, ok := tpl.Static()
		if !ok {
			errs = append(errs, &Error{Pos: t.Pos, Msg: "the server's settings may use plan variables, env.NAME and params, not per-VU values"})
		}
		return out
	}
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
		spec.Files = append(spec.Files, server.File{Path: f.Path, Content: []byte(render(f.Template))})
	}
	if len(errs) > 0 {
		return spec, errs.sorted()
	}
	if err := spec.Validate(); err != nil {
		return spec, s.specErrors(err)
	}
	return spec, nil
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
