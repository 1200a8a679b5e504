package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/capacity"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

func openPlan(url, rate string) string {
	return fmt.Sprintf(`
name: known
target: %s
scenarios:
  hit:
    steps:
      - get: /
        name: hit
load: { open: { rate: %s, max_vus: 400, duration: 30s } }
`, url, rate)
}

// TestCapacityBadInput: what the search cannot run is refused with exit 2
// before any request is sent.
func TestCapacityBadInput(t *testing.T) {
	t.Parallel()
	url, served := counting(t)
	open := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "50/s")})
	closed := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("name: c\ntarget: %s\nsteps:\n  - get: /\nload: { closed: { vus: 2, duration: 5s } }\n", url)})
	sweep := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "50/s") + "params:\n  x: [1, 2]\n"})
	withSection := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "50/s") + "capacity:\n  slo: error_rate < 1%\n"})
	withShort := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "50/s") + "capacity:\n  slo: error_rate < 1%\n  step_max: 3s\n"})
	sweepShort := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "50/s") + "params:\n  x: [1, 2]\ncapacity:\n  slo: error_rate < 1%\n  step_max: 3s\n"})
	sweepClosed := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("name: c\ntarget: %s\nsteps:\n  - get: /\nload: { closed: { vus: 2, duration: 5s } }\nparams:\n  x: [1, 2]\ncapacity:\n  slo: error_rate < 1%%\n", url)})
	perScenario := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("name: ps\ntarget: %s\nscenarios:\n  a:\n    steps: [{ get: / }]\n    load: { open: { rate: 10/s, max_vus: 10, duration: 5s } }\n  b:\n    steps: [{ get: / }]\n    load: { closed: { vus: 1, duration: 5s } }\n", url)})
	slo := "p95(latency) < 300ms, error_rate < 1%"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"SLO that does not parse", []string{"capacity", open, "--slo", "p95(latency) < 300ms, eror_rate < 1%"}, "column 23"},
		{"SLO with an empty clause", []string{"capacity", open, "--slo", "p95(latency) < 300ms,"}, "column 22"},
		{"precision 0", []string{"capacity", open, "--slo", slo, "--precision", "0%"}, "--precision must be over 0%"},
		{"negative precision", []string{"capacity", open, "--slo", slo, "--precision", "-2%"}, "--precision must be over 0%"},
		{"precision without %", []string{"capacity", open, "--slo", slo, "--precision", "2"}, "want a number followed by %"},
		{"closed load", []string{"capacity", closed, "--slo", slo}, "--by rate needs an open load"},
		{"by vus of an open load", []string{"capacity", open, "--slo", slo, "--by", "vus"}, "--by vus needs a closed load"},
		{"by what", []string{"capacity", closed, "--slo", slo, "--by", "users"}, `--by "users": want rate or vus`},
		{"experiment", []string{"capacity", sweep, "--slo", slo}, "run it with loadlab run"},
		{"a capacity: section in a run", []string{"run", withSection}, "plan.yaml:11:6: a capacity: section is for loadlab capacity"},
		{"an experiment's step_max too short", []string{"run", sweepShort, "--out", t.TempDir()}, "plan.yaml:14:13: capacity step_max 3s is shorter than a step's least, 7s"},
		{"an experiment's capacity by rate of a closed load", []string{"run", sweepClosed, "--out", t.TempDir()}, "capacity by rate needs an open load"},
		{"the section's step_max too short", []string{"capacity", withShort}, "plan.yaml:12:13: capacity step_max 3s is shorter"},
		{"no SLO", []string{"capacity", open}, "no SLO"},
		{"short steps", []string{"capacity", open, "--slo", slo, "--step-max", "3s"}, "shorter than a step's least, 7s"},
		{"loads per scenario", []string{"capacity", perScenario, "--slo", slo}, "plan.yaml:6:11: scenario a has a load of its own"},
		{"no plan", []string{"capacity", "--slo", slo}, "give a plan file (loadlab capacity plan.yaml) or --url URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := cli(context.Background(), t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 with %q", code, stderr, tc.want)
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the server got %d requests from bad input", n)
	}
}

