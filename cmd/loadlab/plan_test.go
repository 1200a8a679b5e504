package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// loginSite is a real HTTP server with the journey most sites have: an HTML
// login form that carries a CSRF token tied to a session cookie, and a JSON
// API behind a bearer token that the login returns. It records what it saw.
type loginSite struct {
	mu       sync.Mutex
	users    map[string]string // name: password
	sessions map[string]string // session cookie: CSRF token
	tokens   map[string]string // bearer token: user
	saw      struct {
		forms, logins, badCSRF, badPassword, noSession, apiOK, apiDenied, redirects int
		userAgents                                                                  map[string]bool
	}
}

func newLoginSite(t *testing.T, users map[string]string) (*loginSite, string) {
	s := &loginSite{users: users, sessions: map[string]string{}, tokens: map[string]string{}}
	s.saw.userAgents = map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /start", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.saw.redirects++
		s.mu.Unlock()
		http.Redirect(w, r, "/login", http.StatusFound)
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		sid, csrf := random(), random()
		s.mu.Lock()
		s.sessions[sid] = csrf
		s.saw.forms++
		s.saw.userAgents[r.UserAgent()] = true
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: sid, Path: "/", HttpOnly: true})
		fmt.Fprintf(w, `<!doctype html><html><head><title>Log in</title></head><body>
<h1>Welcome back</h1>
<form method="post" action="/login">
  <input type="hidden" name="authenticity_token" value="%s">
  <input name="username"> <input type="password" name="password">
</form></body></html>`, csrf)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		c, err := r.Cookie("session")
		if err != nil {
			s.saw.noSession++
			http.Error(w, "no session", http.StatusForbidden)
			return
		}
		if want, ok := s.sessions[c.Value]; !ok || r.FormValue("authenticity_token") != want {
			s.saw.badCSRF++
			http.Error(w, "bad CSRF token", http.StatusUnprocessableEntity)
			return
		}
		user := r.FormValue("username")
		if pw, ok := s.users[user]; !ok || pw != r.FormValue("password") {
			s.saw.badPassword++
			http.Error(w, "bad password", http.StatusUnauthorized)
			return
		}
		s.saw.logins++
		tok := "tok-" + random()
		s.tokens[tok] = user
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"token": tok, "user": user})
	})
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		user, ok := s.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			s.saw.apiDenied++
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		s.saw.apiOK++
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"user": user, "plan": "pro", "items": []int{1, 2, 3}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func random() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func writePlan(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "plan.yaml")
}

const loginPlan = `
name: login-journey
target: "{{ env.SITE }}"
data:
  users: { csv: users.csv, pick: sequential, secret: password }
steps:
  - get: /start
    name: login form
    expect: { status: 200, contains: Welcome back }
    capture:
      csrf: { css: "input[name=authenticity_token]", attr: value }
      heading: { css: h1 }
  - post: /login
    name: login
    form: { username: "{{ users.name }}", password: "{{ users.password }}", authenticity_token: "{{ csrf }}" }
    expect: { status: 200, json: { "$.user": "{{ users.name }}" } }
    capture: { token: { json: "$.token" } }
  - think: 1ms..5ms
  - get: /api/me
    name: me
    headers: { Authorization: "Bearer {{ token }}" }
    expect:
      status: 200
      headers: { Content-Type: application/json }
      json: { "$.user": "{{ users.name }}", "$.items[2]": 3 }
load:
  closed: { vus: 4, iterations: 5 }
thresholds:
  - checks > 99%
  - p99(latency, step=login) < 2s
  - error_rate < 1%
`

const usersCSV = "name,password\nalice,wonderland-secret\nbob,builder-secret\ncarol,singer-secret\n"

