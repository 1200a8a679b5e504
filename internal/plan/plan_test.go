package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBadPlans: every bad fixture is rejected with its problem at the right
// file:line:col and a message that says what was expected.
func TestBadPlans(t *testing.T) {
	tests := []struct {
		file string
		at   string // line:col
		want string
	}{
		{"unknown-top-key", "2:1", `unknown key "scenarioss" in the plan; did you mean "scenarios"?`},
		{"unknown-step-key", "3:5", `unknown key "gett" in a step; did you mean "get"?`},
		{"unknown-step-option", "4:5", `unknown key "header" in a step; did you mean "headers"?`},
		{"vus-not-number", "4:18", `vus must be a whole number, got "fifty"`},
		{"negative-vus", "4:18", "vus must be at least 1, got -5"},
		{"bad-duration", "4:31", `duration must be a duration such as 500ms`},
		{"bad-rate", "4:17", `bad rate "7000 per 10m": want a count per period`},
		{"zero-rate", "4:17", "the count must be positive"},
		{"open-without-max-vus", "4:9", "open load needs max_vus"},
		{"open-without-duration", "4:9", "open load at 100/s needs duration"},
		{"bad-threshold-value", "5:20", `latency needs a duration such as 500ms, got "fast"`},
		{"bad-threshold-metric", "5:10", `unknown metric "latncy"; did you mean "latency"?`},
		{"undefined-variable", "4:23", `undefined variable "produt"; did you mean "product"?`},
		{"capture-used-before", "3:21", `undefined variable "token": it is captured by step 2 of scenario default, later than this`},
		{"unclosed-template", "4:21", "unclosed {{: expected }}"},
		{"unknown-function", "4:24", "unknown function randomEmail()"},
		{"bad-jsonpath", "4:31", `bad JSONPath "$..[?("`},
		{"bad-expect-jsonpath", "4:23", `bad JSONPath "token"`},
		{"bad-css", "4:31", `bad CSS selector "input[name="`},
		{"bad-regex", "4:33", `bad regular expression "token=([a-z"`},
		{"missing-target", "2:10", "has a relative URL but the plan has no target"},
		{"bad-target", "1:9", "target must be an http:// or https:// URL"},
		{"empty-scenario", "4:12", "scenario checkout has no steps"},
		{"csv-missing", "3:17", "cannot open testdata/bad/nope.csv"},
		{"csv-empty", "3:17", "is empty: expected a header row of column names"},
		{"csv-no-header", "3:17", `column 1 of the header, "a@example.com", is not a name`},
		{"csv-no-rows", "3:17", "has a header but no rows"},
		{"csv-unknown-column", "6:24", `undefined variable "users.emial"; did you mean "users.email"?`},
		{"bad-pick", "3:37", `pick must be unique, sequential, random or vu, got "shuffled"`},
		{"two-methods", "3:8", "a step does one thing, but this one has get and post"},
		{"no-method", "3:9", "a step needs a request"},
		{"bad-think", "4:12", `think range "3s..1s": expected MIN..MAX`},
		{"bad-status", "4:23", "status must be a code from 100 to 599"},
		{"zero-weight", "3:16", "weight must be at least 1, got 0"},
		{"no-load", "1:1", "the plan has no load"},
		{"two-loads", "4:9", "load needs exactly one of closed:, open: or stages:, found 2"},
		{"closed-without-end", "4:11", "closed load needs iterations: (per VU) or duration:"},
		{"ramp-without-over", "7:11", "a ramp needs over:"},
		{"capture-two-sources", "4:38", "capture token reads one thing, but has json and header"},
		{"header-line-break", "4:21", "header X-A: the value has a line break"},
		{"http-header-line-break", "2:25", "header X-A: the value has a line break"},
		{"http-header-bad-name", "2:20", `bad header name "X A"`},
		{"json-and-form", "3:9", "a step has one body"},
		{"reserved-capture", "4:16", `capture "vu" is reserved`},
		{"yaml-syntax", "4:4", "YAML:"},
		{"duplicate-key", "4:1", `mapping key "load" already defined`},
		{"relative-url-without-slash", "3:10", "a step URL must be a path starting with /"},
		{"sets-content-length", "4:16", "loadlab sets the Content-Length header itself"},
		{"cookie-in-http-headers", "3:14", "loadlab sets the Cookie header itself (the cookie jar sends cookies"},
		{"empty", "1:1", "the plan is empty"},
		{"warmup-with-iterations", "5:9", "warmup needs a load that lasts a known time"},
		{"max-header-too-small", "2:21", "http.max_header must be from 256B to 1GiB, got 100"},
		{"server-threshold-without-server", "5:5", "server.cpu.avg needs a server: section"},
		{"warmup-too-long", "5:9", "warmup 2s must be shorter than the load's 1s"},
		{"target-credentials", "1:9", "target must not carry credentials (user:password@)"},
		{"server-ready-port", "4:10", `server.ready: "http://127.0.0.1:99999/health": port "99999" is not 1..65535`},
		{"threshold-unknown-step", "5:5", `the plan has no step "logn"; did you mean "login"?`},
		{"yaml-tab", "3:1", "indent with spaces, not tabs"},
		{"flat-load", "3:9", "vus belongs inside a kind of load: load.closed.vus, as in load: {closed: {vus: 10, duration: 30s}}"},
		{"flat-open-load", "4:3", "rate belongs inside a kind of load: load.open.rate"},
	}
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) != len(tests) {
		t.Errorf("%d bad fixtures, %d expectations: every fixture needs one", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", tt.file+".yaml")
			p, err := Load(path, Options{})
			if err == nil {
				t.Fatalf("loaded %+v, want an error", p)
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T %v is not a positioned plan error", err, err)
			}
			want := path + ":" + tt.at + ": "
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), want) && strings.Contains(e.Msg, tt.want) {
					return
				}
			}
			t.Errorf("got\n%v\nwant an error at %s saying %q", err, tt.at, tt.want)
		})
	}
}

