package plan

import (
	"strings"
	"testing"
	"time"
)

// TestEachRunCommands: before_each_run and after_each_run are written as
// server.run is (a command line or a list), rendered with the point's
// params in the server's dir and env; mistakes are positioned.
func TestEachRunCommands(t *testing.T) {
	const base = `target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
params: { threads: [1, 2] }
baseline: { threads: 1 }
server:
  run: [ "true" ]
  dir: app
  env: { DB: bench }
  files: { seed.sql: { content: "threads {{ threads }}" } }
`
	p, err := Parse("/x/plan.yaml", []byte(base+"  before_each_run: restore --threads {{ threads }}\n  after_each_run: [ rm, -rf, \"tmp/{{ threads }}\" ]\n  each_run_timeout: 30s\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Server.EachRunTimeout != 30*time.Second {
		t.Errorf("each_run_timeout %v", p.Server.EachRunTimeout)
	}
	before, after, err := p.EachRunSpecs(map[string]any{"threads": 2})
	if err != nil {
		t.Fatal(err)
	}
	if before.Shell != "restore --threads 2" || before.Dir != "/x/app" || before.Env["DB"] != "bench" || len(before.Files) != 1 || before.Ready != "" {
		t.Errorf("before %+v", before)
	}
	if strings.Join(after.Argv, " ") != "rm -rf tmp/2" || after.Shell != "" || len(after.Files) != 0 {
		t.Errorf("after %+v", after)
	}
	if b, a, err := mustParse(t, base).EachRunSpecs(nil); b != nil || a != nil || err != nil {
		t.Errorf("no commands: %v %v %v", b, a, err)
	}
	for _, tt := range []struct{ add, want string }{
		{"  before_each_run: \"\"\n", "11:20: server.before_each_run is empty"},
		{"  after_each_run: []\n", "11:19: server.after_each_run is an empty list"},
		{"  before_each_run: \"restore {{ nope }}\"\n", `undefined variable "nope"`},
		{"  each_run_timeout: soon\n", "server.each_run_timeout must be a duration"},
		{"  before_each_rn: x\n", `unknown key "before_each_rn" in server; did you mean "before_each_run"?`},
	} {
		_, err := Parse("plan.yaml", []byte(base+tt.add), Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.add, err, tt.want)
		}
	}
}

func mustParse(t *testing.T, src string) *Plan {
	t.Helper()
	p, err := Parse("plan.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