// TestCapacityFirstRateBreaks: exit 3 when even the first rate breaks the
// SLO; capacity.json keeps the step and says so.
func TestCapacityFirstRateBreaks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: a step of 7 s")
	}
	url := targettest.Start(t, target.Options{Delay: 20 * time.Millisecond})
	path := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "20/s")})
	out := filepath.Join(t.TempDir(), "cap")
	stdout, stderr, code := cli(context.Background(), t, "capacity", path, "--slo", "p95(latency) < 5ms", "--out", out, "--json")
	if code != 3 {
		t.Fatalf("exit %d, want 3; stderr %s", code, stderr)
	}
	var doc capacity.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if doc.Schema != capacity.Schema || !doc.Done || len(doc.Steps) != 1 || doc.Capacity == nil || doc.Capacity.RatePerS != 0 ||
		doc.Limit == nil || !strings.HasPrefix(doc.Limit.Clause, "p95(latency) < 5ms") || doc.Limit.Index != 1 {
		t.Errorf("document %+v", doc)
	}
	if _, err := os.Stat(filepath.Join(out, "steps", "001", "result.json")); err != nil {
		t.Error(err)
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "**Capacity: none found.**") {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	if !strings.Contains(stderr, "at most 25 steps of 7 to 30 s") {
		t.Errorf("the cost is not stated up front: %s", stderr)
	}
}

// TestCapacityKnownServers: `loadlab target --workers N --delay D` serves
// N/D requests a second by construction; under an SLO loose enough that
// queueing decides, the search lands within 5% of it. The three searches
// run side by side, each against its own server, to keep the test under
// about two minutes; measured on the project's shared 2-core machine.
func TestCapacityKnownServers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: three capacity searches against real servers")
	}
	cases := []struct {
		workers int
		delay   time.Duration
	}{{20, 100 * time.Millisecond}, {10, 100 * time.Millisecond}, {30, 200 * time.Millisecond}}
	var wg sync.WaitGroup
	for _, tc := range cases {
		want := float64(tc.workers) / tc.delay.Seconds()
		url := targettest.Start(t, target.Options{Workers: tc.workers, Delay: tc.delay})
		path := writePlan(t, map[string]string{"plan.yaml": openPlan(url, fmt.Sprintf("%g/s", 0.3*want))})
		out := filepath.Join(t.TempDir(), "cap")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			began := time.Now()
			stdout, stderr, code := cli(ctx, t, "capacity", path, "--slo", "p95(latency) < 10s, error_rate < 1%", "--precision", "3%", "--confirm", "1", "--step-max", "15s", "--out", out, "--json", "--event-loops", "1")
			if code != 0 {
				t.Errorf("N=%d D=%v: exit %d\n%s", tc.workers, tc.delay, code, stderr)
				return
			}
			var doc capacity.Document
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Errorf("N=%d D=%v: %v", tc.workers, tc.delay, err)
				return
			}
			got := doc.Capacity.RatePerS
			var steps []string
			for _, s := range doc.Steps {
				steps = append(steps, capacity.StepLine(s))
			}
			t.Logf("N=%d D=%v: capacity %.4g/s, want %.4g/s (%+.1f%%), %d steps in %v\n%s", tc.workers, tc.delay, got, want, 100*(got-want)/want, len(doc.Steps), time.Since(began).Round(time.Second), strings.Join(steps, "\n"))
			if math.Abs(got-want)/want > 0.05 || doc.Capacity.AtLeast {
				t.Errorf("N=%d D=%v: capacity %.4g/s (at least: %v), want within 5%% of %.4g/s", tc.workers, tc.delay, got, doc.Capacity.AtLeast, want)
			}
		}()
	}
	wg.Wait()
}