// TestLoginJourney: a CSRF-protected login form, a session cookie and a
// bearer-token API, end to end; what the server saw proves the captures,
// cookies and checks.
func TestLoginJourney(t *testing.T) {
	t.Parallel()
	site, url := newLoginSite(t, map[string]string{"alice": "wonderland-secret", "bob": "builder-secret", "carol": "singer-secret"})
	path := writePlan(t, map[string]string{"plan.yaml": loginPlan, "users.csv": usersCSV})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "-e", "SITE="+url, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	site.mu.Lock()
	saw := site.saw
	site.mu.Unlock()
	const journeys = 4 * 5
	if saw.redirects != journeys || saw.forms != journeys || saw.logins != journeys || saw.apiOK != journeys {
		t.Errorf("server saw %d redirects, %d forms, %d logins, %d API calls; want %d of each", saw.redirects, saw.forms, saw.logins, saw.apiOK, journeys)
	}
	if saw.badCSRF+saw.badPassword+saw.noSession+saw.apiDenied != 0 {
		t.Errorf("server refused requests: %+v", saw)
	}
	if len(saw.userAgents) != 1 || !saw.userAgents["loadlab/"+version()] {
		t.Errorf("user agents %v", saw.userAgents)
	}
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	// Checks: form (status, contains, csrf, heading), login (status, json, token), me (status, header, two json): 11.
	if s.Iterations != journeys || s.Checks.Failed != 0 || s.Checks.Passed != journeys*11 {
		t.Errorf("iterations %d, checks %+v; want %d and %d passed", s.Iterations, s.Checks, journeys, journeys*11)
	}
	if len(r.Steps) != 3 || r.Steps[0].Summary.Requests != 2*journeys || r.Steps[1].Name != "login" {
		t.Errorf("steps %+v", r.Steps)
	}
	for _, th := range r.Thresholds {
		if !th.Pass {
			t.Errorf("threshold %s failed: %s", th.Text, th.Detail)
		}
	}
	for _, secret := range []string{"wonderland-secret", "builder-secret", "singer-secret"} {
		raw, _ := os.ReadFile(filepath.Join(out, "result.json"))
		if strings.Contains(string(raw), secret) || strings.Contains(stdout, secret) {
			t.Errorf("secret %q leaked into the result or the summary", secret)
		}
	}
	if !strings.Contains(stdout, "login") || !strings.Contains(stdout, "thresholds") {
		t.Errorf("summary:\n%s", stdout)
	}
}

// TestFailedChecksAndThresholds: wrong credentials make checks and a
// threshold fail: exit code 3, and the summary says which.
func TestFailedChecksAndThresholds(t *testing.T) {
	t.Parallel()
	_, url := newLoginSite(t, map[string]string{"alice": "other"})
	path := writePlan(t, map[string]string{"plan.yaml": loginPlan, "users.csv": usersCSV})
	stdout, stderr, code := cli(context.Background(), t, "run", path, "-e", "SITE="+url, "--set", "load.closed.iterations=1", "--json")
	if code != exitThreshold || !strings.Contains(stderr, "thresholds failed") {
		t.Fatalf("exit %d, stderr %q; want 3", code, stderr)
	}
	var s result.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Errors.Status4xx == 0 || s.Checks.Failed == 0 || s.Aborted == 0 {
		t.Errorf("summary %+v: want 4xx errors, failed checks and aborted journeys (no token to send)", s)
	}
}

