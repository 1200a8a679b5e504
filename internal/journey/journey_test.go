package journey

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
)

// fixture is a runner with one scenario over a scope with the names the
// steps below use: plan constants, vu and iteration, a capture and a data
// source column.
type fixture struct {
	t        *testing.T
	scope    *expr.Scope
	runner   *Runner
	scenario *engine.Scenario
	token    int // the slot of the capture "token"
	email    int // the slot of users.email
	target   *httpx.Origin
	other    *httpx.Origin
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, scope: expr.NewScope()}
	f.scope.Const("product", 3)
	r := &Runner{Scope: f.scope}
	r.VUSlot, r.IterationSlot, r.ScenarioSlot = f.scope.Slot("vu"), f.scope.Slot("iteration"), f.scope.Slot("scenario")
	f.scope.SlotType(r.VUSlot, 0)
	f.scope.SlotType(r.IterationSlot, 0)
	f.token = f.scope.Slot("token")
	f.email = f.scope.Slot("users.email")
	r.CaptureSlots = []int{f.token}
	f.target = &httpx.Origin{Scheme: "http", Host: "shop.test:8080"}
	f.other = &httpx.Origin{Scheme: "http", Host: "sso.test"}
	r.Targets = map[string]*httpx.Origin{"http://shop.test:8080": f.target, "http://sso.test": f.other}
	f.scenario = &engine.Scenario{Name: "checkout", Weight: 1}
	users := &Source{Name: "users", File: "users.csv", Rows: [][]string{{"a@example.com"}, {"b@example.com"}}, Pick: Sequential, Slots: []int{f.email}}
	r.Scenarios = []*Scenario{NewScenario(f.scenario, []*Source{users})}
	r.Seed = 42
	f.runner = r
	return f
}

func (f *fixture) tpl(src string) *expr.Template {
	f.t.Helper()
	t, err := f.scope.Compile(src)
	if err != nil {
		f.t.Fatalf("%s: %v", src, err)
	}
	return t
}

// state is a VU's state at the start of an iteration.
func (f *fixture) state(vu int, iteration int64) *State {
	f.t.Helper()
	s := f.runner.NewState()
	f.runner.Scenarios[0].Sources[0].next.Store(0) // every case starts at the first row
	if err := f.runner.Begin(s, vu, iteration, f.scenario); err != nil {
		f.t.Fatal(err)
	}
	return s
}

// step is a request step to the fixture's target, ready to run.
func (f *fixture) step(st *Step) *Step {
	if st.Target == nil {
		st.Target = f.target
	}
	if st.Method == "" {
		st.Method = "GET"
	}
	st.Request(f.runner)
	return st
}

// recorder keeps what After reports.
type recorder struct {
	passed int
	failed []string
	sought []failure.Sought
}

func (r *recorder) Check(step, check int, passed bool) {
	if passed {
		r.passed++
	}
}

func (r *recorder) KeepsFailure(int) bool { return true }

func (r *recorder) CheckFailed(step, index int, check string, x *httpx.Exchange, err error, sought failure.Sought) {
	r.failed = append(r.failed, check)
	r.sought = append(r.sought, sought)
}

var _ Recorder = (*engine.VU)(nil)

