package importer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// k6Import converts testdata/k6/NAME.js and writes its plan and data files
// into a temporary directory, returning the plan's path.
func k6Import(t *testing.T, name string) (*K6Result, string) {
	t.Helper()
	file := filepath.Join("testdata", "k6", name+".js")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := K6(file, data, Options{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	dir := t.TempDir()
	for n, b := range res.Files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return res, filepath.Join(dir, name+".yaml")
}

func k6Load(t *testing.T, res *K6Result, path, site string, src []byte) *plan.Plan {
	t.Helper()
	opts := plan.Options{Env: map[string]string{"SITE": site}}
	if !strings.Contains(string(src), "{{ env.SITE }}") {
		opts.Set = []string{"target=" + site}
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(path, opts)
	if err != nil {
		t.Fatalf("the converted plan does not load: %v\n%s", err, src)
	}
	return p
}

// TestK6Convert converts a script of each construct and checks the plan
// says what k6 would do, and that it loads.
func TestK6Convert(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string // in the plan
		not  []string // NotConverted, each line:col first
	}{
		{"basic", []string{
			`target: "http://127.0.0.1:9"`,
			"# group: browse",
			`- get: "/health?vu={{ (vu + 1) }}&iter={{ iteration }}"`,
			`name: "home"`,
			`expect: { status: 200, contains: "ok" }`,
			`json: {"name":"item-{{ iteration }}","vu":"{{ (vu + 1) }}"}`,
			`headers: { "Content-Type": "application/json", "X-Trace": "k6" }`,
			`form: { "color": "red" }`,
			`- delete: "/items/1"`,
			`name: "delete item"`,
			`- patch: "/items/2"`,
			`body: "raw"`,
			"follow_redirects: false",
			"- think: 10ms",
			"closed: { vus: 2, iterations: 3 }   # k6 shared-iterations: 6 in all",
			`- "p95(latency) < 500ms"`,
			`- "avg(latency) < 200ms"`,
			`- "p99(latency, step=\"home\") < 1000ms"`,
			`- "error_rate < 1%"`,
			`- "checks > 99%"`,
			`- "requests >= 6"`,
			`- "iterations > 5"`,
			"# not converted: 34:3: if (__VU > 1) { ...",
			"# not converted: 7:11: userAgent: 'loadlab' (option userAgent has no loadlab equivalent)",
		}, []string{"7:11: userAgent", "11:85: threshold http_req_duration{name:gone}", "15:17: threshold iterations", "34:3: if (__VU > 1)"}},
		{"stages", []string{
			`target: "{{ env.SITE }}"`, `- get: "/ramp"`,
			"stages: [ { vus: 1 }, { ramp: 3, over: 1s }, { ramp: 0, over: 1s } ]",
		}, nil},
		{"scenarios", []string{
			"closed: { vus: 2, duration: 1s }\n      grace: 5s\n",
			"# not converted: 7:15: startTime: '0s' (option startTime has no loadlab equivalent)",
			"open: { rate: 10/1s, max_vus: 5, duration: 1s }",
			"max_vus: 4\n      stages: [ { rate: 0/1s }, { ramp: 10/1s, over: 1s } ]",
			"closed: { vus: 2, iterations: 3 }",
			"closed: { vus: 2, iterations: 2 }   # k6 shared-iterations: 4 in all",
			"stages: [ { vus: 0 }, { ramp: 2, over: 1s } ]",
			`form: { "email": "u{{ (vu + 1) }}-{{ iteration }}@example.com" }`,
			`- "p95(latency, scenario=signup) < 300ms"`,
			`- "rate(scenario=browse) > 1/s"`,
			"# not converted: 17:25: threshold http_req_receiving",
			"# not converted: 12:10: scenario ext:",
		}, []string{"7:15: startTime", "12:10: scenario ext: executor \"externally-controlled\"", "17:25: threshold http_req_receiving"}},
		{"data", []string{
			`users: { csv: "users.csv", pick: vu }`,
			`products: { csv: "products.csv", pick: random }`,
			`json: {"password":"{{ users.password }}","user":"{{ users.username }}"}`,
			`- get: "/products/{{ products.id }}?sku={{ products.sku }}"`,
			"# not converted: 23:3: http.batch(",
			"# not converted: 26:8: function teardown()",
			`- "checks >= 0%"`,
		}, []string{"26:8: function teardown", "23:3: http.batch"}},
		{"login", []string{
			`target: "{{ env.SITE }}"`,
			`json: {"n":2,"user":"u{{ (vu + 1) }}"}`,
			"      token: { json: \"$.auth.token\" }\n      first: { json: \"$.items[0].id\" }\n      where: { header: \"Location\" }\n",
			`- get: "/me/{{ first }}"`,
			`headers: { "Authorization": "Bearer {{ token }}", "X-From": "{{ where }}" }`,
			"# not converted: 12:9: size = login.timings.duration",
			"# not converted: 14:3: http.get(`${__ENV.OTHER}/elsewhere`) (its host is a template",
			"- think: 0s..2s\n",
			"- think: 1.5s..3.5s\n",
			"# not converted: 17:3: sleep(__VU) (sleep takes seconds",
		}, []string{"12:9: size", "14:3: http.get", "17:3: sleep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, path := k6Import(t, tc.name)
			out := string(res.Plan)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the plan lacks %q:\n%s", w, out)
				}
			}
			if len(res.NotConverted) != len(tc.not) {
				t.Errorf("not converted: %q, want %d", res.NotConverted, len(tc.not))
			}
			for _, w := range tc.not {
				found := false
				for _, l := range res.NotConverted {
					found = found || strings.HasPrefix(l, w)
				}
				if !found {
					t.Errorf("not converted: %q, want one starting %q", res.NotConverted, w)
				}
			}
			k6Load(t, res, path, "http://127.0.0.1:9", res.Plan)
			k6Load(t, res, path, "http://127.0.0.1:9", res.CheckPlan)
		})
	}
	_, path := k6Import(t, "data")
	csv, err := os.ReadFile(filepath.Join(filepath.Dir(path), "products.csv"))
	if err != nil || string(csv) != "id,sku\n1,A-1\n2,B-2\n" {
		t.Errorf("products.json as CSV: %q, %v", csv, err)
	}
}