func TestGoodPlans(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) < 4 {
		t.Fatalf("only %d good fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := Load(f, Options{Env: map[string]string{"LOADLAB_TEST_VALUE": "v"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Scenarios) == 0 || p.Load.Kind == "" {
				t.Fatalf("plan %+v", p)
			}
		})
	}
}

func TestDesignExample(t *testing.T) {
	p, err := Load("testdata/good/design.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "guest-checkout" || p.Target.String() != "http://127.0.0.1:3000" || len(p.Scenarios) != 2 {
		t.Fatalf("plan %+v", p)
	}
	co := p.Scenarios[0]
	if co.Name != "checkout" || co.Weight != 9 || len(co.Steps) != 5 || !co.Steps[3].IsThink || co.Steps[3].Think != time.Second || co.Steps[3].ThinkMax != 3*time.Second {
		t.Errorf("checkout %+v", co)
	}
	if p.Data[0].Pick != PickUnique || len(p.Data[0].Rows) != 3 {
		t.Errorf("data %+v", p.Data[0])
	}
	if l := p.Load; l.Kind != LoadClosed || l.VUs != 50 || l.Iterations != 1 {
		t.Errorf("load %+v", l)
	}
	if len(p.Thresholds) != 3 || p.Thresholds[1].T == nil {
		t.Errorf("thresholds %+v", p.Thresholds)
	}
}

func TestOpenRateDefaultsItsDuration(t *testing.T) {
	p, err := Load("testdata/good/open.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Load; l.Kind != LoadOpen || l.Rate.Count != 7000 || l.Duration != 10*time.Minute || l.MaxVUs != 2000 {
		t.Errorf("load %+v", l)
	}
}