// TestUniqueDataRunsOut: a unique data source never hands a row out twice;
// when it runs out no new journey starts, and the result says why.
func TestUniqueDataRunsOut(t *testing.T) {
	t.Parallel()
	site, url := newLoginSite(t, map[string]string{"alice": "wonderland-secret", "bob": "builder-secret", "carol": "singer-secret"})
	plan := strings.Replace(loginPlan, "pick: sequential", "pick: unique", 1)
	path := writePlan(t, map[string]string{"plan.yaml": plan, "users.csv": usersCSV})
	out := t.TempDir()
	_, stderr, code := cli(context.Background(), t, "run", path, "-e", "SITE="+url, "--set", "load.closed.vus=2", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, _ := store.ReadResult(out)
	if r.Summary.Iterations != 3 || site.saw.logins != 3 || !strings.Contains(r.Stopped, "users") || !strings.Contains(r.Stopped, "ran out after 3 rows") {
		t.Errorf("iterations %d, logins %d, stopped %q", r.Summary.Iterations, site.saw.logins, r.Stopped)
	}
	// The plan is stored with what its text does not say.
	if got := strings.Join(r.PlanInputs, "|"); got != "--set load.closed.vus=2|-e SITE="+url {
		t.Errorf("plan inputs %q", r.PlanInputs)
	}
}

func TestPlanErrorsExitTwo(t *testing.T) {
	t.Parallel()
	path := writePlan(t, map[string]string{"plan.yaml": "target: http://127.0.0.1:1\nsteps:\n  - get: /{{ nope }}\nload: { closed: { vus: 0, iterations: 1 } }\n"})
	_, stderr, code := cli(context.Background(), t, "run", path)
	if code != exitUsage || !strings.Contains(stderr, "plan.yaml:3:14: undefined variable \"nope\"") || !strings.Contains(stderr, "plan.yaml:4:24: vus must be at least 1") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = cli(context.Background(), t, "run", path, "-c", "5")
	if code != exitUsage || !strings.Contains(stderr, "--connections is for quick mode") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestJSONHasSteps(t *testing.T) {
	t.Parallel()
	_, url := newLoginSite(t, map[string]string{"alice": "wonderland-secret", "bob": "builder-secret", "carol": "singer-secret"})
	path := writePlan(t, map[string]string{"plan.yaml": loginPlan, "users.csv": usersCSV})
	stdout, stderr, code := cli(context.Background(), t, "run", path, "-e", "SITE="+url, "--set", "load.closed.iterations=1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Schema string `json:"schema"`
		Steps  []struct {
			Step     string `json:"step"`
			Requests int64  `json:"requests"`
			Checks   struct{ Passed, Failed int64 }
			Latency  struct{ P95 float64 } `json:"latency_ms"`
		}
		Thresholds []struct {
			Threshold string
			Pass      bool
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Schema != "loadlab.summary/v1" || len(out.Steps) != 3 || out.Steps[1].Step != "login" || out.Steps[1].Requests != 4 || out.Steps[1].Checks.Passed != 12 || len(out.Thresholds) != 3 {
		t.Errorf("--json: %+v", out)
	}
}

func TestPlanFromStdin(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{})
	var out, errb bytes.Buffer
	plan := "target: " + url + "\nsteps:\n  - get: /\n    expect: { status: 200 }\nload: { closed: { vus: 2, iterations: 3 } }\n"
	err := run(context.Background(), []string{"run", "-", "--json"}, strings.NewReader(plan), &out, &errb)
	if err != nil || !strings.Contains(out.String(), `"iterations": 6`) {
		t.Errorf("err %v, stdout %s, stderr %s", err, out.String(), errb.String())
	}
	err = run(context.Background(), []string{"run", "-"}, strings.NewReader("steps: [ { get: / } ]\nload: { closed: { vus: 0, iterations: 1 } }\n"), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "stdin:2:24: vus must be at least 1") {
		t.Errorf("bad plan on stdin: %v", err)
	}
}

// TestFailedCheckShowsTheAnswer: the first failed check of a step keeps what
// the server answered, so the summary says why, with the plan's secrets
// masked.
func TestFailedCheckShowsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, "<p>Invalid authenticity token for hunter2</p>")
	}))
	t.Cleanup(srv.Close)
	path := writePlan(t, map[string]string{"plan.yaml": `
target: ` + srv.URL + `
vars: { password: { value: hunter2, secret: true } }
steps:
  - post: /login
    name: login
    form: { password: "{{ password }}" }
    expect: { status: 200, contains: Welcome }
load: { closed: { vus: 1, iterations: 3 } }
`})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	// The plan has no checks threshold: the default, checks == 100%, fails.
	if code != exitThreshold || !strings.Contains(stderr, "1 of 1 thresholds failed (the default checks == 100% among them: 0.00% passed") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "checks      0 of 6 passed (0.00%); default threshold checks == 100% failed (a checks threshold in the plan, such as checks > 95%, replaces it)") {
		t.Errorf("the summary does not say the default threshold failed:\n%s", stdout)
	}
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Steps[0].FailedCheck
	// An HTML page without a flash element: its visible text.
	if f == nil || f.Check != "status is 200" || f.Status != 422 || f.Body != "Invalid authenticity token for ***" || f.Shown != "the start of the page's visible text" {
		t.Fatalf("first failed check %+v", f)
	}
	if !strings.Contains(stdout, "first failed check of login: status is 200; status 422, the start of the page's visible text: Invalid authenticity token for ***") || strings.Contains(stdout, "hunter2") {
		t.Errorf("summary:\n%s", stdout)
	}
}