// TestCapacityResumes: Ctrl-C keeps every finished step; the same command
// replays them and goes on where the search stopped.
func TestCapacityResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: a capacity search of four steps, interrupted")
	}
	url := targettest.Start(t, target.Options{Workers: 10, Delay: 100 * time.Millisecond})
	path := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "60/s")})
	out := filepath.Join(t.TempDir(), "cap")
	args := []string{"capacity", path, "--slo", "p95(latency) < 10s", "--precision", "20%", "--confirm", "0", "--out", out, "--json", "--event-loops", "1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt in the third step, once two are kept.
		for ctx.Err() == nil {
			var doc capacity.Document
			if data, err := os.ReadFile(filepath.Join(out, capacityFile)); err == nil && json.Unmarshal(data, &doc) == nil && len(doc.Steps) == 2 {
				time.Sleep(2 * time.Second)
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_, stderr, code := cli(ctx, t, args...)
	if code != 1 || !strings.Contains(stderr, "interrupted in step 3; 2 finished steps are kept") {
		t.Fatalf("interrupted: exit %d\n%s", code, stderr)
	}
	first, err := os.ReadFile(filepath.Join(out, "steps", "001", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := cli(context.Background(), t, args...)
	if code != 0 || !strings.Contains(stderr, "resuming: 2 steps kept") {
		t.Fatalf("resumed: exit %d\n%s", code, stderr)
	}
	var doc capacity.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var rates []string
	for _, s := range doc.Steps {
		rates = append(rates, fmt.Sprintf("%s %g %v", s.Phase, s.Rate, s.Holds))
	}
	// 60 and 120 kept; then 90 and 105 (within 20% of 90: done).
	if got := strings.Join(rates, ", "); got != "grow 60 true, grow 120 false, bisect 90 true, bisect 105 false" || doc.Capacity.RatePerS != 90 {
		t.Errorf("steps %s; capacity %+v", got, doc.Capacity)
	}
	again, _ := os.ReadFile(filepath.Join(out, "steps", "001", "result.json"))
	if string(again) != string(first) {
		t.Error("the resumed search ran its first step again")
	}
	// Another SLO is another search.
	if _, stderr, code := cli(context.Background(), t, append(args[:len(args):len(args)], "--slo", "error_rate < 1%")...); code != 2 || !strings.Contains(stderr, "another plan, SLO or settings") {
		t.Errorf("another SLO: exit %d %s", code, stderr)
	}
}

// TestCapacityServerSection: with a server: section, every step starts the
// server afresh and samples it; a server that crashes stops the search,
// which says so (exit 1).
func TestCapacityServerSection(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: a capacity search of three steps with a server to start")
	}
	srv, url, _ := targetServer(t, target.Options{Workers: 10, Delay: 100 * time.Millisecond}, "")
	path := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "60/s") + srv})
	out := filepath.Join(t.TempDir(), "cap")
	stdout, stderr, code := cli(context.Background(), t, "capacity", path, "--slo", "p95(latency) < 10s", "--precision", "50%", "--confirm", "0", "--out", out, "--json", "--event-loops", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc capacity.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Steps) != 3 || doc.Capacity.RatePerS != 90 || doc.Limit == nil || doc.Limit.ServerCPU <= 0 {
		t.Errorf("steps %+v, capacity %+v, limit %+v", doc.Steps, doc.Capacity, doc.Limit)
	}
	for _, s := range doc.Steps {
		if s.ServerCPUPct <= 0 {
			t.Errorf("step %d: no server figures", s.Index)
		}
	}
	// The search's reports, and loadlab report of its directory.
	for _, name := range []string{"report.html", "report.md", "report-latency.png", "report-throughput.png", "report-server-cpu.png", "report-server-memory.png"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	page, stderr, code := cli(context.Background(), t, "report", out, "--format", "html")
	if code != 0 || !strings.Contains(page, "Capacity: 90/s") || strings.Count(page, "<svg") != 4 {
		t.Errorf("loadlab report --format html: exit %d, %d charts\n%s", code, strings.Count(page, "<svg"), stderr)
	}
	if text, _, code := cli(context.Background(), t, "report", out); code != 0 || !strings.Contains(text, "capacity: 90/s") {
		t.Errorf("loadlab report: exit %d\n%s", code, text)
	}

	crash, url, _ := targetServer(t, target.Options{Delay: time.Millisecond}, "%s & sleep 3; exit 3")
	path = writePlan(t, map[string]string{"plan.yaml": openPlan(url, "20/s") + crash})
	_, stderr, code = cli(context.Background(), t, "capacity", path, "--slo", "p95(latency) < 10s", "--out", filepath.Join(t.TempDir(), "cap"))
	if code != 1 || !strings.Contains(stderr, "the server under test crashed at 20/s") {
		t.Errorf("a crashing server: exit %d\n%s", code, stderr)
	}
}

// TestCapacityByVUs: --by vus searches a closed load's VU count. A server
// of 5 workers taking 200 ms each serves 5 requests at a time; with V VUs
// above 5, a request's mean latency is V × 200 ms / 5 (Little's law), 240
// ms at 6, so avg(latency) < 220ms holds up to 5 VUs exactly. (A p95 of 10
// workers against 11 VUs relied on the workers finishing in step, so that
// the 11th VU waited a whole round; on a busy machine they drift apart,
// and p95 read 134 ms at 11 VUs.)
func TestCapacityByVUs(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a capacity search by VUs of six steps")
	}
	url := targettest.Start(t, target.Options{Workers: 5, Delay: 200 * time.Millisecond})
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("name: closed\ntarget: %s\nsteps:\n  - get: /\n    name: hit\nload: { closed: { vus: 4, iterations: 3 } }\n", url)})
	out := filepath.Join(t.TempDir(), "cap")
	stdout, stderr, code := cli(context.Background(), t, "capacity", path, "--by", "vus", "--slo", "avg(latency) < 220ms", "--confirm", "0", "--out", out, "--json", "--event-loops", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc capacity.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range doc.Steps {
		steps = append(steps, fmt.Sprintf("%s %d %v", s.Phase, s.VUs, s.Holds))
	}
	t.Logf("capacity %+v, %s", doc.Capacity, strings.Join(steps, ", "))
	if got, want := strings.Join(steps, ", "), "grow 4 true, grow 8 false, bisect 6 false, bisect 5 true"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if c := doc.Capacity; c == nil || c.VUs != 5 || c.RatePerS < 22 || c.RatePerS > 25.5 || c.CI == nil || c.CI.Hi != 6 || doc.Limit == nil || doc.Limit.VUs != 6 {
		t.Errorf("capacity %+v, limit %+v", doc.Capacity, doc.Limit)
	}
	if doc.Search.By != "vus" || doc.Search.StartVUs != 4 || !strings.Contains(stderr, "from 4 VUs, ×2") {
		t.Errorf("search %+v\n%s", doc.Search, stderr)
	}
}

