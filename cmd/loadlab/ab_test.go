package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// recordedAB reads an experiment.json that loadlab ab wrote (testdata/ab:
// paired.json is loadlab target --cpu 1ms against --cpu 1.08ms, -c 2 -d 2s,
// 6 rounds, on the shared 2-core VM).
func recordedAB(t *testing.T, name string) *experiment.Outcome {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "ab", name))
	if err != nil {
		t.Fatal(err)
	}
	var o experiment.Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

func TestABLine(t *testing.T) {
	t.Parallel()
	o := recordedAB(t, "paired.json")
	got := report.ABLine(o, abParam+"=B")
	want := "B is 13.1% slower (paired, p=0.031, 6 rounds, 95% CI -16.3%..-7.3%; noise floor 4.3%)"
	if got != want {
		t.Errorf("abLine:\n got %s\nwant %s", got, want)
	}
	// The same runs, unpaired (as with fewer than 6 rounds): the line says so.
	_, row := abRow(o.Verdict, experiment.FigureThroughput)
	row.Change = row.Unpaired
	if got := report.ABLine(o, abParam+"=B"); !strings.Contains(got, "(unpaired, p=") || !strings.Contains(got, "6 against 6 runs") {
		t.Errorf("unpaired line: %s", got)
	}
	// Not significant: B is not told from A, and the line says the change.
	c := *row.Paired
	c.Status, c.P = experiment.NotSignificant, 0.31
	row.Change = &c
	if got := report.ABLine(o, abParam+"=B"); !strings.HasPrefix(got, "B is not told from A: -13.1% (paired, p=0.310") {
		t.Errorf("not significant line: %s", got)
	}
}

func TestABFailOn(t *testing.T) {
	t.Parallel()
	o := recordedAB(t, "paired.json")
	for _, c := range []struct {
		rules []string
		fail  bool
	}{
		{[]string{"throughput -5%"}, true},   // -13.1%, significant
		{[]string{"throughput -20%"}, false}, // within the limit
		{[]string{"p95 +10%"}, true},         // +20%
		{[]string{"p95 +30%"}, false},
		{[]string{"error_rate +1%"}, false}, // 0 against 0
	} {
		var rules []experiment.Rule
		for _, s := range c.rules {
			r, err := experiment.ParseRule(s)
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, r)
		}
		err := abCheck(o, rules)
		if (err != nil) != c.fail || err != nil && exitCode(err) != exitThreshold {
			t.Errorf("%v: got %v (exit %d), want fail %t", c.rules, err, exitCode(err), c.fail)
		}
	}
}

func TestABBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ab", "http://127.0.0.1:1/"}, "give A and B"},
		{[]string{"ab", "--aa", "http://127.0.0.1:1/", "http://127.0.0.1:2/"}, "--aa runs A against itself"},
		{[]string{"ab", "http://127.0.0.1:1/", "http://127.0.0.1:2/", "--rounds", "1"}, "want auto or a number"},
		{[]string{"ab", "http://127.0.0.1:1/", "http://127.0.0.1:2/", "--min-effect", "2"}, "want a percentage"},
		{[]string{"ab", "http://127.0.0.1:1/", "nothere.yaml"}, "neither a URL"},
		{[]string{"ab", "http://127.0.0.1:1/", "http://127.0.0.1:2/", "--set-b", "x=1"}, "is a URL"},
		{[]string{"ab", "http://127.0.0.1:1/", "http://127.0.0.1:2/", "--fail-on", "latency +5%"}, "--fail-on"},
	} {
		_, stderr, code := cli(context.Background(), t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestABEndToEnd runs loadlab ab against two real servers on loopback, B
// 3 ms slower a request: 6 paired rounds of 300 ms runs, the answer first,
// and --fail-on's exit 3. Timing-sensitive: not parallel.
func TestABEndToEnd(t *testing.T) {
	server := func(d time.Duration) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d)
			w.Write([]byte("ok"))
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/"
	}
	a, b := server(time.Millisecond), server(4*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := t.TempDir()
	stdout, stderr, code := cli(ctx, t, "ab", a, b, "-c", "2", "-d", "300ms", "--rounds", "6", "--out", out, "--fail-on", "throughput -10%")
	if code != exitThreshold {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "B is ") || !strings.Contains(first, "% slower (paired, p=0.031, 6 rounds") {
		t.Errorf("first line %q, want B is N%% slower (paired, p=0.031, 6 rounds ...)", first)
	}
	if !strings.Contains(stderr, "ab: regression: throughput -10%") {
		t.Errorf("stderr does not name the regression:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "experiment.json")); err != nil {
		t.Error(err)
	}
}

// TestABDuetEndToEnd runs a duet against two real servers on loopback, B 3
// ms slower a request: 6 runs of 300 ms with A and B at once, the answer on
// the ratio first, duet.json written, and --fail-on's exit 3.
// Timing-sensitive: not parallel.
func TestABDuetEndToEnd(t *testing.T) {
	server := func(d time.Duration) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d)
			w.Write([]byte("ok"))
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/"
	}
	a, b := server(time.Millisecond), server(4*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := t.TempDir()
	stdout, stderr, code := cli(ctx, t, "ab", "--duet", a, b, "-c", "2", "-d", "1500ms", "--rounds", "6", "--out", out, "--fail-on", "throughput -10%")
	if code != exitThreshold {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "B is ") || !strings.Contains(first, "% slower (duet, B/A 0.") || !strings.Contains(first, "p=0.031, 6 runs") {
		t.Errorf("first line %q, want B is N%% slower (duet, B/A ..., p=0.031, 6 runs ...)", first)
	}
	var v experiment.DuetVerdict
	data, err := os.ReadFile(filepath.Join(out, DuetFile))
	if err == nil {
		err = json.Unmarshal(data, &v)
	}
	if err != nil || v.Runs != 6 || v.Throughput == nil || len(v.Throughput.Ratios) != 6 {
		t.Fatalf("duet.json: %v %+v", err, v)
	}
	// Each 1.5 s run has one whole second: six seconds' ratios, whose
	// median is near the runs' (the tail's sliver is left out).
	if ps := v.PerSecond; ps == nil || ps.Seconds != 6 || math.Abs(ps.Ratio-v.Throughput.Ratio) > 0.1 || ps.Q1 > ps.Ratio || ps.Q3 < ps.Ratio {
		t.Errorf("per second: %+v, runs' ratio %.3f", v.PerSecond, v.Throughput.Ratio)
	}
	if !strings.Contains(stdout, "  per second: B/A 0.") {
		t.Errorf("no per-second line:\n%s", stdout)
	}
	if _, _, code := cli(ctx, t, "ab", "--duet", a, "plan.yaml"); code != exitUsage {
		t.Errorf("a duet of a plan: exit %d, want 2", code)
	}
}

// TestABPlanDuetEndToEnd is a duet of two plans' servers: two loadlab
// target processes, B 3 ms slower a request, each started afresh in every
// run on its own port and both on the same CPU; both loads at once from
// one process. The answer is on the ratio, each run's two results and
// server logs are on disk, --fail-on exits 3, no server outlives the run,
// and two servers on one port are refused before any starts.
// Timing-sensitive: not parallel.
func TestABPlanDuetEndToEnd(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("-test.run=^NoPlanDuet%d$", time.Now().UnixNano())
	write := func(name string, delay time.Duration) (string, string) {
		addr := targettest.FreeAddr(t)
		argv, _ := targettest.Command(t, target.Options{Delay: delay, Workers: 1}, addr)
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(fmt.Sprintf(`
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: 2, duration: 1200ms } }
server:
  run: "exec %[2]s '%[3]s'"
  env:
    LOADLAB_TARGETTEST_ADDR: %[1]s
    LOADLAB_TARGETTEST_OPTIONS: '{"Delay": %[4]d, "Workers": 1}'
  ready: http://%[1]s/health
`, addr, argv[0], marker, int64(delay))), 0o644)
		return p, addr
	}
	a, _ := write("a.yaml", time.Millisecond)
	b, _ := write("b.yaml", 4*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "duet")
	stdout, stderr, code := cli(ctx, t, "ab", "--duet", a, b, "--rounds", "6", "--out", out, "--fail-on", "throughput -10%")
	noOrphans(t, marker)
	if code != exitThreshold {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "B is ") || !strings.Contains(first, "% slower (duet, B/A 0.") || !strings.Contains(first, "p=0.031, 6 runs") {
		t.Errorf("first line %q, want B is N%% slower (duet, B/A ..., p=0.031, 6 runs ...)", first)
	}
	if !strings.Contains(stderr, "duet: both servers on CPU ") || !strings.Contains(stderr, "duet: run 6 of 6: A ") {
		t.Errorf("stderr does not say where the servers ran, or each run:\n%s", stderr)
	}
	var v experiment.DuetVerdict
	data, err := os.ReadFile(filepath.Join(out, DuetFile))
	if err == nil {
		err = json.Unmarshal(data, &v)
	}
	if err != nil || v.Runs != 6 || v.Throughput == nil || len(v.Throughput.Ratios) != 6 {
		t.Fatalf("duet.json: %v %+v", err, v)
	}
	// One worker, 2 VUs: A serves about 1000 a second less its overhead, B
	// about 250; the ratio is well under 0.5 and over 0.1.
	if r := v.Throughput.Ratio; r < 0.1 || r > 0.5 {
		t.Errorf("B/A %.3f, want about 0.25", r)
	}
	if ps := v.PerSecond; ps == nil || ps.Seconds != 6 {
		t.Errorf("per second: %+v, want a whole second of each run", v.PerSecond)
	}
	for _, side := range []string{"A", "B"} {
		for _, f := range []string{"result.json", "server.log"} {
			if _, err := os.Stat(filepath.Join(out, "run-6", side, f)); err != nil {
				t.Errorf("run 6, side %s: %v", side, err)
			}
		}
	}
	// Again into the same directory: refused without --fresh.
	if _, stderr, code := cli(ctx, t, "ab", "--duet", a, b, "--rounds", "2", "--out", out); code != exitUsage || !strings.Contains(stderr, "--fresh") {
		t.Errorf("a second duet in %s: exit %d\n%s", out, code, stderr)
	}
	// One plan's two variants would both listen on its port.
	if _, stderr, code := cli(ctx, t, "ab", "--duet", a, "--set-b", "load.closed.vus=3", "--rounds", "2", "--out", filepath.Join(dir, "same")); code != exitUsage || !strings.Contains(stderr, "both would listen at") {
		t.Errorf("two servers on one port: exit %d\n%s", code, stderr)
	}
	noOrphans(t, marker)
}

