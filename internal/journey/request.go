package journey

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/secret"
)

// Field is a compiled name and template: a header, a query parameter, a
// form field.
type Field struct {
	Name  string
	Value *expr.Template
}

// Step is a compiled request step. Request readies it for a runner's VUs:
// call it once, before Build, After or Redirect.
type Step struct {
	ID     int // the engine's step ID, for checks
	Name   string
	Method string
	Target *httpx.Origin
	// Prefix is the target's own path, before the step's.
	Prefix string
	Path   *expr.Template
	Query  []Field
	// Headers are sent in order; those that carry credentials (secret.Name)
	// are left out of a request that a redirect sends to another host.
	Headers []Field
	// At most one of JSON, Form, Multipart and Raw is set: the body.
	JSON *JSON
	Form []Field
	// Multipart are the parts of a multipart/form-data body, in order,
	// separated by Boundary (ContentType names it).
	Multipart []Part
	Boundary  string
	Raw       *expr.Template
	// BodyFile, instead of those, is a body_file over what is held in
	// memory (16 MiB): each request sends it from the file, chunk by chunk.
	BodyFile *httpx.BodyFile
	// ContentType goes with the body unless Headers has a Content-Type.
	ContentType string
	// AcceptEncoding is sent unless Headers has an Accept-Encoding.
	AcceptEncoding string
	KeepAlive      bool
	Checks         []Check
	Captures       []Capture
	// CheckBase is the index of the first of Checks among the checks of
	// the engine step ID (Captures' follow Checks'): zero but for a
	// WebSocket step's receives, which share their step's list.
	CheckBase int
	// MaxRedirects is how many redirects a request follows; zero follows none.
	MaxRedirects int
	// MaxURL and MaxBody bound the request target (path and query) and the
	// body a request renders, when above zero; each header's bound is its
	// template's Limit. A request over one is not sent: Build fails with
	// engine.ErrRequestTooLarge, its own check.
	MaxURL, MaxBody int
	// Parallel says the step is in a parallel group (engine.ParallelStep):
	// its requests are in flight with others of the VU, so what a request
	// needs from its Build to its After is kept per lane.
	Parallel bool

	runner *Runner
	writer httpx.RequestWriter
	// headers are Headers as Request readies them, one per header.
	headers []header
}

// header is a step's header with what can be known of it before any
// request: whether it is a credential (secret.Name), and its text when it
// has no per-VU part and that text can be sent as it is.
type header struct {
	Field
	credential bool
	host       bool // a Host header: a virtual host of the step's target
	static     string
	isStatic   bool
}

// Request is the step in the engine's form, for runner's VUs.
func (st *Step) Request(r *Runner) *engine.RequestStep {
	st.runner = r
	st.writer = httpx.RequestWriter{ContentType: st.ContentType, Close: !st.KeepAlive, AcceptEncoding: st.AcceptEncoding}
	st.headers = st.headers[:0]
	for _, h := range st.Headers {
		st.writer.Own(h.Name)
		x := header{Field: h, credential: secret.Name(h.Name), host: strings.EqualFold(h.Name, "Host")}
		if text, ok := h.Value.Static(); ok && httpx.CheckHeaderValue(text) == nil {
			x.static, x.isStatic = text, true
		}
		st.headers = append(st.headers, x)
	}
	for i := range st.Multipart {
		st.Multipart[i].head = partHead(st.Boundary, &st.Multipart[i])
	}
	rs := &engine.RequestStep{
		Target:     st.Target,
		Build:      func(v *engine.VU, dst []byte) ([]byte, error) { return st.Build(v.State.(*State), dst) },
		Head:       st.Method == "HEAD",
		Idempotent: httpx.Idempotent(st.Method),
		CloseAfter: !st.KeepAlive,
		Keep:       true,
		After:      func(v *engine.VU, x *httpx.Exchange) bool { return st.After(v.State.(*State), v, x) },
		StaticBody: st.BodyFile,
	}
	if st.MaxRedirects > 0 {
		rs.Redirect = func(v *engine.VU, x *httpx.Exchange, dst []byte) ([]byte, *httpx.Origin, error) {
			return st.Redirect(v.State.(*State), x, dst)
		}
		rs.MaxRedirects = st.MaxRedirects
	}
	if st.Parallel {
		st.perLane(rs)
	}
	return rs
}