// TestCredentialsNeverStored: credentials written into the plan's headers,
// made from plan variables or the environment,
// written over several lines, passed with --set, or read from the
// environment reach the server and appear in no file of the result
// directory, not even a response that echoes one across the snippet's cut.
func TestCredentialsNeverStored(t *testing.T) {
	var mu sync.Mutex
	saw := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, h := range []string{"Authorization", "X-Api-Key", "X-Auth-Token", "Proxy-Authorization", "X-Csrf-Token", "Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				saw[r.URL.Path+" "+h] = v
			}
		}
		mu.Unlock()
		if r.URL.Path == "/d" {
			io.WriteString(w, strings.Repeat("x", 505)+"JWT-SEKRET and more")
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	t.Setenv("LOADLAB_TEST_BEARER", "ENV-SEKRET")
	t.Setenv("LOADLAB_TEST_GH", "GH-SEKRET")
	path := writePlan(t, map[string]string{"plan.yaml": `
target: ` + srv.URL + `
vars:
  jwt: JWT-SEKRET
  apikey: VAR-SEKRET
  pass: OLD-SEKRET
http: { headers: { Authorization: "Bearer LITERAL-SEKRET", Api-Key: "k-{{ apikey }}-{{ pass }}" } }
steps:
  - get: /a
    headers: { X-Api-Key: KEY-SEKRET, X-Auth-Token: "t-{{ env.LOADLAB_TEST_BEARER }}" }
  - get: /b
    headers: { Proxy-Authorization: placeholder }
  - get: /c
    headers:
      Authorization: "Bearer {{ jwt }}"
      X-Csrf-Token: "{{ env.LOADLAB_TEST_GH }}"
  - get: /d
    headers:
      X-Api-Key: >-
        BLOCK-SEKRET
    expect: { status: 201 }
load: { closed: { vus: 1, iterations: 1 } }
`})
	out := t.TempDir()
	secrets := []string{"LITERAL-SEKRET", "KEY-SEKRET", "ENV-SEKRET", "SET-SEKRET", "JWT-SEK", "GH-SEKRET", "BLOCK-SEKRET", "VAR-SEKRET", "OLD-SEKRET", "NEW-SEKRET"}
	leaks := func(where string, data []byte) {
		t.Helper()
		for _, secret := range secrets {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds %s", where, secret)
			}
		}
	}
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out, "--set", "steps.1.headers.Proxy-Authorization=SET-SEKRET", "--set", "vars.pass=NEW-SEKRET")
	if code != exitThreshold { // /d's check fails, and with it the default checks threshold
		t.Fatalf("exit %d: %s", code, stderr)
	}
	leaks("the summary", []byte(stdout+stderr))
	if !strings.Contains(stdout, "first failed check of GET /d") {
		t.Errorf("the summary shows no failed check for /d:\n%s", stdout)
	}
	want := map[string]string{
		"/a Authorization": "Bearer LITERAL-SEKRET", "/a X-Api-Key": "KEY-SEKRET", "/a X-Auth-Token": "t-ENV-SEKRET",
		"/b Proxy-Authorization": "SET-SEKRET", "/c Authorization": "Bearer JWT-SEKRET", "/c X-Csrf-Token": "GH-SEKRET",
		"/d X-Api-Key": "BLOCK-SEKRET", "/a Api-Key": "k-VAR-SEKRET-NEW-SEKRET",
	}
	for k, v := range want {
		if saw[k] != v {
			t.Errorf("the server saw %s = %q, want %q", k, saw[k], v)
		}
	}
	for _, format := range []string{"html", "md", "json", "text"} {
		stdout, _, code := cli(context.Background(), t, "report", out, "--format", format)
		if code != 0 {
			t.Fatalf("report --format %s: exit %d", format, code)
		}
		leaks("report --format "+format, []byte(stdout))
	}
	r, err := store.ReadResult(out)
	if err != nil || r.Steps[3].FailedCheck == nil {
		t.Fatalf("no failed check kept for /d: %v", err)
	}
	// Masking keeps the stored plan a plan.
	if _, err := plan.Parse("stored.yaml", []byte(r.Plan), plan.Options{Env: map[string]string{"LOADLAB_TEST_BEARER": "x", "LOADLAB_TEST_GH": "y"}}); err != nil {
		t.Errorf("the stored plan no longer loads: %v\n%s", err, r.Plan)
	}
	var files []string
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		files = append(files, filepath.Base(p))
		leaks(p, data)
		return err
	})
	if err != nil || !slices.Contains(files, "result.json") || !slices.Contains(files, "report.html") {
		t.Errorf("searched %v (%v): want result.json and report.html among them", files, err)
	}
}

