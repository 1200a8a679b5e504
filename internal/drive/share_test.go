package drive

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/loadlab/loadlab/internal/plan"
)

// TestSweepKeepsOnePlanCopy: every run's result carries the plan's text
// (Result.Plan); a sweep holds one copy of it in memory, not one per run,
// whether the runs ran now or were read back when it resumed. A plan with
// a 200 KiB value and 30 runs held 30 copies (6 MB) before.
func TestSweepKeepsOnePlanCopy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	src := "target: " + srv.URL + "\nvars: { blob: \"" + strings.Repeat("b", 200<<10) + "\" }\n" + `
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
params: { n: [1, 2, 3] }
repeat: 2
`
	p, err := plan.Parse("plan.yaml", []byte(src), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	load := func(params map[string]any) (*plan.Plan, error) {
		return plan.Parse("plan.yaml", []byte(src), plan.Options{Params: params})
	}
	dir := t.TempDir()
	for _, pass := range []string{"ran", "resumed"} {
		out, err := Sweep(context.Background(), p, load, p.Fingerprint(), SweepOptions{Dir: dir, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Plan) < 200<<10 {
			t.Fatalf("the outcome's plan is %d bytes", len(out.Plan))
		}
		for i, res := range out.Results() {
			if res == nil {
				t.Fatalf("%s: run %d has no result", pass, i+1)
			}
			if res.Plan != out.Plan || unsafe.StringData(res.Plan) != unsafe.StringData(out.Plan) {
				t.Errorf("%s: run %d holds its own copy of the plan (%d bytes)", pass, i+1, len(res.Plan))
			}
		}
	}
}

// TestSweepChecksEveryPointFirst: a point whose plan is invalid stops the
// sweep before its first run, naming the point.
func TestSweepChecksEveryPointFirst(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	t.Cleanup(srv.Close)
	src := "target: " + srv.URL + `
steps: [ { get: "/{{ path }}" } ]
load: { closed: { vus: 1, iterations: 1 } }
params: { path: [a, b, "c d"] }
`
	p, err := plan.Parse("plan.yaml", []byte(src), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	load := func(params map[string]any) (*plan.Plan, error) {
		calls++
		if params["path"] == "b" {
			return nil, plan.Errors{{Pos: plan.Pos{File: "plan.yaml", Line: 3, Col: 16}, Msg: "broken at b"}}
		}
		return plan.Parse("plan.yaml", []byte(src), plan.Options{Params: params})
	}
	_, err = Sweep(context.Background(), p, load, p.Fingerprint(), SweepOptions{Dir: t.TempDir(), Workers: 1})
	var pe *PointError
	if !errors.As(err, &pe) || pe.Point != "path=b" || pe.Index != 2 || !strings.Contains(err.Error(), "plan.yaml:3:16: broken at b") {
		t.Fatalf("got %v, want the error of point path=b", err)
	}
	var pes plan.Errors
	if !errors.As(err, &pes) {
		t.Errorf("the plan's errors are not wrapped: %T", errors.Unwrap(err))
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent before the error", n)
	}
}
