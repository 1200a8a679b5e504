package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/dashboard"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestDashboardBusy: a --dashboard port already taken is a usage error
// before any load is sent.
func TestDashboardBusy(t *testing.T) {
	t.Parallel()
	url, n := counting(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--dashboard="+ln.Addr().String())
	if code != 2 || !strings.Contains(stderr, "--dashboard") || !strings.Contains(stderr, "is in use") {
		t.Errorf("exit %d, stderr %q: want a usage error naming --dashboard and the port in use", code, stderr)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests were sent before the error", n.Load())
	}
}

// readDashboard connects to a dashboard's events as soon as it listens and
// returns its frames and end event.
func readDashboard(t *testing.T, addr string) ([]dashboard.Frame, *dashboard.End) {
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err = http.Get("http://" + addr + "/events"); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("the dashboard did not answer: %v", err)
		return nil, nil
	}
	defer resp.Body.Close()
	var frames []dashboard.Frame
	var name string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			switch name {
			case "frame":
				var f dashboard.Frame
				if err := json.Unmarshal([]byte(v), &f); err != nil {
					t.Error(err)
				}
				frames = append(frames, f)
			case "end":
				var e dashboard.End
				if err := json.Unmarshal([]byte(v), &e); err != nil {
					t.Error(err)
				}
				return frames, &e
			}
		}
	}
	return frames, nil
}

// TestDashboardRun: the page's stream follows a real run of a plan and
// ends with its summary's figures, then links the report.
func TestDashboardRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 3 s run")
	}
	url := targettest.Start(t, target.Options{})
	dir, plan := homeAndBrokenPlan(t, "live-page", url, "3s", "checks > 10%")
	out := filepath.Join(dir, "out")
	addr := freePort(t)
	type got struct {
		frames []dashboard.Frame
		end    *dashboard.End
	}
	ch := make(chan got, 1)
	go func() {
		f, e := readDashboard(t, addr)
		ch <- got{f, e}
	}()
	_, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--dashboard="+addr, "--dashboard-linger", "2s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "dashboard at http://"+addr+"/, on loopback only") {
		t.Errorf("stderr does not give the dashboard's URL:\n%s", stderr)
	}
	g := <-ch
	if g.end == nil || len(g.frames) < 3 {
		t.Fatalf("%d frames, end %v", len(g.frames), g.end)
	}
	if g.end.Report != "/report/report.html" {
		t.Errorf("end %+v: no report link", g.end)
	}
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	last := g.frames[len(g.frames)-1]
	if last.Requests != s.Requests || last.Classes[metrics.Class5xx] != s.Errors.Status5xx || last.Checks != [2]int64{s.Checks.Passed, s.Checks.Failed} || last.Iterations != s.Iterations {
		t.Errorf("last frame: %d requests, %d 5xx, checks %v, %d iterations; summary: %d, %d, %d/%d, %d",
			last.Requests, last.Classes[metrics.Class5xx], last.Checks, last.Iterations, s.Requests, s.Errors.Status5xx, s.Checks.Passed, s.Checks.Failed, s.Iterations)
	}
	if s.Requests < 10 || len(last.Steps) != 2 {
		t.Errorf("too little measured: %d requests, steps %+v", s.Requests, last.Steps)
	}
	grew := false
	for i := 1; i < len(g.frames); i++ {
		if g.frames[i].Requests < g.frames[i-1].Requests {
			t.Errorf("requests went down: %d then %d", g.frames[i-1].Requests, g.frames[i].Requests)
		}
		if g.frames[i].Requests > g.frames[i-1].Requests && g.frames[i-1].Requests > 0 {
			grew = true
		}
	}
	if !grew {
		t.Error("the frames did not follow the run second by second")
	}
}

// TestDashboardExperiment: an experiment's page gets its planned order
// first (a schedule event, the runs in experiment.db's order), then a run
// event as each run ends, in the run order, with its point and figures and
// an ETA; resumed, the schedule marks the runs done with their figures.
func TestDashboardExperiment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("an experiment of four 1 s runs")
	}
	url := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: live-sweep-page
