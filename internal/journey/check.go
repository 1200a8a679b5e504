package journey

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/theory/jsonpath"

	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
)

// Check is one expectation of a step about its response.
type Check struct {
	Name string
	ok   func(s *State, x *httpx.Exchange) bool
	// sought says what the check looked for, when it failed (nil: nothing
	// in particular, such as a status).
	sought func(s *State) failure.Sought
}

// OK reports whether the response the VU's state holds meets the check.
func (c Check) OK(s *State, x *httpx.Exchange) bool { return c.ok(s, x) }

// Status is an expected status: a code (200), or a class (2xx: Code 200,
// Class true).
type Status struct {
	Code  int
	Class bool
}

// StatusCheck passes when the response's status is one of want.
func StatusCheck(want []Status) Check {
	var names []string
	for _, s := range want {
		if s.Class {
			names = append(names, fmt.Sprintf("%dxx", s.Code/100))
		} else {
			names = append(names, strconv.Itoa(s.Code))
		}
	}
	return Check{Name: "status is " + strings.Join(names, " or "), ok: func(_ *State, x *httpx.Exchange) bool {
		if x.Err != nil {
			return false
		}
		for _, s := range want {
			if s.Code == x.Status || s.Class && x.Status/100 == s.Code/100 {
				return true
			}
		}
		return false
	}}
}

// HeaderCheck passes when the response has the header with the value want
// gives.
func HeaderCheck(name string, want *expr.Template) Check {
	return Check{Name: "header " + name, ok: func(s *State, x *httpx.Exchange) bool {
		got, ok := s.resp.HeaderValue(name)
		w, err := want.String(s.vars)
		return ok && err == nil && got == w
	}}
}

// ContainsCheck passes when the response body contains the text want gives.
func ContainsCheck(want *expr.Template) Check {
	return Check{Name: "body contains " + want.Source, ok: func(s *State, x *httpx.Exchange) bool {
		w, err := want.Append(s.body[:0], s.vars)
		return err == nil && bytes.Contains(x.Body, w)
	}, sought: func(s *State) failure.Sought {
		w, _ := want.String(s.vars)
		return failure.Sought{Contains: w}
	}}
}

// JSONCheck passes when the first value the JSONPath p selects in the
// response body equals the value want gives; path is p as written
// (expr.CompileJSONPath), which names the check.
func JSONCheck(path string, p *jsonpath.Path, want *expr.Template) Check {
	return Check{Name: "json " + path, ok: func(s *State, x *httpx.Exchange) bool {
		doc, err := s.resp.JSON()
		if err != nil {
			return false
		}
		w, err := want.Eval(s.vars)
		if err != nil {
			return false
		}
		for got := range p.Select(doc).All() {
			return expr.Equal(got, w)
		}
		return false
	}, sought: func(*State) failure.Sought { return failure.Sought{JSONPath: path} }}
}

// Capture sets a variable's slot from the response.
type Capture struct {
	Slot    int
	Capture *expr.Capture
	Name    string
	// Secret: the value is a credential (a capture named as one, or one a
	// credential header is made from), added to the Runner's Learned.
	Secret bool
}

// Recorder hears the outcome of each check and capture: the engine's VU.
//
// A check is named by its index among its step's checks (CheckNames), and
// by its name in words when it failed.
type Recorder interface {
	Check(step, check int, passed bool)
	// KeepsFailure reports whether step's next failed check is kept whole,
	// so that what it looked for is worth gathering.
	KeepsFailure(step int) bool
	CheckFailed(step, check int, name string, x *httpx.Exchange, err error, sought failure.Sought)
}

// CheckNames names the step's checks by index, as their failures name
// them: its expectations in order, then its captures (a capture that
// finds nothing fails "capture NAME").
func (st *Step) CheckNames() []string {
	return checkNames(nil, st.Checks, st.Captures)
}

func checkNames(out []string, checks []Check, captures []Capture) []string {
	for _, ch := range checks {
		out = append(out, ch.Name)
	}
	for _, cp := range captures {
		out = append(out, "capture "+cp.Name)
	}
	return out
}