// TestCapacityExperiment: a plan with params and a capacity: section makes
// a capacity search at every point, and the experiment's verdict compares
// the answers: a server of N workers taking 100 ms each holds N/0.1 s, so
// 10 workers hold twice what 5 do.
func TestCapacityExperiment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: two capacity searches of three and four steps")
	}
	srv, url, _ := targetServer(t, target.Options{Workers: 7, Delay: 100 * time.Millisecond}, "")
	if !strings.Contains(srv, `\"Workers\":7`) {
		t.Fatalf("the server section does not carry the workers: %s", srv)
	}
	srv = strings.Replace(srv, `\"Workers\":7`, `\"Workers\":{{ workers }}`, 1)
	path := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "30/s") + srv + `
params:
  workers: [5, 10]
repeat: 1
capacity:
  slo: ["p95(latency) < 10s", "error_rate < 1%"]
  precision: 60%
  confirm: 0
  step_max: 8s
`})
	out := filepath.Join(t.TempDir(), "sweep")
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out, "--event-loops", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Runs []struct {
			Point, Dir string
		}
		Verdict struct {
			Figures []struct {
				ID   string
				Unit string
				Rows []struct {
					Point  string
					Median float64
				}
			}
		}
	}
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range o.Verdict.Figures {
		if f.ID == "capacity" {
			for _, r := range f.Rows {
				got[r.Point] = r.Median
			}
			if f.Unit != "/s" {
				t.Errorf("unit %q", f.Unit)
			}
		}
	}
	t.Logf("capacity by point: %v\n%s", got, stdout)
	// 60% precision from 30/s: 45/s for 50/s, 90/s for 100/s.
	if got["workers=5"] != 45 || got["workers=10"] != 90 {
		t.Errorf("capacity by point %v, want workers=5: 45, workers=10: 90\n%s", got, stderr)
	}
	for _, r := range o.Runs {
		for _, name := range []string{"capacity.json", "report.html", "result.json", "steps/001/result.json"} {
			if _, err := os.Stat(filepath.Join(out, r.Dir, name)); err != nil {
				t.Errorf("run %s: %v", r.Point, err)
			}
		}
	}
	if !strings.Contains(stdout, "capacity") {
		t.Errorf("the verdict does not say capacity:\n%s", stdout)
	}
}