// perLane makes a step of a parallel group keep its request's path,
// target, method and body per lane, from its Build (and each redirect's)
// to its After: other requests of the VU are built in between.
func (st *Step) perLane(rs *engine.RequestStep) {
	rs.Build = func(v *engine.VU, dst []byte) ([]byte, error) {
		s := v.State.(*State)
		out, err := st.Build(s, dst)
		s.saveLane(v.Lane())
		return out, err
	}
	rs.After = func(v *engine.VU, x *httpx.Exchange) bool {
		s := v.State.(*State)
		s.restoreLane(v.Lane())
		return st.After(s, v, x)
	}
	if rs.Redirect != nil {
		rs.Redirect = func(v *engine.VU, x *httpx.Exchange, dst []byte) ([]byte, *httpx.Origin, error) {
			s := v.State.(*State)
			s.restoreLane(v.Lane())
			out, t, err := st.Redirect(s, x, dst)
			s.saveLane(v.Lane())
			return out, t, err
		}
	}
}

// laneRequest is what a request in flight in a parallel group needs kept.
type laneRequest struct {
	path, body []byte
	target     *httpx.Origin
	method     string
}

func (s *State) saveLane(i int) {
	if i < 0 {
		return
	}
	for len(s.lanes) <= i {
		s.lanes = append(s.lanes, laneRequest{})
	}
	l := &s.lanes[i]
	l.path = append(l.path[:0], s.path...)
	l.body = append(l.body[:0], s.body...)
	l.target, l.method = s.target, s.method
}

func (s *State) restoreLane(i int) {
	if i < 0 || i >= len(s.lanes) {
		return
	}
	l := &s.lanes[i]
	s.path = append(s.path[:0], l.path...)
	s.body = append(s.body[:0], l.body...)
	s.target, s.method = l.target, l.method
}

func (st *Step) hasBody() bool {
	return st.JSON != nil || st.Form != nil || st.Multipart != nil || st.Raw != nil || st.BodyFile != nil
}

// Build appends the step's request for a VU to dst. A request that reads
// a variable whose capture found nothing fails with why the capture did.
func (st *Step) Build(s *State, dst []byte) ([]byte, error) {
	out, err := st.build(s, dst)
	return out, s.explain(err)
}

func (st *Step) build(s *State, dst []byte) ([]byte, error) {
	s.target, s.method = st.Target, st.Method
	var err error
	s.body = s.body[:0]
	switch {
	case st.JSON != nil:
		s.body, err = st.JSON.Append(s.body, s.vars)
	case st.Form != nil:
		for i, f := range st.Form {
			if i > 0 {
				s.body = append(s.body, '&')
			}
			s.body = append(s.body, url.QueryEscape(f.Name)...)
			s.body = append(s.body, '=')
			start := len(s.body)
			if s.body, err = f.Value.Append(s.body, s.vars); err != nil {
				s.body = s.body[:0]
				return dst, tooLarge("form "+f.Name, err)
			}
			s.body = append(s.body[:start], url.QueryEscape(string(s.body[start:]))...)
		}
	case st.Multipart != nil:
		if s.body, err = st.appendMultipart(s.body, s.vars); err != nil {
			s.body = s.body[:0]
			return dst, err
		}
	case st.Raw != nil:
		s.body, err = st.Raw.Append(s.body, s.vars)
	}
	if err == nil && st.MaxBody > 0 && len(s.body) > st.MaxBody {
		err = &expr.TooLongError{Limit: st.MaxBody, AtLeast: len(s.body)}
	}
	if err != nil {
		s.body = s.body[:0]
		return dst, tooLarge("body", err)
	}
	// The path and query.
	s.path = append(s.path[:0], st.Prefix...)
	start := len(s.path)
	if s.path, err = st.Path.Append(s.path, s.vars); err != nil {
		if errors.As(err, new(*expr.TooLongError)) {
			return dst, tooLarge("URL", err)
		}
		return dst, err
	}
	s.path = escapePath(s.path, start)
	for i, q := range st.Query {
		sep := byte('&')
		if i == 0 && bytes.IndexByte(s.path, '?') < 0 {
			sep = '?'
		}
		s.path = append(s.path, sep)
		s.path = append(s.path, url.QueryEscape(q.Name)...)
		s.path = append(s.path, '=')
		vstart := len(s.path)
		if s.path, err = q.Value.Append(s.path, s.vars); err != nil {
			return dst, tooLarge("query "+q.Name, err)
		}
		s.path = append(s.path[:vstart], url.QueryEscape(string(s.path[vstart:]))...)
		if st.MaxURL > 0 && len(s.path) > st.MaxURL {
			return dst, tooLarge("URL", &expr.TooLongError{Limit: st.MaxURL, AtLeast: len(s.path)})
		}
	}
	if st.MaxURL > 0 && len(s.path) > st.MaxURL {
		return dst, tooLarge("URL", &expr.TooLongError{Limit: st.MaxURL, AtLeast: len(s.path)})
	}
	return st.encode(s, dst, st.Method, st.Target, s.body, st.hasBody(), st.BodyFile)
}