func TestBuild(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name  string
		step  *Step
		token any
		want  string
	}{
		{
			name: "get with query and prefix",
			step: &Step{Prefix: "/shop", Path: f.tpl("/products/{{ product }}"), KeepAlive: true,
				Query: []Field{{"q", f.tpl("a b&c")}, {"vu", f.tpl("{{ vu }}")}}},
			want: "GET /shop/products/3?q=a+b%26c&vu=7 HTTP/1.1\r\nHost: shop.test:8080\r\nUser-Agent: loadlab/dev\r\n\r\n",
		},
		{
			name: "form with a captured token, no keep-alive",
			step: &Step{Method: "POST", Path: f.tpl("/login"), ContentType: "application/x-www-form-urlencoded",
				Form: []Field{{"email", f.tpl("{{ users.email }}")}, {"authenticity_token", f.tpl("{{ token }}")}}},
			token: "x/y=",
			want: "POST /login HTTP/1.1\r\nHost: shop.test:8080\r\nUser-Agent: loadlab/dev\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
				"Content-Length: 49\r\nConnection: close\r\n\r\nemail=a%40example.com&authenticity_token=x%2Fy%3D",
		},
		{
			name: "json with its own content type and agent",
			step: &Step{Method: "PUT", Path: f.tpl("/cart/{{ iteration }}"), KeepAlive: true, ContentType: "application/json",
				Headers: []Field{{"Content-Type", f.tpl("application/vnd.shop+json")}, {"User-Agent", f.tpl("bot/{{ vu }}")}},
				JSON:    JSONObject([]string{"id", "tags"}, []*JSON{JSONExpr(f.tpl("{{ product }}")), JSONArray([]*JSON{JSONStatic([]byte(`"a"`))})})},
			want: "PUT /cart/0 HTTP/1.1\r\nHost: shop.test:8080\r\nContent-Type: application/vnd.shop+json\r\nUser-Agent: bot/7\r\n" +
				"Content-Length: 21\r\n\r\n{\"id\":3,\"tags\":[\"a\"]}",
		},
		{
			name: "post without a body says its length",
			step: &Step{Method: "POST", Path: f.tpl("/ping"), KeepAlive: true},
			want: "POST /ping HTTP/1.1\r\nHost: shop.test:8080\r\nUser-Agent: loadlab/dev\r\nContent-Length: 0\r\n\r\n",
		},
		{
			name: "a Host of its own: a virtual host behind the target's address",
			step: &Step{Path: f.tpl("/"), KeepAlive: true, Headers: []Field{{"Host", f.tpl("api.shop.test")}}},
			want: "GET / HTTP/1.1\r\nUser-Agent: loadlab/dev\r\nHost: api.shop.test\r\n\r\n",
		},
		{
			name:  "a path with spaces is escaped",
			step:  &Step{Path: f.tpl("/search/{{ token }}"), KeepAlive: true},
			token: "a b#c",
			want:  "GET /search/a%20b%23c HTTP/1.1\r\nHost: shop.test:8080\r\nUser-Agent: loadlab/dev\r\n\r\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := f.step(tt.step)
			s := f.state(7, 0)
			if tt.token != nil {
				s.Vars().Set(f.token, tt.token)
			}
			got, err := st.Build(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name  string
		step  *Step
		token any
		want  string
	}{
		{"an unset capture", &Step{Path: f.tpl("/{{ token }}")}, nil, "token has no value (did its capture find nothing?)"},
		{"a line break in a header", &Step{Path: f.tpl("/"), Headers: []Field{{"X-Token", f.tpl("{{ token }}")}}}, "a\r\nX-Evil: 1", "header X-Token: the value has a line break"},
		{"a NUL in a header", &Step{Path: f.tpl("/"), Headers: []Field{{"X-Token", f.tpl("{{ token }}")}}}, "a\x00", "header X-Token: the value has a NUL byte"},
		{"an unset form field", &Step{Method: "POST", Path: f.tpl("/"), Form: []Field{{"t", f.tpl("{{ token }}")}}}, nil, "form t: token has no value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := f.step(tt.step)
			s := f.state(0, 0)
			if tt.token != nil {
				s.Vars().Set(f.token, tt.token)
			}
			_, err := st.Build(s, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAfter(t *testing.T) {
	f := newFixture(t)
	id, err := expr.CompileJSONPath("$.id")
	if err != nil {
		t.Fatal(err)
	}
	jsonPath := JSONCheck("$.id", id, f.tpl("{{ product }}"))
	capture := func(kind expr.CaptureKind, arg, attr string) Capture {
		c, err := expr.NewCapture(kind, arg, attr)
		if err != nil {
			t.Fatal(err)
		}
		return Capture{Slot: f.token, Capture: c, Name: "token"}
	}
	page := []byte(`<form><input name="authenticity_token" value="Xk2f"></form>`)
	for _, tt := range []struct {
		name   string
		step   *Step
		x      httpx.Exchange
		passed int
		failed []string
		token  any    // the captured value afterwards
		cookie string // the session cookie afterwards
	}{
		{
			name:   "status, header and body checks pass; a CSS capture",
			step:   &Step{Path: f.tpl("/"), Checks: []Check{StatusCheck([]Status{{Code: 200, Class: true}}), HeaderCheck("Content-Type", f.tpl("text/html")), ContainsCheck(f.tpl("authenticity"))}, Captures: []Capture{capture(expr.FromCSS, "input[name=authenticity_token]", "value")}},
			x:      httpx.Exchange{Status: 201, Header: []byte("Content-Type: text/html\r\nSet-Cookie: session=s3ss; Path=/\r\n"), Body: page},
			passed: 4, token: "Xk2f", cookie: "s3ss",
		},
		{
			name:   "a Set-Cookie header in capitals is a Set-Cookie",
			step:   &Step{Path: f.tpl("/")},
			x:      httpx.Exchange{Status: 200, Header: []byte("Content-Type: text/html\r\nSET-COOKIE: session=caps; Path=/\r\n")},
			cookie: "caps",
		},
		{
			name: "X-Set-Cookie is not a Set-Cookie",
			step: &Step{Path: f.tpl("/")},
			x:    httpx.Exchange{Status: 200, Header: []byte("X-Set-Cookie: session=not-this\r\n")},
		},
		{
			name:   "a failed status and a JSON capture that finds nothing",
			step:   &Step{Path: f.tpl("/api"), Checks: []Check{StatusCheck([]Status{{Code: 200}, {Code: 204}}), jsonPath}, Captures: []Capture{capture(expr.FromJSON, "$.token", "")}},
			x:      httpx.Exchange{Status: 422, Header: []byte("Content-Type: application/json\r\n"), Body: []byte(`{"id":3}`)},
			passed: 1, failed: []string{"status is 200 or 204", "capture token"},
		},
		{
			name:   "a JSON check and capture",
			step:   &Step{Path: f.tpl("/api"), Checks: []Check{jsonPath}, Captures: []Capture{capture(expr.FromJSON, "$.token", "")}},
			x:      httpx.Exchange{Status: 200, Body: []byte(`{"id":3,"token":"tok-1"}`)},
			passed: 2, token: "tok-1",
		},
		{
			name:   "a failed exchange fails every check and capture, keeps no cookie",
			step:   &Step{Path: f.tpl("/"), Checks: []Check{StatusCheck([]Status{{Code: 200}})}, Captures: []Capture{capture(expr.FromHeader, "X-Token", "")}},
			x:      httpx.Exchange{Err: errors.New("connection reset"), Header: []byte("Set-Cookie: session=no\r\n")},
			failed: []string{"status is 200", "capture token"},
		},
		{
			name:   "a JSON check that does not match",
			step:   &Step{Path: f.tpl("/api"), Checks: []Check{jsonPath}},
			x:      httpx.Exchange{Status: 200, Body: []byte(`{"id":4}`)},
			failed: []string{"json $.id"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := f.step(tt.step)
			s := f.state(0, 0)
			s.Vars().Set(f.token, "before")
			if _, err := st.Build(s, nil); err != nil {
				t.Fatal(err)
			}
			var rec recorder
			if !st.After(s, &rec, &tt.x) {
				t.Error("After ended the iteration")
			}
			if rec.passed != tt.passed || strings.Join(rec.failed, "|") != strings.Join(tt.failed, "|") {
				t.Errorf("passed %d, failed %q; want %d, %q", rec.passed, rec.failed, tt.passed, tt.failed)
			}
			if len(tt.step.Captures) > 0 && s.Vars().Get(f.token) != tt.token {
				t.Errorf("token = %v, want %v", s.Vars().Get(f.token), tt.token)
			}
			got, _ := s.Jar().Value("shop.test", "session")
			if got != tt.cookie {
				t.Errorf("session cookie %q, want %q", got, tt.cookie)
			}
		})
	}
}

func TestRedirect(t *testing.T) {
	f := newFixture(t)
	post := func() *Step {
		return &Step{Method: "POST", Path: f.tpl("/login"), ContentType: "application/x-www-form-urlencoded", KeepAlive: true, MaxRedirects: 5,
			Headers: []Field{{"Authorization", f.tpl("Bearer t0k")}, {"X-Api-Key", f.tpl("k3y")}, {"Accept", f.tpl("text/html")}}, Form: []Field{{"a", f.tpl("1")}}}
	}
	for _, tt := range []struct {
		name    string
		x       httpx.Exchange
		want    string // the request that follows; empty: none
		target  *httpx.Origin
		wantErr string
		host    bool // the step sets Host: vhost.test
	}{
		{
			name:   "303 turns a POST into a GET, keeps the cookie it set",
			x:      httpx.Exchange{Status: 303, Header: []byte("Location: /account?x=1\r\nSet-Cookie: session=s1; Path=/\r\n")},
			want:   "GET /account?x=1 HTTP/1.1\r\nHost: shop.test:8080\r\nUser-Agent: loadlab/dev\r\nAuthorization: Bearer t0k\r\nX-Api-Key: k3y\r\nAccept: text/html\r\nCookie: session=s1\r\n\r\n",
			target: f.target,
		},
		{
			name: "307 keeps the method and body; a relative Location",
			x:    httpx.Exchange{Status: 307, Header: []byte("Location: again\r\n")},
			want: "POST /again HTTP/1.1\r\nHost: shop.test:8080\r\nUser-Agent: loadlab/dev\r\nAuthorization: Bearer t0k\r\nX-Api-Key: k3y\r\nAccept: text/html\r\n" +
				"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1",
			target: f.target,
		},
		{
			name:   "to another known host: no credential headers",
			x:      httpx.Exchange{Status: 302, Header: []byte("Location: http://sso.test/start\r\n")},
			want:   "GET /start HTTP/1.1\r\nHost: sso.test\r\nUser-Agent: loadlab/dev\r\nAccept: text/html\r\n\r\n",
			target: f.other,
		},
		{
			name:   "to another known host: the step's own Host stays behind",
			host:   true,
			x:      httpx.Exchange{Status: 302, Header: []byte("Location: http://sso.test/start\r\n")},
			want:   "GET /start HTTP/1.1\r\nHost: sso.test\r\nUser-Agent: loadlab/dev\r\nAccept: text/html\r\n\r\n",
			target: f.other,
		},
		{
			name:   "to the same host: the step's own Host goes too",
			host:   true,
			x:      httpx.Exchange{Status: 302, Header: []byte("Location: /next\r\n")},
			want:   "GET /next HTTP/1.1\r\nUser-Agent: loadlab/dev\r\nAuthorization: Bearer t0k\r\nX-Api-Key: k3y\r\nAccept: text/html\r\nHost: vhost.test\r\n\r\n",
			target: f.target,
		},
		{
			name:    "to a host the plan does not name",
			x:       httpx.Exchange{Status: 302, Header: []byte("Location: https://evil.test/\r\n")},
			wantErr: "redirect to https://evil.test, a host the plan does not name",
		},
		{
			name: "no Location: the answer itself",
			x:    httpx.Exchange{Status: 304},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			step := post()
			if tt.host {
				step.Headers = append(step.Headers, Field{"Host", f.tpl("vhost.test")})
			}
			st := f.step(step)
			s := f.state(0, 0)
			if _, err := st.Build(s, nil); err != nil {
				t.Fatal(err)
			}
			got, target, err := st.Redirect(s, &tt.x, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want || target != tt.target {
				t.Errorf("got %q to %v, want %q to %v", got, target, tt.want, tt.target)
			}
		})
	}
}

func TestBegin(t *testing.T) {
	f := newFixture(t)
	f.tpl("{{ iteration + 1 }}") // Begin sets the iteration only for a template that reads it
	s := f.runner.NewState()
	for i, want := range []string{"a@example.com", "b@example.com", "a@example.com"} {
		s.Vars().Set(f.token, "left over")
		s.Jar().Store("shop.test", "/", []string{"session=old"}, timeZero)
		if err := f.runner.Begin(s, 4, int64(i), f.scenario); err != nil {
			t.Fatal(err)
		}
		if got := s.Vars().Get(f.email); got != want {
			t.Errorf("iteration %d: users.email = %v, want %s", i, got, want)
		}
		if s.Vars().Get(f.token) != nil || s.Jar().Len() != 0 {
			t.Errorf("iteration %d: the last iteration's capture or cookies are kept", i)
		}
		if s.Vars().Get(f.runner.VUSlot) != 4 || s.Vars().Get(f.runner.IterationSlot) != i || s.Vars().Get(f.runner.ScenarioSlot) != "checkout" {
			t.Errorf("iteration %d: vu, iteration, scenario = %v %v %v", i, s.Vars().Get(f.runner.VUSlot), s.Vars().Get(f.runner.IterationSlot), s.Vars().Get(f.runner.ScenarioSlot))
		}
	}
	t.Run("a random source draws from the VU's seeded generator", func(t *testing.T) {
		rows := func(seed uint64, vu int) string {
			f := newFixture(t)
			f.runner.Seed = seed
			src := f.runner.Scenarios[0].Sources[0]
			src.Pick = Random
			for i := range 50 {
				src.Rows = append(src.Rows, []string{fmt.Sprintf("u%d@example.com", i)})
			}
			s := f.runner.NewState()
			var got []string
			for i := range 8 {
				if err := f.runner.Begin(s, vu, int64(i), f.scenario); err != nil {
					t.Fatal(err)
				}
				got = append(got, s.Vars().Get(f.email).(string))
			}
			return strings.Join(got, " ")
		}
		a := rows(42, 0)
		if b := rows(42, 0); a != b {
			t.Errorf("the same seed picked %s, then %s", a, b)
		}
		if b := rows(43, 0); a == b {
			t.Errorf("seeds 42 and 43 picked the same rows %s", a)
		}
		if b := rows(42, 1); a == b {
			t.Errorf("VUs 0 and 1 picked the same rows %s", a)
		}
	})
	t.Run("pick: vu gives each VU its own row, every iteration", func(t *testing.T) {
		f := newFixture(t)
		src := f.runner.Scenarios[0].Sources[0]
		src.Pick = PerVU
		for vu, want := range []string{"a@example.com", "b@example.com"} {
			s := f.runner.NewState()
			for i := range 3 {
				if err := f.runner.Begin(s, vu, int64(i), f.scenario); err != nil {
					t.Fatal(err)
				}
				if got := s.Vars().Get(f.email); got != want {
					t.Errorf("VU %d iteration %d: users.email = %v, want %s", vu, i, got, want)
				}
			}
		}
		err := f.runner.Begin(f.runner.NewState(), 2, 0, f.scenario)
		if !errors.Is(err, engine.ErrStop) || !strings.Contains(err.Error(), "has 2 rows, none for VU 2") {
			t.Errorf("VU 2 of a 2-row source: %v", err)
		}
	})
	t.Run("a unique source runs out", func(t *testing.T) {
		f := newFixture(t)
		f.runner.Scenarios[0].Sources[0].Pick = Unique
		s := f.runner.NewState()
		for i := range 2 {
			if err := f.runner.Begin(s, 0, int64(i), f.scenario); err != nil {
				t.Fatal(err)
			}
		}
		err := f.runner.Begin(s, 0, 2, f.scenario)
		if !errors.Is(err, engine.ErrStop) || !strings.Contains(err.Error(), "data source users (users.csv) ran out after 2 rows") {
			t.Errorf("error %v", err)
		}
	})
}

// TestSeededBodies: with the same seed, a VU's iteration sends the same
// random body in every run; another seed, VU or iteration sends another.
func TestSeededBodies(t *testing.T) {
	body := func(seed uint64, vu int, iteration int64) string {
		f := newFixture(t)
		f.runner.Seed = seed
		st := f.step(&Step{Method: "POST", Path: f.tpl("/users"), KeepAlive: true, ContentType: "application/json",
			JSON: JSONObject([]string{"name", "n"}, []*JSON{JSONExpr(f.tpl("{{ randomString(12) }}")), JSONExpr(f.tpl("{{ randomInt(1, 1000000000) }}"))})})
		got, err := st.Build(f.state(vu, iteration), nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	a := body(42, 3, 5)
	if b := body(42, 3, 5); a != b {
		t.Errorf("the same seed sent\n%s\nand\n%s", a, b)
	}
	for _, other := range []string{body(43, 3, 5), body(42, 4, 5), body(42, 3, 6)} {
		if other == a {
			t.Errorf("another seed, VU or iteration sent the same body:\n%s", a)
		}
	}
}

var timeZero = time.Time{}

// seenRecorder notes, at each failed check, what it looked for and the
// token the VU's state holds then.
type seenRecorder struct {
	recorder
	s      *State
	token  int
	tokens []any
}

func (r *seenRecorder) CheckFailed(step, index int, check string, x *httpx.Exchange, err error, sought failure.Sought) {
	r.recorder.CheckFailed(step, index, check, x, err, sought)
	r.tokens = append(r.tokens, r.s.Vars().Get(r.token))
}

// TestAfterRecordsFailuresAfterCaptures: a failed check is recorded after
// the step's captures ran, so that the values this response gave (its CSRF
// token) are known when the response is kept and masked; and it says what
// it looked for: a contains check its text as rendered, a json check its
// path.
func TestAfterRecordsFailuresAfterCaptures(t *testing.T) {
	f := newFixture(t)
	c, err := expr.NewCapture(expr.FromCSS, "input[name=authenticity_token]", "value")
	if err != nil {
		t.Fatal(err)
	}
	id, err := expr.CompileJSONPath("$.id")
	if err != nil {
		t.Fatal(err)
	}
	st := f.step(&Step{Path: f.tpl("/"),
		Checks:   []Check{StatusCheck([]Status{{Code: 200}}), ContainsCheck(f.tpl("order {{ product }}")), JSONCheck("$.id", id, f.tpl("{{ product }}"))},
		Captures: []Capture{{Slot: f.token, Capture: c, Name: "token"}}})
	s := f.state(0, 0)
	rec := &seenRecorder{s: s, token: f.token}
	x := httpx.Exchange{Status: 422, Header: []byte("Content-Type: text/html\r\n"), Body: []byte(`<input name="authenticity_token" value="Xk2f">`)}
	st.After(s, rec, &x)
	want := []failure.Sought{{}, {Contains: "order 3"}, {JSONPath: "$.id"}}
	if fmt.Sprint(rec.failed) != "[status is 200 body contains order {{ product }} json $.id]" || fmt.Sprint(rec.sought) != fmt.Sprint(want) {
		t.Errorf("failed %q, sought %+v", rec.failed, rec.sought)
	}
	for i, tok := range rec.tokens {
		if tok != "Xk2f" {
			t.Errorf("failure %d recorded with token %v: the capture had not run", i, tok)
		}
	}
}

// BenchmarkAfter is the cost of a step's checks and capture per response:
// all passing (the common case), and failing once the step's first failure
// is kept (the others are only counted), a check or the capture (whose
// reason is put in words only when a later request needs it).
func BenchmarkAfter(b *testing.B) {
	benchAfter(b, func(*Step) (Recorder, func(b *testing.B)) { return &keptRecorder{}, func(*testing.B) {} })
}

// benchAfter runs BenchmarkAfter's step and responses into the recorder
// that rec makes for the step, and calls its check after each case.
func benchAfter(b *testing.B, rec func(st *Step) (Recorder, func(b *testing.B))) {
	f := newFixture(&testing.T{})
	c, _ := expr.NewCapture(expr.FromCSS, "input[name=authenticity_token]", "value")
	st := f.step(&Step{Path: f.tpl("/"),
		Checks:   []Check{StatusCheck([]Status{{Code: 200}}), ContainsCheck(f.tpl("order-number"))},
		Captures: []Capture{{Slot: f.token, Capture: c, Name: "token"}}})
	s := f.state(0, 0)
	page := []byte(`<html><body><p>order-number 12</p><form><input name="authenticity_token" value="Xk2f"></form></body></html>`)
	for _, bc := range []struct {
		name   string
		status int
		body   []byte
	}{{"pass", 200, page}, {"fail", 500, page}, {"capture finds nothing", 422, []byte("422 invalid authenticity token")}} {
		b.Run(bc.name, func(b *testing.B) {
			r, check := rec(st)
			x := httpx.Exchange{Status: bc.status, Header: []byte("Content-Type: text/html\r\n"), Body: bc.body}
			b.ReportAllocs()
			for b.Loop() {
				st.After(s, r, &x)
			}
			check(b)
		})
	}
}

// keptRecorder counts, as the engine's recorder does once the step's first
// failure is kept.
type keptRecorder struct{ passed, failed int }

func (r *keptRecorder) Check(int, int, bool)  { r.passed++ }
func (r *keptRecorder) KeepsFailure(int) bool { return false }
func (r *keptRecorder) CheckFailed(int, int, string, *httpx.Exchange, error, failure.Sought) {
	r.failed++
}