func TestOverrides(t *testing.T) {
	p, err := Load("testdata/good/design.yaml", Options{
		Set: []string{"load.closed.vus=10", "load.closed.iterations=3", "scenarios.checkout.weight=1", "vars.product=7", "thresholds.0=p99(latency) < 1s"},
		Env: map[string]string{"product": "8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Load.VUs != 10 || p.Load.Iterations != 3 || p.Scenarios[0].Weight != 1 || p.Thresholds[0].Text != "p99(latency) < 1s" {
		t.Errorf("overrides not applied: %+v", p.Load)
	}
	if p.Vars[0].Value != "8" {
		t.Errorf("-e product=8 did not override the variable: %v", p.Vars[0].Value)
	}
	// A list item one past the end is added; a list that was not there is made.
	p, err = Load("testdata/good/design.yaml", Options{Set: []string{"thresholds.3=checks > 99%"}})
	if err != nil || len(p.Thresholds) != 4 || p.Thresholds[3].Text != "checks > 99%" {
		t.Errorf("appending a threshold: %v, %+v", err, p)
	}
	p, err = Load("testdata/good/stages.yaml", Options{Set: []string{"thresholds.0=error_rate < 1%", "thresholds.1=checks > 99%"}})
	if err != nil || len(p.Thresholds) != 2 || p.Thresholds[0].Text != "error_rate < 1%" {
		t.Errorf("thresholds on a plan without any: %v, %+v", err, p)
	}
	for _, tt := range []struct{ set, want string }{
		{"load.closed.vus=many", `--set load.closed.vus=many: vus must be a whole number, got "many"`},
		{"thresholds.9=x", `"9" is not an index of the list at thresholds (it has 3 items; 3 adds one)`},
		{"vars.list.2=x", `"2" is not an index of the list at vars.list (it has 0 items; 0 adds one)`},
		{"load.closed.vus.more=1", "load.closed.vus is \"50\", not a mapping"},
		{"novalue", "want --set key.path=value"},
		{"load.closed.vuz=1", `unknown key "vuz" in load.closed; did you mean "vus"?`},
	} {
		_, err := Load("testdata/good/design.yaml", Options{Set: []string{tt.set}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--set %s: %v, want %q", tt.set, err, tt.want)
		}
	}
}

func TestSecretsAreMasked(t *testing.T) {
	p, err := Load("testdata/good/stages.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Masked(); strings.Contains(m, "k-123") || !strings.Contains(m, `value: "***"`) {
		t.Errorf("masked plan:\n%s", m)
	}
	p, err = Load("testdata/good/open.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	secrets := strings.Join(p.Secrets(), ",")
	if secrets != "pw-a,pw-b,pw-c" {
		t.Errorf("secrets %q", secrets)
	}
}

func TestPlanFileErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), Options{})
	if err == nil || !strings.Contains(err.Error(), "missing.yaml: cannot read the plan: no such file") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "tabs.yaml")
	os.WriteFile(bad, []byte("target: http://x\n\tsteps: []\n"), 0o644)
	if _, err := Load(bad, Options{}); err == nil || !strings.Contains(err.Error(), "tabs.yaml:2:") {
		t.Errorf("tab indentation: %v", err)
	}
}

