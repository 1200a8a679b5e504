package plan

import (
	"strings"
	"testing"
)

// A null --set removes what it names: the server section (the plan then
// runs against a server that is already up, at its own target), a list
// item, a map entry.
func TestSetNullRemoves(t *testing.T) {
	const src = `target: http://127.0.0.1:3000
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
thresholds: [ "error_rate < 1%", "p95(latency) < 1s" ]
server:
  run: [ "true" ]
  env: { LD_PRELOAD: "", RAILS_ENV: production }
`
	parse := func(t *testing.T, set ...string) *Plan {
		t.Helper()
		p, err := Parse("plan.yaml", []byte(src), Options{Set: set})
		if err != nil {
			t.Fatalf("--set %v: %v", set, err)
		}
		return p
	}
	if p := parse(t); p.Server == nil {
		t.Fatal("the plan's server section did not load")
	}
	for _, set := range []string{"server=null", "server=~", "server=Null"} {
		p := parse(t, set)
		if p.Server != nil {
			t.Errorf("--set %s kept the server: %+v", set, p.Server)
		}
		if p.Target == nil || p.Target.String() != "http://127.0.0.1:3000" {
			t.Errorf("--set %s: target %v, want the plan's own", set, p.Target)
		}
	}
	// The last --set wins: set it back after removing it.
	if p := parse(t, "server=null", "server.run=true"); p.Server == nil || p.Server.Run.Src != "true" {
		t.Errorf("server given again after server=null: %+v", p.Server)
	}
	if p := parse(t, "thresholds.0=null"); len(p.Thresholds) != 1 || p.Thresholds[0].Text != "p95(latency) < 1s" {
		t.Errorf("thresholds.0=null left %+v", p.Thresholds)
	}
	if p := parse(t, "server.env.LD_PRELOAD=null"); len(p.Server.Env) != 1 || p.Server.Env[0].Name != "RAILS_ENV" {
		t.Errorf("server.env.LD_PRELOAD=null left %+v", p.Server.Env)
	}
	// Removing what is not there is no error: a script may pass
	// --set server=null to every plan.
	if p := parse(t, "server=null", "server=null", "server.env.X=null", "thresholds.5=null", "http=null"); p.Server != nil {
		t.Errorf("server still there: %+v", p.Server)
	}
	// An empty value is still an empty string, not a removal.
	if p := parse(t, "server.env.RAILS_ENV="); len(p.Server.Env) != 2 || p.Server.Env[1].Value.Src != "" {
		t.Errorf("server.env.RAILS_ENV= gave %+v", p.Server.Env)
	}
	// A section name that does not exist is a typo, not a silent no-op.
	_, err := Parse("plan.yaml", []byte(src), Options{Set: []string{"sever=null"}})
	if err == nil || !strings.Contains(err.Error(), `--set sever=null: cannot remove "sever": the plan has no such section; did you mean "server"?`) {
		t.Errorf("--set sever=null: %v", err)
	}
	// A server threshold left without its server says what it needs.
	_, err = Parse("plan.yaml", []byte(src+"  memory_quota: 1GiB\n"), Options{Set: []string{"server=null", "thresholds.2=server.rss.peak < 1GiB"}})
	if err == nil || !strings.Contains(err.Error(), "server.rss.peak needs a server: section") {
		t.Errorf("server threshold without a server: %v", err)
	}
}