target: `+url+`
steps: [ { get: "/?delay={{ delay }}", name: page } ]
load: { closed: { vus: 2, duration: 1s } }
params: { delay: [1ms, 3ms] }
repeat: 2
`), 0o644)
	out := filepath.Join(dir, "exp")
	addr := freePort(t)
	type events struct {
		runs     []dashboard.Run
		starts   []dashboard.RunStart // each run as it starts
		schedule *dashboard.Schedule
		order    []string // the events' names, in order
		end      dashboard.End
	}
	read := func() chan events {
		ch := make(chan events, 1)
		go func() {
			var ev events
			defer func() { ch <- ev }()
			var resp *http.Response
			var err error
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if resp, err = http.Get("http://" + addr + "/events"); err == nil {
					break
				}
			}
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var name string
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if v, ok := strings.CutPrefix(line, "event: "); ok {
					name = v
					if name != "frame" {
						ev.order = append(ev.order, name)
					}
				}
				if v, ok := strings.CutPrefix(line, "data: "); ok {
					switch name {
					case "end":
						json.Unmarshal([]byte(v), &ev.end)
						return
					case "run":
						var r dashboard.Run
						json.Unmarshal([]byte(v), &r)
						ev.runs = append(ev.runs, r)
					case "run-start":
						var r dashboard.RunStart
						json.Unmarshal([]byte(v), &r)
						ev.starts = append(ev.starts, r)
					case "schedule":
						ev.schedule = new(dashboard.Schedule)
						json.Unmarshal([]byte(v), ev.schedule)
					}
				}
			}
		}()
		return ch
	}
	ch := read()
	if _, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--dashboard="+addr, "--dashboard-linger", "1s"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ev := <-ch
	runs, starts, end := ev.runs, ev.starts, ev.end
	if end.Report != "/report/report.html" {
		t.Errorf("end %+v: no link to the experiment's report", end)
	}
	if len(runs) != 4 {
		t.Fatalf("%d run events, want 4: %+v", len(runs), runs)
	}
	points := map[string]int{}
	for i, r := range runs {
		if r.Run != i+1 || r.Runs != 4 || r.RPS <= 0 || r.P[0] <= 0 {
			t.Errorf("run event %d: %+v", i+1, r)
		}
		if (r.ETASeconds > 0) != (r.Run < r.Runs) {
			t.Errorf("run %d of %d: ETA %v s", r.Run, r.Runs, r.ETASeconds)
		}
		points[r.Point]++
		if i >= len(starts) || starts[i] != (dashboard.RunStart{Run: i + 1, Runs: 4, Point: r.Point}) {
			t.Errorf("run %d ended at %q; the runs started: %+v", i+1, r.Point, starts)
		}
	}
	if len(points) != 2 {
		t.Errorf("points %v, want two, two runs each", points)
	}

	// The schedule came before any run started, and lists the runs as
	// experiment.db records them, none done yet.
	if ev.schedule == nil || len(ev.order) == 0 || ev.order[0] != "schedule" {
		t.Fatalf("events %q: want a schedule first", ev.order)
	}
	h, err := store.OpenHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := h.Runs()
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	sched := ev.schedule.Runs
	if len(sched) != 4 || len(recs) != 4 {
		t.Fatalf("schedule %+v; experiment.db %d runs", sched, len(recs))
	}
	for _, rec := range recs {
		s := sched[rec.Index]
		if s.Run != rec.Index+1 || s.Point != rec.Point || s.Rep != rec.Rep || s.Done {
			t.Errorf("schedule's run %d: %+v; experiment.db: run %d %s #%d", rec.Index+1, s, rec.Index+1, rec.Point, rec.Rep)
		}
		if s.Point != runs[rec.Index].Point {
			t.Errorf("run %d: planned at %s, ran at %s", rec.Index+1, s.Point, runs[rec.Index].Point)
		}
	}

	// Resumed with every run done: the schedule marks them all, with the
	// figures their runs ended with, and no run goes again.
	ch = read()
	if _, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--dashboard="+addr, "--dashboard-linger", "1s"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	ev = <-ch
	if ev.schedule == nil || len(ev.schedule.Runs) != 4 || len(ev.runs) != 0 {
		t.Fatalf("resume: schedule %+v, %d runs ran", ev.schedule, len(ev.runs))
	}
	for i, s := range ev.schedule.Runs {
		r := runs[i]
		if !s.Done || s.Run != i+1 || s.Point != r.Point || s.RPS != r.RPS || s.P != r.P || s.ErrorRate != r.ErrorRate {
			t.Errorf("resume: schedule's run %d %+v; it ended with %+v", i+1, s, r)
		}
	}
}

// TestDashboardOpen: --open runs $BROWSER on the page's URL (and implies
// --dashboard); a $BROWSER that fails is a warning, and the run goes on.
func TestDashboardOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script as $BROWSER")
	}
	url, n := counting(t)
	dir := t.TempDir()
	got := filepath.Join(dir, "opened")
	rec := filepath.Join(dir, "browser")
	os.WriteFile(rec, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+got+"\n"), 0o755)
	t.Setenv("BROWSER", rec)
	addr := freePort(t)
	_, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--dashboard="+addr, "--open")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(got); string(b) != "http://"+addr+"/\n" {
		t.Errorf("$BROWSER got %q, want the page's URL", b)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("stderr: %s", stderr)
	}

	// --open alone serves the default address; a failing browser warns.
	if ln, err := net.Listen("tcp", dashboard.DefaultAddr); err != nil {
		t.Logf("%s is taken here: not trying --open alone", dashboard.DefaultAddr)
	} else {
		ln.Close()
		fail := filepath.Join(dir, "fail")
		os.WriteFile(fail, []byte("#!/bin/sh\nexit 3\n"), 0o755)
		t.Setenv("BROWSER", fail)
		t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		os.WriteFile(filepath.Join(dir, "xdg-open"), []byte("#!/bin/sh\nexit 4\n"), 0o755)
		os.WriteFile(filepath.Join(dir, "open"), []byte("#!/bin/sh\nexit 4\n"), 0o755)
		before := n.Load()
		_, stderr, code = cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--open")
		if code == 2 && strings.Contains(stderr, "is in use") {
			t.Skipf("%s was taken meanwhile", dashboard.DefaultAddr)
		}
		if code != 0 {
			t.Fatalf("exit %d with a failing browser: %s", code, stderr)
		}
		if !strings.Contains(stderr, "loadlab: dashboard at http://"+dashboard.DefaultAddr+"/") ||
			!strings.Contains(stderr, "warning: --open could not open a browser") || !strings.Contains(stderr, "exit status 3") {
			t.Errorf("stderr: %s", stderr)
		}
		if n.Load()-before != 5 {
			t.Errorf("%d requests with a failing browser, want the run's 5", n.Load()-before)
		}
	}
}

// TestDashboardAddrWithASpace: `--dashboard ADDR` (a space, not "=") is a
// usage error naming --dashboard=ADDR, before any load, whether ADDR then
// reads as the plan or as a second one; a plan file of such a name is
// still a plan.
func TestDashboardAddrWithASpace(t *testing.T) {
	url, n := counting(t)
	plan := writePlan(t, map[string]string{"plan.yaml": "target: " + url + "\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 2 } }\n"})
	for _, args := range [][]string{
		{"run", "--dashboard", "127.0.0.1:5690", plan},
		{"run", plan, "--dashboard", "127.0.0.1:5690"},
		{"run", "--url", url + "/", "-n", "2", "--dashboard", ":5690"},
		{"run", "--dashboard", "5690", "--url", url + "/", "-n", "2"},
		{"run", "--dashboard", "localhost:5690"},
		{"capacity", "--dashboard", "127.0.0.1:5690", plan, "--slo", "p95(latency) < 5ms"},
	} {
		_, stderr, code := cli(context.Background(), t, args...)
		addr := args[slices.Index(args, "--dashboard")+1]
		if code != 2 || !strings.Contains(stderr, "write --dashboard="+addr) {
			t.Errorf("%q: exit %d, stderr %q: want a usage error naming --dashboard=%s", args, code, stderr, addr)
		}
	}
	if n.Load() != 0 {
		t.Errorf("%d requests were sent", n.Load())
	}
	// A plan file named like a port is a plan.
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("5690", []byte("target: "+url+"\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 2 } }\n"), 0o644)
	ln, err := net.Listen("tcp", dashboard.DefaultAddr)
	if err != nil {
		t.Skipf("%s is taken here: not trying --dashboard alone", dashboard.DefaultAddr)
	}
	ln.Close()
	if _, stderr, code := cli(context.Background(), t, "run", "--dashboard", "5690"); code != 0 && !strings.Contains(stderr, "is in use") {
		t.Errorf("a plan named 5690: exit %d: %s", code, stderr)
	}
}