// TestInputs: what the plan's text does not say is recorded beside it, and
// a change to any of it (an override, the environment the plan reads, a
// template file) changes the fingerprint that guards a resumed experiment.
func TestInputs(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "server.cfg.tmpl")
	if err := os.WriteFile(tmpl, []byte("threads {{ env.THREADS }}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan.yaml")
	src := `
target: "http://127.0.0.1:{{ env.PORT }}"
vars: { password: { value: hunter2, secret: true } }
steps: [ { post: /login, form: { p: "{{ password }}", k: "{{ env.API_TOKEN }}" } } ]
load: { closed: { vus: 1, iterations: 1 } }
server: { run: [ "true" ], files: { server.cfg: server.cfg.tmpl } }
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PORT", "8080")
	t.Setenv("API_TOKEN", "s3cret")
	t.Setenv("THREADS", "5")
	load := func(opts Options) *Plan {
		t.Helper()
		opts.LookupEnv = os.LookupEnv
		p, err := Load(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := load(Options{Set: []string{"load.closed.vus=2"}, Env: map[string]string{"password": "hunter3"}})
	want := "--set load.closed.vus=2|-e password=***|env.API_TOKEN=***|env.PORT=8080|env.THREADS=5"
	if got := strings.Join(p.Inputs(), "|"); got != want {
		t.Errorf("inputs\n got %s\nwant %s", got, want)
	}
	base := load(Options{}).Fingerprint()
	if again := load(Options{}).Fingerprint(); again != base {
		t.Fatalf("fingerprint not stable: %s then %s", base, again)
	}
	changes := map[string]func(){
		"env read by the plan":   func() { os.Setenv("PORT", "8081") },
		"env read by a template": func() { os.Setenv("THREADS", "6") },
		"a secret env":           func() { os.Setenv("API_TOKEN", "other") },
		"template file": func() {
			os.WriteFile(tmpl, []byte("threads {{ env.THREADS }} # tuned\n"), 0o644)
		},
	}
	for name, change := range changes {
		change()
		if got := load(Options{}).Fingerprint(); got == base {
			t.Errorf("%s changed, the fingerprint did not", name)
		}
		base = load(Options{}).Fingerprint()
	}
	t.Setenv("LOADLAB_UNRELATED", "x")
	if got := load(Options{}).Fingerprint(); got != base {
		t.Error("an environment variable the plan does not read changed the fingerprint")
	}
}

// TestOneErrorPerMistake: a mistake is reported once, where it was made,
// not again by every part of the plan that depends on it.
func TestOneErrorPerMistake(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"target without scheme", "target: 127.0.0.1:8080\nsteps: [ { get: / }, { get: /b } ]\nload: { closed: { vus: 1, iterations: 1 } }\n", `(http://127.0.0.1:8080?)`},
		{"target from a missing variable", "target: \"{{ env.LOADLAB_NOPE }}\"\nsteps: [ { get: / }, { get: /b } ]\nload: { closed: { vus: 1, iterations: 1 } }\n", "environment variable LOADLAB_NOPE is not set"},
		{"steps misspelt", "target: http://127.0.0.1:1\nstepz: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n", `did you mean "steps"?`},
		{"run misspelt", "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\nserver: { rn: ./start }\n", `did you mean "run"?`},
	} {
		_, err := Parse("plan.yaml", []byte(tt.yaml), Options{})
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Msg, tt.want) {
			t.Errorf("%s: %v; want one error saying %q", tt.name, err, tt.want)
		}
	}
}

// TestNoCooldown: a warmup or cooldown of 0 means none, not an error.
func TestNoCooldown(t *testing.T) {
	p, err := Parse("plan.yaml", []byte("target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, duration: 1s } }\nparams: { a: [1, 2] }\ncooldown: 0s\nwarmup: 0\n"), Options{})
	if err != nil || p.Experiment.Cooldown != 0 || p.Experiment.Warmup != 0 {
		t.Errorf("%v, %+v", err, p)
	}
	if _, err := Parse("plan.yaml", []byte("target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, duration: 1s } }\nparams: { a: [1, 2] }\ncooldown: -1s\n"), Options{}); err == nil {
		t.Error("a negative cooldown was accepted")
	}
}

