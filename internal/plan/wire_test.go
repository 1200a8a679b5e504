package plan

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/httpx"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// noResolve resolves a target to itself, without the network.
func noResolve(_ context.Context, u *url.URL) (*httpx.Origin, error) {
	return &httpx.Origin{Scheme: u.Scheme, Host: u.Host}, nil
}

// wire is every request step's request for VU vu's first iteration, as it
// goes on the wire; each capture holds "<name>-captured".
func wire(t *testing.T, path string, po ProgramOptions, vu int) []byte {
	t.Helper()
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prog, r, err := p.program(context.Background(), po, noResolve)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, sc := range prog.Scenarios {
		s := r.NewState()
		if err := r.Begin(s, vu, 0, sc); err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Scenarios {
			for _, step := range st.Steps {
				for _, cp := range step.Captures {
					s.Vars().Set(r.Scope.Slot(cp.Var), cp.Var+"-captured")
				}
			}
		}
		for _, step := range sc.Steps {
			if step.Request == nil {
				continue
			}
			req, err := step.Request.Build(&engine.VU{ID: vu, State: s}, nil)
			if err != nil {
				t.Fatalf("%s: %v", step.Name, err)
			}
			fmt.Fprintf(&out, "### %s / %s\n%s\n", sc.Name, step.Name, req)
		}
	}
	return out.Bytes()
}

// TestWireGolden: each plan of testdata/wire, compiled, writes exactly the
// requests of its .golden file (go test -update rewrites them).
func TestWireGolden(t *testing.T) {
	plans, _ := filepath.Glob(filepath.Join("testdata", "wire", "*.yaml"))
	if len(plans) == 0 {
		t.Fatal("no plans in testdata/wire")
	}
	for _, path := range plans {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			got := wire(t, path, ProgramOptions{}, 0)
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the requests differ from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestSeedReproducesBodies: the plan's seed: makes randomInt and
// randomString send the same bodies in every run, VU by VU; another seed or
// another VU sends others.
func TestSeedReproducesBodies(t *testing.T) {
	path := filepath.Join("testdata", "wire", "seeded.yaml")
	a, b := wire(t, path, ProgramOptions{}, 0), wire(t, path, ProgramOptions{}, 0)
	if !bytes.Equal(a, b) {
		t.Errorf("two runs with seed 42 sent\n%s\nand\n%s", a, b)
	}
	if c := wire(t, path, ProgramOptions{Seed: 42}, 0); !bytes.Equal(a, c) {
		t.Errorf("seed 42 given to Program sent other bodies than the plan's seed 42")
	}
	if c := wire(t, path, ProgramOptions{Seed: 43}, 0); bytes.Equal(a, c) {
		t.Errorf("seeds 42 and 43 sent the same bodies:\n%s", a)
	}
	if c := wire(t, path, ProgramOptions{}, 1); bytes.Equal(a, c) {
		t.Errorf("VUs 0 and 1 sent the same bodies:\n%s", a)
	}
}

// TestStaticHeaderIsChecked: a header value with no per-VU part is checked
// once, not on every request; one that cannot be sent (an -e value with a
// line break, which the plan's own text does not show) is refused when the
// plan loads, at the header's place in the file.
func TestStaticHeaderIsChecked(t *testing.T) {
	src := `
target: http://127.0.0.1:1
steps: [ { get: /, headers: { X-Note: "{{ env.NOTE }}", Accept: text/plain } } ]
load: { closed: { vus: 1, iterations: 1 } }
`
	for _, tt := range []struct{ note, want string }{
		{"fine", "X-Note: fine\r\nAccept: text/plain\r\n"},
		{"a\r\nX-Injected: 1", "plan.yaml:3:39: GET /: header X-Note: the value has a line break"},
	} {
		p, err := Parse("plan.yaml", []byte(src), Options{Env: map[string]string{"NOTE": tt.note}})
		if err != nil {
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NOTE=%q: %v, want %q", tt.note, err, tt.want)
			}
			continue
		}
		prog, r, err := p.program(context.Background(), ProgramOptions{}, noResolve)
		if err != nil {
			t.Fatal(err)
		}
		s := r.NewState()
		if err := r.Begin(s, 0, 0, prog.Scenarios[0]); err != nil {
			t.Fatal(err)
		}
		req, err := prog.Scenarios[0].Steps[0].Request.Build(&engine.VU{State: s}, nil)
		got := string(req)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("NOTE=%q: %q, want %q", tt.note, got, tt.want)
		}
	}
}
