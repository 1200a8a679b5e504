package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// TestChecksByName runs a plan whose first step has two checks, one that
// always passes (status 200) and one that fails on every third response
// (contains Welcome), and a capture that finds nothing on every fourth;
// the second step's request cannot be built without the capture. The
// counts by name sum to each step's totals and are what the server did.
func TestChecksByName(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var home, goodbye, noToken, next int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/next" {
			next++
			w.Write([]byte("ok"))
			return
		}
		home++
		if home%4 == 0 {
			noToken++
		} else {
			w.Header().Set("X-Token", "tok")
		}
		if home%3 == 0 {
			goodbye++
			w.Write([]byte("Goodbye"))
			return
		}
		w.Write([]byte("Welcome back"))
	}))
	defer srv.Close()
	p, err := plan.Parse("test.yaml", []byte(`
target: `+srv.URL+`
steps:
  - get: /home
    name: home
    expect: { status: 200, contains: Welcome }
    capture:
      token: { header: X-Token }
  - get: "/next?t={{ token }}"
    name: next
    expect: { status: 200 }
load: { closed: { vus: 3, iterations: 20 } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Plan(ctx, p, Options{Dir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if home != 60 || goodbye != 20 || noToken != 15 || next != 45 {
		t.Fatalf("server saw %d homes (%d without Welcome, %d without a token), %d nexts: want 60 (20, 15), 45", home, goodbye, noToken, next)
	}
	want := map[string][]result.NamedCheck{
		"home": {
			{Name: "status is 200", Passed: int64(home)},
			{Name: "body contains Welcome", Passed: int64(home - goodbye), Failed: int64(goodbye)},
			{Name: "capture token", Passed: int64(home - noToken), Failed: int64(noToken)},
		},
		"next": {
			{Name: "status is 200", Passed: int64(next)},
			{Name: result.CheckRequestBuilt, Failed: int64(noToken)},
		},
	}
	for _, st := range r.Steps {
		if got := fmt.Sprint(st.ChecksByName); got != fmt.Sprint(want[st.Name]) {
			t.Errorf("step %s: checks by name %v, want %v", st.Name, got, want[st.Name])
		}
		var sum result.Checks
		for _, c := range st.ChecksByName {
			sum.Passed += c.Passed
			sum.Failed += c.Failed
		}
		if sum != st.Summary.Checks {
			t.Errorf("step %s: checks by name sum to %+v, the step's totals are %+v", st.Name, sum, st.Summary.Checks)
		}
	}
}
