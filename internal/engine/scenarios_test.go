package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/schedule"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// twoScenarios is a program of two scenarios of one request each, signup
// and browse, to the same target.
func twoScenarios(t *testing.T, url string) *Program {
	q := quick(t, url)
	req := q.Scenarios[0].Steps[0].Request
	signup := &Step{ID: 0, Name: "signup", Request: req}
	browse := &Step{ID: 1, Name: "browse", Request: req}
	return &Program{
		Scenarios: []*Scenario{{Name: "signup", Weight: 1, Steps: []*Step{signup}}, {Name: "browse", Weight: 1, Steps: []*Step{browse}}},
		Steps:     []StepInfo{{Scenario: "signup", Name: "signup"}, {Scenario: "browse", Name: "browse"}},
	}
}

// TestScenariosRunTogether: an open scenario at 40/s and a closed one of 3
// VUs run at once against a real server that answers in 20 ms: each does
// what its own workload says, whatever the other does.
func TestScenariosRunTogether(t *testing.T) {
	url := targettest.Start(t, target.Options{Delay: 20 * time.Millisecond})
	arr, err := schedule.Constant(schedule.Rate{Count: 40, Per: time.Second}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p := twoScenarios(t, url)
	var mu sync.Mutex
	ids := map[int]string{}
	p.Begin = func(v *VU) error {
		mu.Lock()
		defer mu.Unlock()
		if sc, ok := ids[v.ID]; ok && sc != v.Scenario().Name {
			t.Errorf("VU %d runs %s and %s", v.ID, sc, v.Scenario().Name)
		}
		ids[v.ID] = v.Scenario().Name
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	out, err := Run(ctx, Config{
		Program: p,
		Workers: 2,
		Scenarios: []Workload{
			{Kind: Open, Arrivals: arr, MaxVUs: 20},
			{Kind: Closed, VUs: 3, Duration: 2 * time.Second},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the run took %v, want about 2 s", el)
	}
	signup := metrics.Summarize(out.Totals, []int{0}, out.Elapsed)
	browse := metrics.Summarize(out.Totals, []int{1}, out.Elapsed)
	if len(out.Scenarios) != 2 {
		t.Fatalf("scenario outcomes %+v", out.Scenarios)
	}
	so, bo := out.Scenarios[0], out.Scenarios[1]
	// Every one of the 80 arrivals, none dropped: 40/s of 20 ms needs one
	// VU at a time, 20 are there.
	if signup.Responses+so.Dropped+so.Unsent != 80 || signup.Responses < 78 || so.Dropped != 0 {
		t.Errorf("signup: %d responses, %d dropped, %d unsent; want the 80 arrivals answered", signup.Responses, so.Dropped, so.Unsent)
	}
	if so.VUs != 20 || so.PeakVUs > 20 || so.PeakVUs < 1 {
		t.Errorf("signup VUs %d, peak %d", so.VUs, so.PeakVUs)
	}
	// 3 VUs, each a request every 20 ms and a little: at most 300 in 2 s.
	// By Little's law the VUs busy on average are the throughput times the
	// mean latency: 3, less the engine's own time between requests (a
	// busy machine makes both slower, not the product smaller).
	busy := float64(browse.Responses) / bo.Window.Seconds() * browse.Latency.Mean / 1000
	if browse.Responses > 306 || busy < 2.4 || busy > 3.1 {
		t.Errorf("browse: %d responses in %v, mean latency %.1f ms: %.2f VUs busy, want 3", browse.Responses, bo.Window, browse.Latency.Mean, busy)
	}
	if rate := float64(signup.Responses) / so.Window.Seconds(); rate < 38 || rate > 42 {
		t.Errorf("signup: %.1f/s, want 40/s", rate)
	}
	if bo.VUs != 3 || bo.PeakVUs != 3 || bo.Dropped != 0 {
		t.Errorf("browse VUs %d, peak %d, dropped %d; want 3 and 3", bo.VUs, bo.PeakVUs, bo.Dropped)
	}
	for i, o := range out.Scenarios {
		if o.Window < 1900*time.Millisecond || o.Window > 2500*time.Millisecond {
			t.Errorf("scenario %d: window %v, want 2 s", i, o.Window)
		}
	}
	if out.VUs != 23 {
		t.Errorf("VUs %d, want 20 + 3", out.VUs)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, sc := range ids {
		if (sc == "browse") != (id >= 20) {
			t.Errorf("VU %d runs %s: signup's IDs are 0 to 19, browse's 20 to 22", id, sc)
		}
	}
}

// TestScenarioEndsFirst: a scenario whose load ends first stops starting
// journeys; the other goes on to its own end.
func TestScenarioEndsFirst(t *testing.T) {
	url := targettest.Start(t, target.Options{Delay: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := Run(ctx, Config{
		Program: twoScenarios(t, url),
		Scenarios: []Workload{
			{Kind: Closed, VUs: 1, Duration: 500 * time.Millisecond},
			{Kind: Closed, VUs: 1, Duration: 1500 * time.Millisecond},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	short := metrics.Summarize(out.Totals, []int{0}, out.Elapsed).Responses
	long := metrics.Summarize(out.Totals, []int{1}, out.Elapsed).Responses
	if short == 0 || long < 2*short || long > 4*short {
		t.Errorf("responses %d in 0.5 s and %d in 1.5 s, want about three times as many", short, long)
	}
	if w := out.Scenarios[0].Window; w < 450*time.Millisecond || w > 700*time.Millisecond {
		t.Errorf("the short scenario's window %v, want 0.5 s", w)
	}
	if w := out.Scenarios[1].Window; w < 1400*time.Millisecond || w > 1800*time.Millisecond {
		t.Errorf("the long scenario's window %v, want 1.5 s", w)
	}
	if out.Elapsed < 1400*time.Millisecond || out.Elapsed > 3*time.Second {
		t.Errorf("elapsed %v, want about 1.5 s", out.Elapsed)
	}
}
