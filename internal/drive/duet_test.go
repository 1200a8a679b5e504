package drive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
)

func duetPlans(t *testing.T) (*plan.Plan, *plan.Plan) {
	t.Helper()
	parse := func(name, port string) *plan.Plan {
		p, err := plan.Parse(name, []byte("target: http://127.0.0.1:"+port+"\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return parse("a.yaml", "1"), parse("b.yaml", "2")
}

// TestDuetMeets: both sides of every run wait for each other before their
// load, and are told one instant to start at; they share the seed; a run
// in which one side failed is kept on disk but left out of the verdict's
// pairs; a side that fails before the meeting frees the other; and a run
// neither side measured ends the duet with the error.
func TestDuetMeets(t *testing.T) {
	t.Parallel()
	a, b := duetPlans(t)
	var mu sync.Mutex
	starts := map[int][]time.Time{}
	seeds := map[uint64]bool{}
	run := 0
	fake := func(ctx context.Context, p *plan.Plan, o runner.Options) (*result.Result, error) {
		side := filepath.Base(o.Dir)
		n := filepath.Base(filepath.Dir(o.Dir))
		mu.Lock()
		seeds[o.Seed] = true
		mu.Unlock()
		if n == "run-2" && side == "B" {
			// B's server did not start: A's load must not begin alone.
			return nil, errors.New("B's server exited")
		}
		if side == "A" {
			time.Sleep(20 * time.Millisecond) // A arrives last
		}
		at, err := o.BeforeLoad(ctx)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		starts[len(n)*100+int(n[len(n)-1])] = append(starts[len(n)*100+int(n[len(n)-1])], at)
		run++
		mu.Unlock()
		return &result.Result{Summary: result.Summary{ThroughputRPS: 100}}, nil
	}
	got, err := Duet(context.Background(), a, b, DuetOptions{Runs: 3, Dir: t.TempDir(), Seed: 7, RunPoint: fake})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.A) != 3 || len(got.B) != 3 || got.A[1] != nil || got.B[1] != nil || got.A[0] == nil || got.B[2] == nil {
		t.Fatalf("runs: A %v, B %v; want run 2 left out on both sides", got.A, got.B)
	}
	if len(seeds) != 1 || !seeds[7] {
		t.Errorf("seeds %v, want 7 alone", seeds)
	}
	if run != 4 {
		t.Errorf("%d loads began, want 4 (runs 1 and 3, both sides)", run)
	}
	for k, at := range starts {
		if len(at) != 2 || !at[0].Equal(at[1]) {
			t.Errorf("run %d: start instants %v, want one for both", k, at)
		}
	}

	// Neither side measured in the first run: the duet ends at once with
	// why.
	calls := 0
	dead := func(ctx context.Context, p *plan.Plan, o runner.Options) (*result.Result, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil, errors.New("address in use")
	}
	got, err = Duet(context.Background(), a, b, DuetOptions{Runs: 5, Dir: t.TempDir(), RunPoint: dead})
	if err == nil || calls != 2 || len(got.A) != 0 || got.Seed == 0 {
		t.Errorf("a duet whose servers cannot start: %v after %d runs of a side, %+v", err, calls, got)
	}

	// A server that stops starting after run 1: two runs in a row measure
	// neither side, and the duet ends after them, run 1 kept.
	calls = 0
	later := func(ctx context.Context, p *plan.Plan, o runner.Options) (*result.Result, error) {
		if filepath.Base(filepath.Dir(o.Dir)) != "run-1" {
			return dead(ctx, p, o)
		}
		if _, err := o.BeforeLoad(ctx); err != nil {
			return nil, err
		}
		return &result.Result{}, nil
	}
	got, err = Duet(context.Background(), a, b, DuetOptions{Runs: 10, Dir: t.TempDir(), RunPoint: later})
	if err == nil || calls != 4 || len(got.A) != 2 || got.A[0] == nil || got.A[1] != nil {
		t.Errorf("a server that stops starting: %v after %d failed sides, A %v", err, calls, got.A)
	}
}

// TestDuetInterrupted: ctx ending in a run stops the duet; the runs before
// it stand, and the run directories are on disk.
func TestDuetInterrupted(t *testing.T) {
	t.Parallel()
	a, b := duetPlans(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	fake := func(ctx context.Context, p *plan.Plan, o runner.Options) (*result.Result, error) {
		if _, err := o.BeforeLoad(ctx); err != nil {
			return nil, err
		}
		r := &result.Result{}
		if filepath.Base(filepath.Dir(o.Dir)) == "run-2" {
			cancel()
			r.Summary.Interrupted = true
		}
		return r, nil
	}
	got, err := Duet(ctx, a, b, DuetOptions{Runs: 4, Dir: dir, RunPoint: fake})
	if err != nil || !got.Interrupted || len(got.A) != 1 || len(got.B) != 1 {
		t.Fatalf("%v: %+v, want run 1 whole and interrupted", err, got)
	}
	for _, p := range []string{"run-1/A/result.json", "run-2/B/result.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