// TestCapacitySectionDefaults: loadlab capacity takes from the plan's
// capacity: section what the command line does not give.
func TestCapacitySectionDefaults(t *testing.T) {
	t.Parallel()
	path := writePlan(t, map[string]string{"plan.yaml": openPlan("http://127.0.0.1:9", "50/s") + "capacity:\n  slo: [\"p95(latency) < 300ms\", \"error_rate < 1%\"]\n  precision: 5%\n  confirm: 1\n  step_max: 12s\n"})
	f := capacityDefaults("", 1)
	f.changed = map[string]bool{}
	s, err := prepareCapacity(path, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.SLO) != 2 || s.SLO[1].Text != "error_rate < 1%" || s.Opts.Precision != 0.05 || s.Opts.Confirm != 1 || s.stepper.StepMax != 12*time.Second {
		t.Errorf("slo %v, options %+v, step max %v", s.Doc.SLO, s.Opts, s.stepper.StepMax)
	}
	// A flag given wins over the section.
	f = capacityDefaults("", 1)
	f.slo, f.confirm, f.changed = []string{"p99(latency) < 1s"}, 0, map[string]bool{"confirm": true}
	if s, err = prepareCapacity(path, f); err != nil || len(s.SLO) != 1 || s.Opts.Confirm != 0 || s.Opts.Precision != 0.05 {
		t.Errorf("with flags: %v, slo %v, options %+v", err, s.Doc.SLO, s.Opts)
	}
}

// TestLaunchCapacityPlan: examples/launch/capacity.yaml loads, and the
// search at each of its points is sound, as loadlab run checks before any
// load (the recipe itself needs Puma and HAProxy and about 15 minutes).
func TestLaunchCapacityPlan(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "examples", "launch", "capacity.yaml")
	p, err := plan.Load(path, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Experiment == nil || p.Capacity == nil || len(p.Capacity.SLO) != 4 {
		t.Fatalf("experiment %+v, capacity %+v", p.Experiment, p.Capacity)
	}
	for _, pt := range experiment.Points(p.Experiment) {
		q, err := plan.Load(path, plan.Options{Params: pt.Params})
		if err != nil {
			t.Fatal(err)
		}
		s, err := newCapacitySearch(q, capacityDefaults(t.TempDir(), 1), path)
		if err != nil {
			t.Fatalf("%s: %v", pt.Key, err)
		}
		if s.Opts.Start != 1 || s.Opts.Precision != 0.1 || s.Opts.Confirm != 0 {
			t.Errorf("%s: options %+v", pt.Key, s.Opts)
		}
	}
}

// TestCapacityURL: capacity --url URL searches without a plan file: the
// flags make a one-step plan under an open load from --rate, read by the
// plan's own reader; what does not fit is refused with exit 2 before any
// request.
func TestCapacityURL(t *testing.T) {
	t.Parallel()
	url, served := counting(t)
	f := capacityDefaults(t.TempDir(), 1)
	f.changed = map[string]bool{}
	for flag, set := range map[string]func() error{
		"url":    func() error { return f.quick.url.Set(url + "/api?x=1") },
		"rate":   func() error { return f.quick.rate.Set("40/s") },
		"method": func() error { return f.quick.method.Set("post") },
		"header": func() error { return f.quick.headers.Set("Content-Type: application/json") },
	} {
		if err := set(); err != nil {
			t.Fatalf("--%s: %v", flag, err)
		}
	}
	f.quick.body, f.quick.maxVUs, f.thresholds = `{"a":1}`, 300, []string{"p95(latency) < 300ms"}
	s, err := prepareCapacity(capacityURLSource, f)
	if err != nil {
		t.Fatal(err)
	}
	st := s.plan.Scenarios[0].Steps[0]
	if s.plan.Load.Kind != plan.LoadOpen || s.Opts.Start != 40 || s.plan.Load.MaxVUs != 300 || st.Method != "POST" || st.URL.Src != "/api?x=1" ||
		len(st.Headers) != 1 || st.Body == nil || st.Body.Src != `{"a":1}` || len(s.SLO) != 1 || s.SLO[0].Text != "p95(latency) < 300ms" {
		t.Errorf("plan from --url: load %+v, start %v, step %+v, slo %v", s.plan.Load, s.Opts.Start, st, s.Doc.SLO)
	}
	plan := writePlan(t, map[string]string{"plan.yaml": openPlan(url, "50/s")})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"capacity", "--slo", "error_rate < 1%"}, "give a plan file"},
		{"both", []string{"capacity", plan, "--url", url + "/"}, "not both"},
		{"a plan and --rate", []string{"capacity", plan, "--rate", "5/s", "--slo", "error_rate < 1%"}, "--rate goes with --url"},
		{"no SLO", []string{"capacity", "--url", url + "/"}, "no SLO"},
		{"a template", []string{"capacity", url + "/", "-H", "X-Token: {{ token }}", "--slo", "error_rate < 1%"}, "would be a template"},
		{"bad threshold", []string{"capacity", "--url", url + "/", "--threshold", "p95(latency) <"}, "--threshold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := cli(context.Background(), t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d with %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the server got %d requests from bad input", n)
	}
}