// TestABSides: two plans, or one plan and --set-a/--set-b, make the two
// sides; a plan that is an experiment is refused.
func TestABSides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.yaml", "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, duration: 1s } }\n")
	two := write("two.yaml", "target: http://127.0.0.1:2\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, duration: 1s } }\n")
	f := &abFlags{setA: []string{"load.closed.vus=3"}, setB: []string{"load.closed.vus=5"}}
	a, b, err := abSides([]string{one}, f)
	if err != nil {
		t.Fatal(err)
	}
	pa, errA := a.load(plan.Options{Params: map[string]any{abParam: "A"}})
	pb, errB := b.load(plan.Options{Params: map[string]any{abParam: "B"}})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if pa.MostVUs() != 3 || pb.MostVUs() != 5 {
		t.Errorf("--set-a/--set-b: VUs %d and %d, want 3 and 5", pa.MostVUs(), pb.MostVUs())
	}
	a, b, err = abSides([]string{one, two}, &abFlags{})
	if err != nil {
		t.Fatal(err)
	}
	pa, _ = a.load(plan.Options{})
	pb, _ = b.load(plan.Options{})
	if pa == nil || pb == nil || pa.Target.String() == pb.Target.String() {
		t.Errorf("two plans: %v %v", pa, pb)
	}
	exp := write("exp.yaml", "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, duration: 1s } }\nrepeat: 3\n")
	_, stderr, code := cli(context.Background(), t, "ab", one, exp)
	if code != exitUsage || !strings.Contains(stderr, "exp.yaml:4:9: this plan is an experiment") {
		t.Errorf("an experiment as a side: exit %d, %s", code, stderr)
	}
}