// TestVarsNamedAsCredentials: a variable the name rule calls a credential
// is masked as one marked secret: true is, in the plan's text, its secrets
// and its inputs alike.
func TestVarsNamedAsCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.yaml")
	src := `
target: "http://127.0.0.1:1"
vars: { password: hunter2pw, api_key: { value: k-abcdef }, product: widget }
steps: [ { post: /login, form: { p: "{{ password }}", k: "{{ api_key }}", q: "{{ product }}" } } ]
load: { closed: { vus: 1, iterations: 1 } }
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m, want := p.Masked(), `vars: { password: "***", api_key: { value: "***" }, product: widget }`; !strings.Contains(m, want) {
		t.Errorf("masked plan, want %s:\n%s", want, m)
	}
	p, err = Load(path, Options{Set: []string{"vars.password=override-pw"}})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Masked()
	for _, clear := range []string{"hunter2pw", "k-abcdef"} {
		if strings.Contains(m, clear) {
			t.Errorf("masked plan shows %s:\n%s", clear, m)
		}
	}
	if want := `vars: { password: "***", api_key: { value: "***" }, product: widget }`; !strings.Contains(m, want) {
		t.Errorf("masked plan with --set, want %s:\n%s", want, m)
	}
	secrets := strings.Join(p.Secrets(), ",")
	if secrets != "override-pw,k-abcdef" {
		t.Errorf("secrets %q", secrets)
	}
	if in := strings.Join(p.Inputs(), "\n"); in != "--set vars.password=***" {
		t.Errorf("inputs %q", in)
	}
}

// TestKneeShare: knee: 10% sets the share a sweep's step must add; other
// forms are refused at their position.
func TestKneeShare(t *testing.T) {
	const head = "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, duration: 1s } }\nparams: { a: [1, 2] }\n"
	p, err := Parse("plan.yaml", []byte(head+"knee: 10%\n"), Options{})
	if err != nil || p.Experiment.KneeShare != 0.1 {
		t.Fatalf("knee: 10%% gave %v, %v", p, err)
	}
	if p, err := Parse("plan.yaml", []byte(head), Options{}); err != nil || p.Experiment.KneeShare != 0 {
		t.Fatalf("no knee gave %v, %v; want 0 (the default)", p, err)
	}
	for _, bad := range []string{"0.05", "0%", "100%", "five%"} {
		_, err := Parse("plan.yaml", []byte(head+"knee: "+bad+"\n"), Options{})
		if err == nil || !strings.Contains(err.Error(), "plan.yaml:5:7") || !strings.Contains(err.Error(), "knee must be a share") {
			t.Errorf("knee: %s gave %v, want an error at plan.yaml:5:7", bad, err)
		}
	}
}

// TestEmptySteps: an empty, null or mapping steps: (top-level or in a
// scenario) is one positioned error, never a nil scenario for the compiler
// to panic on.
func TestEmptySteps(t *testing.T) {
	for _, steps := range []string{"", "null", "~", "[]", "{}", "{ a: 1 }", "3"} {
		for _, shape := range []string{"steps: %s\n", "scenarios:\n  s:\n    steps: %s\n"} {
			src := "target: http://127.0.0.1:1\n" + fmt.Sprintf(shape, steps) + "load: { closed: { vus: 1, iterations: 1 } }\n"
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%q: panic: %v", src, r)
					}
				}()
				_, err := Parse("plan.yaml", []byte(src), Options{})
				var errs Errors
				if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Pos.Line == 0 {
					t.Errorf("%q: %v; want one positioned error", src, err)
				}
			}()
		}
	}
}

// TestByteOrderMark: a plan saved with a UTF-8 BOM loads, and its errors'
// positions are those of the text without it.
func TestByteOrderMark(t *testing.T) {
	src := "\ufeffname: bom\ntarget: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"
	p, err := Parse("plan.yaml", []byte(src), Options{})
	if err != nil || p.Name != "bom" {
		t.Fatalf("%v, %+v", err, p)
	}
	if strings.HasPrefix(p.Masked(), "\ufeff") {
		t.Error("the stored plan keeps the BOM")
	}
	_, err = Parse("plan.yaml", []byte("\ufeffnam: x\n"), Options{})
	var errs Errors
	if !errors.As(err, &errs) || errs[0].Pos.Line != 1 || errs[0].Pos.Col != 1 || strings.Contains(err.Error(), "\ufeff") {
		t.Errorf("%v: want an error at 1:1 that does not quote the BOM", err)
	}
}

// TestPathsStayInside: server.files keys that leave dir (absolute, or
// climbing with ..) and a name that is a path (.., a/b) are refused where
// they are written; a file in a subdirectory of dir is fine.
func TestPathsStayInside(t *testing.T) {
	const base = "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"
	for _, tt := range []struct {
		name, yaml string
		line, col  int
	}{
		{"climbing file", base + "server:\n  run: \"true\"\n  files:\n    ../../x: { content: hi }\n", 7, 5},
		{"climbing inside", base + "server:\n  run: \"true\"\n  files:\n    a/../../y: { content: hi }\n", 7, 5},
		{"absolute file", base + "server:\n  run: \"true\"\n  files:\n    /tmp/x: { content: hi }\n", 7, 5},
		{"name ..", "name: \"..\"\n" + base, 1, 7},
		{"name .", "name: .\n" + base, 1, 7},
		{"name with /", "name: a/b\n" + base, 1, 7},
		{"name with \\", "name: 'a\\b'\n" + base, 1, 7},
	} {
		_, err := Parse("plan.yaml", []byte(tt.yaml), Options{})
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Pos.Line != tt.line || errs[0].Pos.Col != tt.col {
			t.Errorf("%s: %v; want one error at %d:%d", tt.name, err, tt.line, tt.col)
		}
	}
	if _, err := Parse("plan.yaml", []byte("name: api v2\n"+base+"server:\n  run: \"true\"\n  files:\n    conf/a.cfg: { content: hi }\n"), Options{}); err != nil {
		t.Errorf("a file in a subdirectory of dir: %v", err)
	}
}

// TestVarFromEnv: a variable written { env: NAME, secret: true } takes the
// environment's value (-e NAME=... or the process's), which the plan never
// holds and every output masks; unset, the plan does not load, and the
// error says where and which variable to export.
func TestVarFromEnv(t *testing.T) {
	src := `target: "http://127.0.0.1:1"