// TestK6Defaults: without options k6 runs one iteration of one VU; vus
// alone share that iteration, which does not share among 3 (listed).
func TestK6Defaults(t *testing.T) {
	for _, tc := range []struct{ opts, want, note string }{
		{"", "closed: { vus: 1, iterations: 1 }", ""},
		{"export const options = {\r\n  vus: 2, iterations: 2,\r\n  x: 1 };\r\n", "closed: { vus: 2, iterations: 1 }", "5:3: x: 1 (option x"},
		{"export const options = { vus: 3 };\n", "closed: { vus: 3, iterations: 1 }", "3:24: options: shared-iterations: 1 iterations do not share evenly among 3 VUs"},
		{"export const options = { vus: 3, duration: '2s' };\n", "closed: { vus: 3, duration: 2s }", ""},
	} {
		js := "import http from 'k6/http';\n\n" + tc.opts + "export default\nfunction () { http.get('http://127.0.0.1:9/'); }\n"
		res, err := K6("d.js", []byte(js), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res.Plan), tc.want) {
			t.Errorf("%q: plan\n%s\nwant %q", tc.opts, res.Plan, tc.want)
		}
		if got := strings.Join(res.NotConverted, "; "); tc.note != "" && !strings.HasPrefix(got, tc.note) || tc.note == "" && got != "" {
			t.Errorf("%q: not converted %q, want %q", tc.opts, got, tc.note)
		}
	}
}

// TestK6Positions: line:col are the script's, whatever the module syntax
// around them (export default before a line break, CRLF lines).
func TestK6Positions(t *testing.T) {
	for js, want := range map[string]string{
		"import http from 'k6/http';\nexport default\nfunction () {\n  foo(); http.get('http://a/');\n}\n":                "4:3: foo()",
		"import http\r\n  from 'k6/http';\r\nexport default\r\nfunction () {\r\n  foo(); http.get('http://a/');\r\n}\r\n": "5:3: foo()",
	} {
		res, err := K6("p.js", []byte(js), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.NotConverted) != 1 || !strings.HasPrefix(res.NotConverted[0], want) {
			t.Errorf("%q: not converted %q, want %s", js, res.NotConverted, want)
		}
	}
}

func TestK6BadScripts(t *testing.T) {
	for _, tc := range []struct{ name, js, want string }{
		{"syntax", "import http from \"k6/http\";\nexport default function () {\n  http.get(\"http://x/\" +);\n}\n", "s.js:3:25: syntax error"},
		{"import", "import http from ;\n", "s.js:1:1: syntax error: unexpected ';' in an import declaration"},
		{"no default", "import http from 'k6/http';\nexport function f() { http.get('http://x/') }\n", "no function default"},
		{"no requests", "export default function () {}\n", "no http requests"},
		{"target", "import http from 'k6/http';\nexport default function () { http.get('http://x/') }\n", `target "ftp://x": want an http:// or https:// URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{}
			if tc.name == "target" {
				opts.Target = "ftp://x"
			}
			_, err := K6("s.js", []byte(tc.js), opts)
			if !errors.Is(err, ErrScript) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrScript with %q", err, tc.want)
			}
		})
	}
}

// TestK6Run runs converted plans against loadlab target: the request and
// journey counts are k6's for the same script.
func TestK6Run(t *testing.T) {
	if testing.Short() {
		t.Skip("sends load")
	}
	site := targettest.Start(t, target.Options{})
	run := func(name string) *result.Result {
		res, path := k6Import(t, name)
		p := k6Load(t, res, path, site, res.Plan)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := runner.Plan(ctx, p, runner.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	// vus 2 × iterations 6 shared: 6 journeys of 5 requests; the if is not converted.
	r := run("basic")
	if s := r.Summary; s.Iterations != 6 || s.Requests != 30 || s.Checks.Failed != 0 || s.Checks.Passed != 12 {
		for _, st := range r.Steps {
			if fc := st.FailedCheck; fc != nil {
				t.Logf("%s: %s (status %d) %s", st.Name, fc.Check, fc.Status, fc.Error)
			}
		}
		t.Errorf("basic: %d journeys, %d requests, checks %+v; want 6, 30, 12 passed", s.Iterations, s.Requests, s.Checks)
	}
	// 2 VUs × 4 shared iterations, 2 requests each; every VU logs in as its own user.
	r = run("data")
	if s := r.Summary; s.Iterations != 4 || s.Requests != 8 || s.Checks.Failed != 0 || s.Aborted != 0 {
		t.Errorf("data: %d journeys, %d requests, checks %+v, aborted %d; want 4, 8", s.Iterations, s.Requests, s.Checks, s.Aborted)
	}
	// per-vu-iterations 2 × 3 = 6, shared-iterations 4 in all, 10 arrivals in 1s at 10/s.
	r = run("scenarios")
	want := map[string]int64{"each": 6, "shared": 4, "signup": 10}
	for _, sc := range r.Scenarios {
		if w, ok := want[sc.Scenario]; ok && sc.Summary.Iterations != w {
			t.Errorf("scenario %s: %d journeys, want %d", sc.Scenario, sc.Summary.Iterations, w)
		}
		delete(want, sc.Scenario)
	}
	if len(want) > 0 {
		t.Errorf("scenarios missing from the result: %v", want)
	}
}