// encode writes the request line, headers and body with httpx's writer.
func (st *Step) encode(s *State, dst []byte, method string, t *httpx.Origin, body []byte, hasBody bool, file *httpx.BodyFile) ([]byte, error) {
	w := &st.writer
	if t != st.Target && w.OwnHost {
		// The step's Host names a virtual host of its own target; a
		// redirect to another host gets that host's name.
		other := *w
		other.OwnHost = false
		w = &other
	}
	dst = w.AppendStart(dst, method, s.path, t.Host)
	var err error
	for i := range st.headers {
		h := &st.headers[i]
		if t != st.Target && (h.credential || h.host) {
			continue // credentials and the Host do not follow a redirect to another host
		}
		dst = httpx.StartHeader(dst, h.Name)
		if h.isStatic { // checked once, in Request
			dst = append(append(dst, h.static...), "\r\n"...)
			continue
		}
		start := len(dst)
		if dst, err = h.Value.Append(dst, s.vars); err != nil {
			return dst, tooLarge("header "+h.Name, err)
		}
		if dst, err = httpx.EndHeader(dst, start); err != nil {
			return dst, fmt.Errorf("header %s: %w", h.Name, err)
		}
	}
	dst = s.jar.AppendHeader(dst, t.Host, pathOnly(s.path), t.TLS != nil, time.Now())
	if file != nil {
		return w.AppendEndSized(dst, method, file.Size), nil
	}
	return w.AppendEnd(dst, method, body, hasBody), nil
}

// tooLarge says which part of a request err is about; a part over its
// size limit is engine.ErrRequestTooLarge, counted as a check of its own.
func tooLarge(what string, err error) error {
	var tl *expr.TooLongError
	if errors.As(err, &tl) {
		return fmt.Errorf("%s %w (%w; see http.max_request_header, max_url and max_request_body in docs/plan.md)", what, err, engine.ErrRequestTooLarge)
	}
	return fmt.Errorf("%s: %w", what, err)
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

// Redirect appends the request that follows a 3xx response and says where
// it goes; a 3xx without a Location is the answer itself (nil, nil, nil).
// A 301, 302 or 303 turns the request into a GET without a body; a
// redirect to a host that is not among the runner's targets is an error.
func (st *Step) Redirect(s *State, x *httpx.Exchange, dst []byte) ([]byte, *httpx.Origin, error) {
	s.resp.Reset(x.Status, x.Header, x.Body)
	loc, ok := s.resp.HeaderValue("Location")
	if !ok || loc == "" {
		return nil, nil, nil
	}
	st.storeCookies(s, x)
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
		if t = st.runner.Targets[key]; t == nil {
			return nil, nil, fmt.Errorf("redirect to %s, a host the plan does not name; add a step for it so loadlab resolves it before the run", key)
		}
	}
	method, body, hasBody := s.method, s.body, len(s.body) > 0 || st.BodyFile != nil
	if x.Status == 301 || x.Status == 302 || x.Status == 303 {
		if method != "HEAD" {
			method = "GET"
		}
		body, hasBody = nil, false
	}
	s.target, s.method = t, method
	s.path = append(s.path[:0], next.RequestURI()...)
	if st.BodyFile != nil && hasBody {
		return nil, nil, fmt.Errorf("a %d redirect would send the body again, and body_file's, over 16 MiB, is sent from the file by the first request only", x.Status)
	}
	req, err := st.encode(s, dst, method, t, body, hasBody, nil)
	return req, t, err
}