// TestScenarioTotals: a plan of several scenarios reports each scenario's
// totals beside its steps, in the summary, --json and result.json.
func TestScenarioTotals(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	path := writePlan(t, map[string]string{"plan.yaml": `
target: ` + srv.URL + `
scenarios:
  browse:
    weight: 3
    steps: [ { get: /a, name: home }, { get: /b, name: product } ]
  broken:
    steps: [ { get: /fail, name: fail } ]
load: { closed: { vus: 2, iterations: 20 } }
`})
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Requests   int64 `json:"requests"`
		Iterations int64 `json:"iterations"`
		Scenarios  []struct {
			Scenario   string `json:"scenario"`
			Requests   int64  `json:"requests"`
			Iterations int64  `json:"iterations"`
			Errors     struct {
				Total int64 `json:"total"`
			} `json:"errors"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Scenarios) != 2 || out.Scenarios[0].Scenario != "browse" || out.Scenarios[1].Scenario != "broken" {
		t.Fatalf("scenarios %+v", out.Scenarios)
	}
	browse, broken := out.Scenarios[0], out.Scenarios[1]
	if browse.Iterations+broken.Iterations != out.Iterations || out.Iterations != 40 || browse.Requests != 2*browse.Iterations || broken.Requests != broken.Iterations {
		t.Errorf("journeys by scenario %+v of %d", out.Scenarios, out.Iterations)
	}
	if browse.Requests+broken.Requests != out.Requests || browse.Requests%2 != 0 || broken.Errors.Total != broken.Requests || browse.Errors.Total != 0 {
		t.Errorf("scenarios %+v of %d requests", out.Scenarios, out.Requests)
	}
	text, _, _ := cli(context.Background(), t, "run", path)
	if !strings.Contains(text, "\nscenario ") || !strings.Contains(text, "\nbrowse ") || !strings.Contains(text, "\nbroken ") {
		t.Errorf("summary:\n%s", text)
	}
}

// TestJSONBodyKeepsTypes: a JSON body value that is a single {{ }} keeps
// its type, a plan variable's as much as an expression's; as the server
// received it.
func TestJSONBodyKeepsTypes(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case got <- string(b):
		default:
		}
	}))
	t.Cleanup(srv.Close)
	path := writePlan(t, map[string]string{"plan.yaml": `
target: ` + srv.URL + `
vars: { product: 3, flag: true, ratio: 1.5, name: x }
steps:
  - post: /items
    json: { p: "{{ product }}", f: "{{ flag }}", x: "{{ ratio }}", n: "{{ name }}", s: "id-{{ product }}", q: "{{ product * 2 }}", v: "{{ vu }}", i: "{{ iteration + 1 }}" }
load: { closed: { vus: 1, iterations: 1 } }
`})
	if _, stderr, code := cli(context.Background(), t, "run", path); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if body := <-got; body != `{"p":3,"f":true,"x":1.5,"n":"x","s":"id-3","q":6,"v":0,"i":1}` {
		t.Errorf("the server received %s", body)
	}
}

// TestOpenVUNumbers: in an open workload a journey takes whichever VU is
// free, so {{ vu }} and {{ iteration }} change from journey to journey on
// the same worker; every journey must see its own pair, and vu stays below
// max_vus. Emails made from them must never repeat.
func TestOpenVUNumbers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answers take 10 to 150 ms, so journeys end in another order than
		// they began, and the pool hands VU numbers around.
		time.Sleep(time.Duration(10+served.Add(1)*37%140) * time.Millisecond)
		mu.Lock()
		seen[r.URL.Query().Get("who")]++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	path := writePlan(t, map[string]string{"plan.yaml": `
target: ` + srv.URL + `
steps:
  - get: "/?who={{ vu }}-{{ iteration }}"
load: { open: { rate: 50/s, duration: 1s, max_vus: 4 } }
`})
	if _, stderr, code := cli(context.Background(), t, "run", path, "--event-loops", "2"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	vus := map[string]bool{}
	for who, n := range seen {
		vu, _, _ := strings.Cut(who, "-")
		vus[vu] = true
		if n != 1 || vu < "0" || vu > "3" || len(vu) != 1 {
			t.Errorf("vu-iteration %q seen %d times; want once each, vu from 0 to 3", who, n)
		}
	}
	if len(seen) < 25 || len(vus) < 3 {
		t.Errorf("%d journeys over %d VUs: %v", len(seen), len(vus), seen)
	}
}

// TestNoJourneyCompleted: when every journey is aborted (here a capture
// that never finds its value) the run fails, naming the reason in words
// (what the capture did not find, what the server answered), and keeps
// what it measured.
func TestNoJourneyCompleted(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"other": 1}`) }))
	t.Cleanup(srv.Close)
	path := writePlan(t, map[string]string{"plan.yaml": `
target: ` + srv.URL + `
steps:
  - get: /login
    capture: { token: { json: "$.token" } }
  - get: "/api?t={{ token }}"
load: { closed: { vus: 2, iterations: 2 } }
`})
	out := t.TempDir()
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != exitFailed || !strings.Contains(stderr, "no journey completed: 4 could not go on") || !strings.Contains(stderr, "capture token found nothing at JSONPath $.token: the GET answered 200") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if r, err := store.ReadResult(out); err != nil || r.Summary.Aborted != 4 {
		t.Errorf("result: %v, %+v", err, r)
	}
}