// After stores the response's cookies, runs the checks, then the captures
// (a capture that finds nothing is a failed check, and unsets its
// variable). It always lets the iteration go on. Failed checks are
// recorded after the captures, so that the values this very response gave
// (a CSRF token, a session token) are known, and masked, when the response
// is kept.
func (st *Step) After(s *State, rec Recorder, x *httpx.Exchange) bool {
	s.resp.Reset(x.Status, x.Header, x.Body)
	if x.Err == nil {
		st.storeCookies(s, x)
	}
	s.failed = s.failed[:0]
	base := st.CheckBase
	for i, ch := range st.Checks {
		if ch.ok(s, x) {
			rec.Check(st.ID, base+i, true)
		} else {
			s.failed = append(s.failed, i)
		}
	}
	s.failedCaptures = s.failedCaptures[:0]
	learnt := false
	for i, cp := range st.Captures {
		var val any
		ok := false
		if x.Err == nil {
			val, ok, _ = cp.Capture.Extract(&s.resp)
		}
		if ok {
			if len(s.why) > 0 {
				delete(s.why, cp.Name)
			}
			s.vars.Set(cp.Slot, val)
			if cp.Secret && s.learned != nil {
				learn(s.learned, val)
				learnt = true
			}
			rec.Check(st.ID, base+len(st.Checks)+i, true)
		} else {
			s.vars.Set(cp.Slot, nil)
			s.failedCaptures = append(s.failedCaptures, i)
			if s.why == nil {
				s.why = map[string]miss{}
			}
			s.why[cp.Name] = miss{capture: cp.Capture, method: s.method, status: x.Status, err: x.Err} // said in words only if a request needs it
		}
	}
	if learnt && len(s.secretExprs) > 0 {
		for _, t := range s.secretExprs {
			if v, err := t.String(s.vars); err == nil {
				s.learned.Add(v)
			}
		}
	}
	for _, i := range s.failed {
		ch := st.Checks[i]
		var sought failure.Sought
		if ch.sought != nil && rec.KeepsFailure(st.ID) {
			sought = ch.sought(s)
		}
		rec.CheckFailed(st.ID, base+i, ch.Name, x, nil, sought)
	}
	for _, i := range s.failedCaptures {
		rec.CheckFailed(st.ID, base+len(st.Checks)+i, "capture "+st.Captures[i].Name, x, nil, failure.Sought{})
	}
	return true
}

// miss is why a capture found nothing: what it looked for, and the
// response it looked in.
type miss struct {
	capture *expr.Capture
	method  string
	status  int
	err     error
}

// words says in words why capture name found nothing: "capture
// issue_location found no Location header: the POST answered 422".
func (m miss) words(name string) string {
	if m.err != nil {
		return fmt.Sprintf("capture %s found nothing: the %s got no response (%v)", name, m.method, m.err)
	}
	return fmt.Sprintf("capture %s found %s: the %s answered %d", name, m.capture.Missing(), m.method, m.status)
}

// explain puts the reason a capture found nothing into the error of a
// request that reads its unset variable, in place of "has no value".
func (s *State) explain(err error) error {
	if err == nil || len(s.why) == 0 {
		return err // before unset is declared: errors.As makes it escape, an allocation per request
	}
	return s.explainUnset(err)
}

func (s *State) explainUnset(err error) error {
	var unset *expr.UnsetError
	if !errors.As(err, &unset) || unset.Why != "" {
		return err
	}
	m, ok := s.why[unset.Name]
	if !ok {
		return err
	}
	why := m.words(unset.Name)
	was := unset.Error()
	unset.Why = why
	return &explained{msg: strings.Replace(err.Error(), was, why, 1), err: err}
}

// explained is an error whose text names why a capture found nothing.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }
func (st *Step) storeCookies(s *State, x *httpx.Exchange) {
	if !hasSetCookie(x.Header) {
		return
	}
	s.resp.Reset(x.Status, x.Header, x.Body)
	s.vals = s.resp.HeaderValues("Set-Cookie", s.vals[:0])
	if len(s.vals) > 0 {
		s.jar.Store(s.target.Host, pathOnly(s.path), s.vals, time.Now())
	}
}

// hasSetCookie reports whether a header block may hold a Set-Cookie line, in
// any case (header names are case-insensitive: SET-COOKIE is one too), without
// the allocation of a case-folding search: most responses set no cookie.
func hasSetCookie(h []byte) bool {
	for {
		i := bytes.IndexByte(h, ':')
		if i < 0 {
			return false
		}
		if i >= 10 && (i == 10 || h[i-11] == '\n') && bytes.EqualFold(h[i-10:i], []byte("set-cookie")) {
			return true
		}
		h = h[i+1:]
	}
}
