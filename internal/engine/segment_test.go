package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/schedule"
	execseg "github.com/loadlab/loadlab/internal/segment"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// segRun is what one run did: its iterations and responses, and the VU
// numbers that began iterations (each with how many).
type segRun struct {
	iterations, responses, dropped, unsent int64
	vus                                    map[int]int
	units                                  map[[2]int64]int // VU.Group and VU.Unit of each iteration
	peak                                   int
}

func runSegment(t *testing.T, p *Program, cfg Config, seg execseg.Segment) segRun {
	t.Helper()
	var mu sync.Mutex
	got := segRun{vus: map[int]int{}, units: map[[2]int64]int{}}
	prog := *p
	prog.Begin = func(v *VU) error {
		mu.Lock()
		got.vus[v.ID]++
		g, _ := v.Group()
		got.units[[2]int64{int64(g), v.Unit()}]++
		mu.Unlock()
		return nil
	}
	cfg.Program = &prog
	cfg.Segment = seg
	cfg.Workers = 2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]int, len(p.Steps))
	for i := range steps {
		steps[i] = i
	}
	s := metrics.Summarize(out.Totals, steps, out.Elapsed)
	got.iterations, got.responses = out.Totals.Counters.Iterations, s.Responses
	got.dropped, got.unsent = out.Totals.Counters.Dropped, out.Totals.Counters.Unsent
	got.peak = out.VUs
	return got
}

// TestSegmentsAddUpToTheWhole runs each workload kind whole and as N
// segments against one loopback server: iterations, responses and arrivals
// add up exactly, the segments' VU numbers are disjoint and together the
// whole run's, and the segments' most VUs sum to the whole's.
func TestSegmentsAddUpToTheWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every workload kind whole and in segments: about 10 s")
	}
	url := targettest.Start(t, target.Options{Delay: 2 * time.Millisecond})
	one := quick(t, url)
	two := twoScenarios(t, url)
	open, err := schedule.Constant(schedule.Rate{Count: 100, Per: time.Second}, 700*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ramp, err := schedule.NewRamp(0, []schedule.VUStage{{Target: 7, Over: 400 * time.Millisecond}, {Target: 7, Over: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		p    *Program
		cfg  Config
		n    int
		// fixed: the totals are fixed by the workload (not by time).
		fixed bool
	}{
		{"closed per-VU iterations", one, Config{Workload: Workload{Kind: Closed, VUs: 7, IterationsPerVU: 5}}, 3, true},
		{"closed shared iterations", one, Config{Workload: Workload{Kind: Closed, VUs: 6, SharedIterations: 101}}, 4, true},
		{"closed, more segments than VUs", one, Config{Workload: Workload{Kind: Closed, VUs: 2, IterationsPerVU: 3}}, 5, true},
		{"open", one, Config{Workload: Workload{Kind: Open, Arrivals: open, MaxVUs: 30}}, 3, true},
		{"ramping VUs", one, Config{Workload: Workload{Kind: Ramp, Ramp: ramp}}, 3, false},
		{"per-scenario loads", two, Config{Scenarios: []Workload{
			{Kind: Open, Arrivals: open, MaxVUs: 24},
			{Kind: Closed, VUs: 5, IterationsPerVU: 4},
		}}, 4, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			whole := runSegment(t, c.p, c.cfg, execseg.Segment{})
			var sum segRun
			sum.vus, sum.units = map[int]int{}, map[[2]int64]int{}
			for k := 1; k <= c.n; k++ {
				part := runSegment(t, c.p, c.cfg, execseg.Segment{K: k, N: c.n})
				sum.iterations += part.iterations
				sum.responses += part.responses
				sum.dropped += part.dropped
				sum.unsent += part.unsent
				sum.peak += part.peak
				for id, n := range part.vus {
					if _, ok := sum.vus[id]; ok {
						t.Errorf("segment %d/%d: VU %d also ran in another segment", k, c.n, id)
					}
					if c.n > 0 && int64(id)%int64(c.n) != int64(k-1) && c.cfg.Scenarios == nil {
						t.Errorf("segment %d/%d ran VU %d", k, c.n, id)
					}
					sum.vus[id] = n
				}
				for u, n := range part.units {
					if n != 1 || sum.units[u] != 0 {
						t.Errorf("segment %d/%d: unit of work %d taken again", k, c.n, u)
					}
					sum.units[u] += n
				}
			}
			if whole.dropped != 0 || sum.dropped != 0 {
				t.Fatalf("dropped %d whole, %d in segments: the test wants none", whole.dropped, sum.dropped)
			}
			if sum.peak != whole.peak {
				t.Errorf("the segments' VUs sum to %d, the whole has %d", sum.peak, whole.peak)
			}
			if c.fixed {
				if sum.iterations != whole.iterations || sum.responses != whole.responses {
					t.Errorf("segments: %d iterations, %d responses; whole: %d, %d", sum.iterations, sum.responses, whole.iterations, whole.responses)
				}
				// The units of work (what data rows are keyed by) are
				// the whole run's, each once.
				if len(sum.units) != len(whole.units) {
					t.Errorf("segments' units of work %d, whole %d", len(sum.units), len(whole.units))
				}
				for u := range whole.units {
					if sum.units[u] != 1 && c.cfg.Workload.SharedIterations == 0 {
						t.Errorf("unit %d: %d times in the segments, once in the whole", u, sum.units[u])
					}
				}
				// Per-VU iterations: each VU number runs as many in its
				// segment as in the whole run.
				if c.cfg.Workload.IterationsPerVU > 0 && !mapsEqual(sum.vus, whole.vus) {
					t.Errorf("VUs and their iterations: segments %v, whole %v", sum.vus, whole.vus)
				}
			}
			ids := func(m map[int]int) []int {
				var out []int
				for id := range m {
					out = append(out, id)
				}
				slices.Sort(out)
				return out
			}
			if c.cfg.Workload.Kind == Ramp {
				// Timing decides how many iterations; every VU the ramp
				// reaches runs in exactly one segment.
				if !slices.Equal(ids(sum.vus), ids(whole.vus)) {
					t.Errorf("VU numbers: segments %v, whole %v", ids(sum.vus), ids(whole.vus))
				}
			}
			t.Logf("%s: whole %d iterations, segments %d", c.name, whole.iterations, sum.iterations)
		})
	}
}

func mapsEqual(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSegmentFits: shared iterations or arrivals dealt to more segments
// than the load has VUs would leave a segment work and no VU to do it.
func TestSegmentFits(t *testing.T) {
	open, err := schedule.Constant(schedule.Rate{Count: 10, Per: time.Second}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seg := execseg.Segment{K: 1, N: 4}
	for _, c := range []struct {
		w   Workload
		bad bool
	}{
		{Workload{Kind: Closed, VUs: 2, SharedIterations: 100}, true},
		{Workload{Kind: Closed, VUs: 4, SharedIterations: 100}, false},
		{Workload{Kind: Closed, VUs: 2, SharedIterations: 2}, false},
		{Workload{Kind: Closed, VUs: 2, IterationsPerVU: 100}, false},
		{Workload{Kind: Open, Arrivals: open, MaxVUs: 3}, true},
		{Workload{Kind: Open, Arrivals: open, MaxVUs: 4}, false},
	} {
		err := c.w.SegmentFits(seg)
		if (err != nil) != c.bad {
			t.Errorf("%+v: %v", c.w, err)
		}
	}
}
