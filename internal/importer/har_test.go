package importer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/importer/hartest"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

func startShop(t *testing.T) *httptest.Server {
	t.Helper()
	srv, stop, err := hartest.Shop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv
}

func TestImportShopRecordingPassesOnAFreshShop(t *testing.T) {
	recorded := startShop(t)
	data, err := hartest.RecordShop(recorded.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := HAR("shop.har", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Plan)
	t.Logf("plan:\n%s", out)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	if strings.Contains(out, "correct horse") {
		t.Errorf("the typed password is in the plan")
	}
	var lr struct{ Token string }
	for _, want := range []string{
		`css: "meta[name=\"csrf-token\"]", attr: "content"`, // the CSRF token from the home page
		`"authenticity_token": "{{ authenticity_token }}"`,
		`json: "$.token"`, `"Authorization": "Bearer {{ token }}"`,
		`password: { env: LOADLAB_PASSWORD, secret: true }`, `"{{ password }}"`,
		`expect: { status: 303 }`, `follow_redirects: false`,
		`name: "GET /products/:id"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	_ = lr
	if len(res.Assets) != 0 || len(res.Hosts) != 1 {
		t.Errorf("assets %v, hosts %v: want the stylesheet's host dropped", res.Assets, res.Hosts)
	}
	if strings.Contains(out, "Cookie") || strings.Contains(out, "User-Agent") {
		t.Errorf("cookies or browser headers pasted into the plan")
	}
	if len(res.Inferred) != 2 {
		t.Errorf("inferred %d captures, want 2 (the CSRF token, the bearer token): %q", len(res.Inferred), res.Inferred)
	}

	if want := []string{"password: the recorded password is a secret: not written; the plan reads it from the environment: export LOADLAB_PASSWORD=..."}; !slices.Equal(res.Secrets, want) {
		t.Errorf("secrets %q, want %q", res.Secrets, want)
	}
	// The password is read from the environment: unset, the plan does not
	// load, and says which variable to export.
	planFile := filepath.Join(t.TempDir(), "shop.yaml")
	noEnv := func(string) (string, bool) { return "", false }
	if _, err := plan.Parse(planFile, res.Plan, plan.Options{LookupEnv: noEnv}); err == nil || !strings.Contains(err.Error(), "variable password: environment variable LOADLAB_PASSWORD is not set (export LOADLAB_PASSWORD=...") {
		t.Errorf("loaded without LOADLAB_PASSWORD: %v", err)
	}
	// Against a fresh shop: other session, other CSRF token, other API
	// token; the password exported.
	fresh := startShop(t)
	exported := func(name string) (string, bool) { return "correct horse", name == "LOADLAB_PASSWORD" }
	p, err := plan.Parse(planFile, res.Plan, plan.Options{Set: []string{"target=" + fresh.URL}, LookupEnv: exported})
	if err != nil {
		t.Fatalf("the imported plan does not load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := runner.Plan(ctx, p, runner.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if s.Checks.Failed != 0 || s.Checks.Passed == 0 || s.Iterations != 1 || s.Aborted != 0 {
		t.Errorf("against a fresh shop: checks %+v, iterations %d, aborted %d (%v)", s.Checks, s.Iterations, s.Aborted, r.Aborts)
	}
}

func TestBadRecordings(t *testing.T) {
	for _, tc := range []struct{ name, har, want string }{
		{"not JSON", "{\n  \"log\": nope", "x.har:2:11: not JSON"},
		{"no log", `{"foo": 1}`, `no "log" object`},
		{"version", `{"log": {"version": "2.0", "entries": []}}`, `HAR version "2.0"`},
		{"no entries", `{"log": {"version": "1.2", "entries": []}}`, "no entries for the target"},
		{"only other hosts", `{"log": {"version": "1.2", "entries": [{"startedDateTime": "2026-12-01T10:00:00Z", "request": {"method": "GET", "url": "https://cdn.example/a.css"}, "response": {"status": 200, "content": {"mimeType": "text/css"}}}]}}`, "no entries for the target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := HAR("x.har", []byte(tc.har), Options{})
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInput with %q", err, tc.want)
			}
		})
	}
}

func TestMain(m *testing.M) { targettest.Main(); os.Exit(m.Run()) }

// TestImportTrackerIDsFromRedirects: the project id from the login's
// redirect and the created issue's id from its redirect are captured, and
// the plan passes on a tracker whose ids differ, creating one issue per
// iteration.
func TestImportTrackerIDsFromRedirects(t *testing.T) {
	recorded := httptest.NewServer(hartest.NewTracker(7, 58))
	defer recorded.Close()
	data, err := hartest.RecordTracker(recorded.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := HAR("tracker.har", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Plan)
	t.Logf("plan:\n%s", out)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	for _, want := range []string{
		`name: "GET /projects/:id/issues/:id"`,
		`project_location: { header: "Location" }`,
		`issue_location: { header: "Location" }`,
		`- post: "/projects/{{ split(project_location, '/')[2] }}/issues/{{ split(issue_location, '/')[4] }}/comments"`,
		`"X-Csrf-Token": "{{ authenticity_token }}"`, `"Accept": "application/json"`,
		`"password": "{{ password }}"`,
		`expect: { status: 302 }`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	if strings.Contains(out, hartest.Password) || strings.Contains(out, "/58") || strings.Contains(out, "/7/") {
		t.Errorf("the plan holds the password or a recorded id")
	}
	if len(res.Assets) != 1 || !strings.HasSuffix(res.Assets[0], "/app.css") {
		t.Errorf("assets dropped: %q, want the stylesheet", res.Assets)
	}
	if res.Steps != 7 {
		t.Errorf("%d steps, want 7", res.Steps)
	}

	tr := hartest.NewTracker(12, 300)
	fresh := httptest.NewServer(tr)
	defer fresh.Close()
	p, err := plan.Parse(filepath.Join(t.TempDir(), "tracker.yaml"), res.Plan, plan.Options{Set: []string{"target=" + fresh.URL, "load.closed.iterations=3"}, Env: res.SecretValues})
	if err != nil {
		t.Fatalf("the imported plan does not load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := runner.Plan(ctx, p, runner.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if s.Checks.Failed != 0 || s.Checks.Passed == 0 || s.Iterations != 3 || s.Aborted != 0 {
		t.Errorf("against a fresh tracker: checks %+v, iterations %d, aborted %d (%v)", s.Checks, s.Iterations, s.Aborted, r.Aborts)
	}
	if issues, comments := tr.Created(); issues != 3 || comments != 3 {
		t.Errorf("the fresh tracker has %d issues and %d comments, want 3 and 3: one per iteration", issues, comments)
	}
}

// TestThinkCapAndHosts: a 10 s pause in the recording is capped at 5 s, or
// at --think max=; max=0 drops it; a host named with --host is kept (here
// a stylesheet host: then dropped as an asset, not as another host).
func TestThinkCapAndHosts(t *testing.T) {
	srv := startShop(t)
	data, err := hartest.RecordShop(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	entries := h["log"].(map[string]any)["entries"].([]any)
	for _, e := range entries[2:] { // the user reads the product page for 10 s
		m := e.(map[string]any)
		ts, _ := time.Parse(time.RFC3339Nano, m["startedDateTime"].(string))
		m["startedDateTime"] = ts.Add(10 * time.Second).Format(time.RFC3339Nano)
	}
	paused, _ := json.Marshal(h)
	for _, tc := range []struct {
		max  time.Duration
		want string
	}{{0, "think: 5s"}, {2 * time.Second, "think: 2s"}, {-1, ""}} {
		res, err := HAR("shop.har", paused, Options{ThinkMax: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		thinks := regexp.MustCompile(`think: (\d+)s\n`).FindAllString(string(res.Plan), -1)
		if tc.want == "" && len(thinks) != 0 || tc.want != "" && (len(thinks) != 1 || !strings.HasPrefix(thinks[0], tc.want)) {
			t.Errorf("ThinkMax %v: long thinks %q, want one %q", tc.max, thinks, tc.want)
		}
	}
	res, err := HAR("shop.har", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hosts) != 1 {
		t.Fatalf("hosts dropped: %q, want the stylesheet's", res.Hosts)
	}
	host, _, _ := strings.Cut(res.Hosts[0], " ")
	res, err = HAR("shop.har", data, Options{Hosts: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hosts) != 0 || len(res.Assets) != 1 || !strings.Contains(res.Assets[0], host+"/theme.css") {
		t.Errorf("--host %s: hosts %q, assets %q: want it kept, its stylesheet dropped as an asset", host, res.Hosts, res.Assets)
	}
}

// TestFormBodyAsSent: the form is read from the text that was sent (a
// browser's params may or may not be escaped), repeated names kept.
func TestFormBodyAsSent(t *testing.T) {
	har := `{"log": {"version": "1.2", "entries": [{"startedDateTime": "2026-12-01T10:00:00Z", "time": 5,
	  "request": {"method": "POST", "url": "http://shop.test/search", "headers": [{"name": "Content-Type", "value": "application/x-www-form-urlencoded"}],
	    "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "q=a%2Bb+c&tag=x&tag=y", "params": [{"name": "q", "value": "a%2Bb+c"}]}},
	  "response": {"status": 200, "headers": [], "content": {"mimeType": "text/html", "text": "<p>ok</p>"}}}]}}`
	res, err := HAR("x.har", []byte(har), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `body: "q=a%2Bb+c\u0026tag=x\u0026tag=y"`; !strings.Contains(string(res.Plan), want) {
		t.Errorf("plan:\n%s\nwant %s", res.Plan, want)
	}
}

// TestTokenWrittenWithCharacterReferences: a page that writes its CSRF
// token's / as &#x2F; (Rack's escape_html does) still gives the capture;
// the token is not taken for a typed secret.
func TestTokenWrittenWithCharacterReferences(t *testing.T) {
	har := `{"log": {"version": "1.2", "entries": [
	  {"startedDateTime": "2026-12-01T10:00:00Z", "time": 5,
	   "request": {"method": "GET", "url": "http://notes.test/login", "headers": []},
	   "response": {"status": 200, "headers": [], "content": {"mimeType": "text/html", "text": "<form><input type=\"hidden\" name=\"authenticity_token\" value=\"k9&#x2F;Qx+Tz7&#x2F;b1Y=\"></form>"}}},
	  {"startedDateTime": "2026-12-01T10:00:01Z", "time": 5,
	   "request": {"method": "POST", "url": "http://notes.test/login", "headers": [],
	     "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "authenticity_token=k9%2FQx%2BTz7%2Fb1Y%3D&email=a%40b.test"}},
	   "response": {"status": 303, "headers": [{"name": "Location", "value": "/notes"}], "content": {"mimeType": "text/plain", "text": ""}}}]}}`
	res, err := HAR("x.har", []byte(har), Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Plan)
	if !strings.Contains(out, `authenticity_token: { css: "input[name=\"authenticity_token\"]", attr: "value" }`) || len(res.Secrets) != 0 {
		t.Errorf("secrets %q, plan:\n%s\nwant the token captured from the form", res.Secrets, out)
	}
}

// TestKeepAssets: with KeepAssets a page's stylesheet is a step of its own
// in the page's parallel group after it, named "asset GET /app.css" so it
// is reported apart, and
// the plan still passes on a fresh tracker, the stylesheet fetched once per
// iteration.
func TestKeepAssets(t *testing.T) {
	recorded := httptest.NewServer(hartest.NewTracker(7, 58))
	defer recorded.Close()
	data, err := hartest.RecordTracker(recorded.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := HAR("tracker.har", data, Options{KeepAssets: true})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Plan)
	want := `    name: "GET /login"
    expect: { status: 200 }
    capture:
      authenticity_token: { css: "meta[name=\"csrf-token\"]", attr: "content" }
  # assets of GET /login, fetched at once as a browser does: at most 6 at a time, on the VU's connections
  - parallel:
      name: "assets of GET /login"
      max: 6
      steps:
        - get: "/app.css"
          name: "asset GET /app.css"
          expect: { status: 200 }
`
	if !strings.Contains(out, want) {
		t.Errorf("plan:\n%s\nwant the stylesheet after its page:\n%s", out, want)
	}
	if res.Steps != 7 || len(res.Assets) != 1 {
		t.Errorf("%d pages, assets %q: want 7 pages and the stylesheet", res.Steps, res.Assets)
	}
	tr := hartest.NewTracker(12, 300)
	fresh := httptest.NewServer(tr)
	defer fresh.Close()
	p, err := plan.Parse(filepath.Join(t.TempDir(), "tracker.yaml"), res.Plan, plan.Options{Set: []string{"target=" + fresh.URL, "load.closed.iterations=2"}, Env: res.SecretValues})
	if err != nil {
		t.Fatalf("the imported plan does not load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := runner.Plan(ctx, p, runner.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Summary; s.Checks.Failed != 0 || s.Iterations != 2 {
		t.Errorf("against a fresh tracker: checks %+v, iterations %d", s.Checks, s.Iterations)
	}
	var asset *result.Step
	for i := range r.Steps {
		if r.Steps[i].Name == "asset GET /app.css" {
			asset = &r.Steps[i]
		}
	}
	if asset == nil || asset.Summary.Requests != 2 {
		t.Errorf("the stylesheet's step: %+v, want it reported apart, 2 requests", asset)
	}
}

// TestKeepAssetsCapturedAlone: a page's assets are one parallel group, but
// one that a later request takes a value from (a token in a script) is
// fetched on its own after the group: a group's requests end in no set
// order, and the plan refuses a capture in one. The plan loads.
func TestKeepAssetsCapturedAlone(t *testing.T) {
	har := `{"log": {"version": "1.2", "entries": [
	  {"startedDateTime": "2026-12-01T10:00:00Z", "time": 5,
	   "request": {"method": "GET", "url": "http://shop.test/", "headers": []},
	   "response": {"status": 200, "headers": [], "content": {"mimeType": "text/html", "text": "<p>home</p>"}}},
	  {"startedDateTime": "2026-12-01T10:00:00.010Z", "time": 5, "_resourceType": "stylesheet",
	   "request": {"method": "GET", "url": "http://shop.test/app.css", "headers": []},
	   "response": {"status": 200, "headers": [], "content": {"mimeType": "text/css", "text": "p {}"}}},
	  {"startedDateTime": "2026-12-01T10:00:00.011Z", "time": 5, "_resourceType": "script",
	   "request": {"method": "GET", "url": "http://shop.test/app.js", "headers": []},
	   "response": {"status": 200, "headers": [], "content": {"mimeType": "text/javascript", "text": "window.cartKey = \"c4rt9Zq7Lm2Xw8Vb5Nk3\";"}}},
	  {"startedDateTime": "2026-12-01T10:00:00.012Z", "time": 5, "_resourceType": "image",
	   "request": {"method": "GET", "url": "http://shop.test/logo.png", "headers": []},
	   "response": {"status": 200, "headers": [], "content": {"mimeType": "image/png", "text": ""}}},
	  {"startedDateTime": "2026-12-01T10:00:02Z", "time": 5,
	   "request": {"method": "POST", "url": "http://shop.test/cart", "headers": [],
	     "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "cart_key=c4rt9Zq7Lm2Xw8Vb5Nk3&item=3"}},
	   "response": {"status": 200, "headers": [], "content": {"mimeType": "text/html", "text": "<p>added</p>"}}}]}}`
	res, err := HAR("x.har", []byte(har), Options{KeepAssets: true})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Plan)
	want := `  - parallel:
      name: "assets of GET /"
      max: 6
      steps:
        - get: "/app.css"
          name: "asset GET /app.css"
          expect: { status: 200 }
        - get: "/logo.png"
          name: "asset GET /logo.png"
          expect: { status: 200 }
  # an asset of GET / that a later step takes a value from: fetched on its own, after the others
  - get: "/app.js"
    name: "asset GET /app.js"
    expect: { status: 200 }
    capture:
`
	if !strings.Contains(out, want) {
		t.Fatalf("plan:\n%s\nwant:\n%s", out, want)
	}
	if _, err := plan.Parse(filepath.Join(t.TempDir(), "x.yaml"), res.Plan, plan.Options{}); err != nil {
		t.Errorf("the plan does not load: %v\n%s", err, out)
	}
}
