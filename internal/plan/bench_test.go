package plan

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/journey"
)

// benchPlan is bench/journey.sh's journey.
const benchPlan = `target: http://127.0.0.1:18081
steps:
  - get: /form.html
    capture: { csrf: { css: "input[name=authenticity_token]", attr: value } }
  - post: /login
    form: { email: "user-{{ vu }}@example.com", password: secret, authenticity_token: "{{ csrf }}" }
    capture: { token: { json: "$.token" } }
  - get: /api.json
    headers: { Authorization: "Bearer {{ token }}" }
    expect: { status: 200, json: { "$.id": 3 } }
load:
  closed: { vus: 50, duration: 8s }
`

// BenchmarkJourneyBuild writes the three requests of bench/journey.sh's
// journey, as a VU does in each iteration: the plan's request path.
func BenchmarkJourneyBuild(b *testing.B) {
	p, err := Parse("bench.yaml", []byte(benchPlan), Options{})
	if err != nil {
		b.Fatal(err)
	}
	prog, err := p.Program(context.Background(), ProgramOptions{}, func(_ context.Context, u *url.URL) (*httpx.Origin, error) {
		return &httpx.Origin{Scheme: u.Scheme, Host: u.Host}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s := prog.NewState(nil)
	st := s.(*journey.State).Vars()
	// Slots in compile order: vu, iteration, scenario, then the captures.
	st.Set(0, 7)
	st.Set(1, 0)
	st.Set(2, "default")
	st.Set(3, "Xk2f9QpLz8vR3mN7tY1wB5cH0jD4gS6e")
	st.Set(4, "tok-123")
	v := &engine.VU{ID: 7, State: s}
	var steps []*engine.RequestStep
	for _, step := range prog.Scenarios[0].Steps {
		steps = append(steps, step.Request)
	}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for _, rs := range steps {
			if buf, err = rs.Build(v, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkJourneyBegin starts an iteration of bench/journey.sh's journey,
// as a VU does before its requests: captures and cookies cleared, vu and
// iteration set, the generators restarted from the seed.
func BenchmarkJourneyBegin(b *testing.B) {
	p, err := Parse("bench.yaml", []byte(benchPlan), Options{})
	if err != nil {
		b.Fatal(err)
	}
	prog, r, err := p.program(context.Background(), ProgramOptions{Seed: 42}, func(_ context.Context, u *url.URL) (*httpx.Origin, error) {
		return &httpx.Origin{Scheme: u.Scheme, Host: u.Host}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s, es := r.NewState(), prog.Scenarios[0]
	var iteration int64
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Begin(s, 7, iteration, es); err != nil {
			b.Fatal(err)
		}
		iteration++
	}
}

// BenchmarkDerivedSecrets evaluates the derived secrets of a plan whose
// template makes a value from each of 100,000 secret passwords: what
// Plan.Secrets pays once (derived) for them.
func BenchmarkDerivedSecrets(b *testing.B) {
	dir := b.TempDir()
	var csv strings.Builder
	csv.WriteString("name,password\n")
	for i := range 100_000 {
		fmt.Fprintf(&csv, "user%d,pw-%06d\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte(csv.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "plan.yaml")
	src := `target: http://127.0.0.1:1
data: { users: { csv: users.csv, secret: password } }
steps: [ { post: /login, body: "{{ users.name + ':' + upper(users.password) }}" } ]
load: { closed: { vus: 1, iterations: 1 } }
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := Load(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if n := len(p.evalDerivedSecrets()); n != 100_000 {
			b.Fatalf("%d secrets", n)
		}
	}
}