vars:
  password: { env: LOADLAB_TEST_PASSWORD, secret: true }
steps: [ { post: /login, form: { p: "{{ password }}" } } ]
load: { closed: { vus: 1, iterations: 1 } }
`
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	_, err := Parse("plan.yaml", []byte(src), Options{LookupEnv: env(nil)})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(err.Error(), "plan.yaml:3:20: variable password: environment variable LOADLAB_TEST_PASSWORD is not set (export LOADLAB_TEST_PASSWORD=...") {
		t.Errorf("unset: %v", err)
	}
	for name, opts := range map[string]Options{
		"exported": {LookupEnv: env(map[string]string{"LOADLAB_TEST_PASSWORD": "hunter2-env"})},
		"-e NAME":  {Env: map[string]string{"LOADLAB_TEST_PASSWORD": "hunter2-env"}},
	} {
		p, err := Parse("plan.yaml", []byte(src), opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(p.Vars) != 1 || p.Vars[0].Value != "hunter2-env" || !p.Vars[0].Secret {
			t.Errorf("%s: vars %+v", name, p.Vars)
		}
		if !slices.Contains(p.Secrets(), "hunter2-env") {
			t.Errorf("%s: secrets %q lack the value", name, p.Secrets())
		}
		if in := strings.Join(p.Inputs(), "|"); strings.Contains(in, "hunter2") || !strings.Contains(in, "LOADLAB_TEST_PASSWORD=***") {
			t.Errorf("%s: inputs %s", name, in)
		}
		if m := p.Masked(); m != src {
			t.Errorf("%s: the masked plan\n%s\nis not the plan as written (it holds no secret)", name, m)
		}
	}
	p, err := Parse("plan.yaml", []byte(src), Options{Env: map[string]string{"password": "given"}})
	if err != nil || p.Vars[0].Value != "given" {
		t.Errorf("-e password=given: %v, %+v", err, p)
	}
	bad := strings.Replace(src, "{ env: LOADLAB_TEST_PASSWORD,", "{ value: x, env: LOADLAB_TEST_PASSWORD,", 1)
	if _, err := Parse("plan.yaml", []byte(bad), Options{}); err == nil || !strings.Contains(err.Error(), "value: or env:, not both") {
		t.Errorf("value and env: %v", err)
	}
}
