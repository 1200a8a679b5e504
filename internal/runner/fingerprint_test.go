package runner

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// TestPlanFingerprint: a plan's fingerprint holds its load (as rendered
// for the point), its requests as written, its target's origin and its
// server's command with the env before it, secrets masked; two points of
// one experiment share the plan's identity and differ where the params do.
func TestPlanFingerprint(t *testing.T) {
	src := []byte(`
name: checkout
target: http://127.0.0.1:3000/shop
vars: { api_key: { value: K3Y-S3CRET, secret: true } }
scenarios:
  guest:
    steps:
      - get: /products/{{ iteration }}?api_key=K3Y-S3CRET
      - think: 1s
      - post: /cart
        form: { id: "1" }
    weight: 3
  admin:
    steps: [ { get: /admin } ]
load: { open: { rate: 1.5/s, duration: 10s, max_vus: 20 } }
server:
  run: "{{ server }} --port 3000 --key {{ api_key }}"
  env: { MALLOC: "{{ server }}", DB_PASSWORD: hunter22 }
params: { server: [thin, puma] }
`)
	fp := func(params map[string]any) *result.Fingerprint {
		p, err := plan.Parse("checkout.yaml", src, plan.Options{Params: params})
		if err != nil {
			t.Fatal(err)
		}
		spec, err := p.ServerSpec(params)
		if err != nil {
			t.Fatal(err)
		}
		return planFingerprint(p, &spec)
	}
	thin, puma := fp(map[string]any{"server": "thin"}), fp(map[string]any{"server": "puma"})
	want := &result.Fingerprint{
		Workload: "open",
		Shape:    "1.5/s for 10s, at most 20 VUs",
		Steps:    []string{"guest (weight 3): GET /products/{{ iteration }}?api_key=***", "guest (weight 3): POST /cart", "admin (weight 1): GET /admin"},
		Target:   "http://127.0.0.1:3000",
		Server:   "DB_PASSWORD=*** MALLOC=thin thin --port 3000 --key ***",
		Plan:     thin.Plan,
	}
	want.Hash = want.Sum()
	if !reflect.DeepEqual(thin, want) {
		t.Errorf("fingerprint\n%+v, want\n%+v", thin, want)
	}
	if puma.Plan != thin.Plan || puma.Hash == thin.Hash || !strings.HasPrefix(puma.Server, "DB_PASSWORD=*** MALLOC=puma puma") {
		t.Errorf("another point of the plan: %+v", puma)
	}
}

// TestQuickFingerprint: quick mode's fingerprint is written as a plan's,
// so that the same test both ways compares alike.
func TestQuickFingerprint(t *testing.T) {
	u, _ := url.Parse("http://localhost/a?token=abc&page=2")
	for _, c := range []struct {
		settings result.Settings
		shape    string
	}{
		{result.Settings{Mode: "closed", Connections: 50, Duration: result.Duration(30e9)}, "50 VUs for 30s"},
		{result.Settings{Mode: "closed", Connections: 10, Requests: 1000}, "10 VUs, 1000 requests in all"},
		{result.Settings{Mode: "open", Connections: 100, Rate: 2000, Duration: result.Duration(10e9)}, "2000/s for 10s, at most 100 VUs"},
	} {
		f := quickFingerprint(QuickRun{URL: u, Method: "GET", Settings: c.settings})
		if c.settings.Requests == 0 {
			p, err := plan.Parse("plan.yaml", []byte(fmt.Sprintf("target: http://localhost\nsteps: [ { get: \"/a?token=abc&page=2\" } ]\nload: { %s }\n", map[string]string{
				"closed": "closed: { vus: 50, duration: 30s }", "open": "open: { rate: 2000/s, duration: 10s, max_vus: 100 }"}[c.settings.Mode])), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if pf := planFingerprint(p, nil); pf.Hash != f.Hash {
				t.Errorf("%s: the plan's fingerprint %+v, quick mode's %+v", c.settings.Mode, pf, f)
			}
		}
		if f.Workload != c.settings.Mode || f.Shape != c.shape || f.Target != "http://localhost:80" || !reflect.DeepEqual(f.Steps, []string{"GET /a?token=***&page=2"}) || f.Hash != f.Sum() || f.Plan != "" {
			t.Errorf("%+v: %+v", c.settings, f)
		}
	}
}

// TestParallelFingerprint: the requests of a parallel group are marked in
// the fingerprint with the group and its max, so a run that fetched the
// assets at once does not compare as alike with one that fetched them one
// after another.
func TestParallelFingerprint(t *testing.T) {
	fp := func(steps string) *result.Fingerprint {
		p, err := plan.Parse("a.yaml", []byte("target: http://127.0.0.1:3000\nsteps:\n"+steps+"load: { closed: { vus: 1, iterations: 1 } }\n"), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return planFingerprint(p, nil)
	}
	seq := fp("  - get: /\n  - get: /a.css\n  - get: /a.js\n")
	par := fp("  - get: /\n  - parallel: { name: assets, max: 2, steps: [ { get: /a.css }, { get: /a.js } ] }\n")
	if want := []string{"GET /", `GET /a.css (parallel "assets", max 2)`, `GET /a.js (parallel "assets", max 2)`}; !reflect.DeepEqual(par.Steps, want) {
		t.Errorf("steps %q, want %q", par.Steps, want)
	}
	if seq.Hash == par.Hash {
		t.Error("the same requests, in a group and not, have one fingerprint")
	}
}
