package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

func TestMain(m *testing.M) {
	targettest.Main()
	echoMain() // the test binary as TestSecretInEveryForm's server
	if os.Getenv("LOADLAB_TEST_MAIN") == "1" {
		// The test binary acting as the loadlab command, for tests that must
		// kill it (see TestResume).
		os.Args = append([]string{"loadlab"}, os.Args[1:]...)
		main()
	}
	os.Exit(targettest.RunInTempDir(m))
}

// cli runs the loadlab command line and returns its output and exit code.
func cli(ctx context.Context, t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(ctx, args, strings.NewReader(""), &out, &errb)
	code = reportExit(err, &errb)
	return out.String(), errb.String(), code
}

// counting is an in-process server that counts the requests it gets.
func counting(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	url, served := counting(t)
	ok := url + "/"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"malformed url", []string{"run", "--url", "http://[::1"}, 2, "bad --url"},
		{"unknown scheme", []string{"run", "--url", "ftp://127.0.0.1/"}, 2, "scheme must be http or https"},
		{"no host", []string{"run", "--url", "http:///x"}, 2, "no host"},
		{"fresh in quick mode", []string{"run", "--url", ok, "--fresh"}, 2, "--fresh starts an experiment"},
		{"no scheme", []string{"run", "--url", "127.0.0.1:8080/"}, 2, `bad --url "127.0.0.1:8080/": it needs a scheme, as in http://127.0.0.1:8080/`},
		{"bad port", []string{"run", "--url", "http://127.0.0.1:99999/"}, 2, "bad port"},
		{"no url", []string{"run"}, 2, "give a plan file (loadlab run plan.yaml) or --url URL"},
		{"zero count", []string{"run", "--url", ok, "-n", "0"}, 2, "-n must be positive, got 0"},
		{"negative workers in a plan", []string{"run", "plan.yaml", "--event-loops", "-2"}, 2, "--event-loops must not be negative"},
		{"negative demo workers", []string{"demo", "--event-loops", "-1"}, 2, "--event-loops must not be negative"},
		{"target address", []string{"target", "--addr", "nonsense"}, 2, `bad --addr "nonsense"`},
		{"zero duration", []string{"run", "--url", ok, "-d", "0s"}, 2, "-d must be positive, got 0s"},
		{"zero connections", []string{"run", "--url", ok, "-c", "0"}, 2, "-c must be positive"},
		{"negative connections", []string{"run", "--url", ok, "-c", "-3"}, 2, "-c must be positive"},
		{"negative count", []string{"run", "--url", ok, "-n", "-1"}, 2, "-n must be positive"},
		{"negative duration", []string{"run", "--url", ok, "-d", "-1s"}, 2, "-d must be positive"},
		{"zero rate", []string{"run", "--url", ok, "--rate", "0/s"}, 2, "count must be positive"},
		{"negative rate", []string{"run", "--url", ok, "--rate", "-5/s"}, 2, "count must be positive"},
		{"rate without unit", []string{"run", "--url", ok, "--rate", "5/fortnight"}, 2, "bad rate"},
		{"zero timeout", []string{"run", "--url", ok, "--timeout", "0s"}, 2, "--timeout must be positive"},
		{"bad header", []string{"run", "--url", ok, "-H", "NoColon"}, 2, "want 'Name: value'"},
		{"bad method", []string{"run", "--url", ok, "-X", "GE T"}, 2, "bad method"},
		{"two bodies", []string{"run", "--url", ok, "--body", "a", "--body-file", "b"}, 2, "not both"},
		{"unknown flag", []string{"run", "--url", ok, "--bogus"}, 2, "unknown flag: --bogus"},
		{"unknown command", []string{"bogus"}, 2, "unknown command"},
		{"plan and url", []string{"run", "--url", ok, "plan.yaml"}, 2, "give a plan file or --url, not both"},
		// With a plan, that a flag is for quick mode says more than what is
		// wrong with its value (as before the flags were typed).
		{"plan and zero connections", []string{"run", "plan.yaml", "-c", "0"}, 2, "run: --connections is for quick mode (--url); for a plan, set load.closed.vus"},
		{"plan and small max-header", []string{"run", "plan.yaml", "--max-header", "1"}, 2, "run: --max-header is for quick mode (--url); for a plan, set http.max_header"},
		{"plan and bad rate", []string{"run", "plan.yaml", "--rate", "x"}, 2, "run: --rate is for quick mode (--url); for a plan, use an open load"},
		{"plan and bad header", []string{"run", "plan.yaml", "-H", "NoColon"}, 2, "run: --header is for quick mode (--url)"},
		{"plan and bad url", []string{"run", "plan.yaml", "--url", "ftp://x"}, 2, "give a plan file or --url, not both"},
		{"plan, bad workers and zero connections", []string{"run", "plan.yaml", "--event-loops", "-2", "-c", "0"}, 2, "run: --connections is for quick mode"},
		{"bad url before zero connections", []string{"run", "-c", "0", "--url", "ftp://x"}, 2, `run: bad --url "ftp://x": the scheme must be http or https`},
		{"password in a malformed url", []string{"run", "--url", "http://u:hunter2pw@[::1"}, 2, `run: bad --url "http://[::1": missing ']' in host`},
		{"two plans", []string{"run", "a.yaml", "b.yaml"}, 2, "loadlab: run: accepts at most 1 arg(s), received 2 (see loadlab run --help)"},
		{"connections not a number", []string{"run", "--url", ok, "-c", "abc"}, 2, `invalid argument "abc" for "-c, --connections" flag: want a whole number`},
		{"duration without unit", []string{"run", "--url", ok, "-d", "30"}, 2, "want a duration such as 500ms, 30s or 2m"},
		{"unwritable out", []string{"run", "--url", ok, "-n", "5", "--out", "/proc/loadlab-nope"}, 2, "--out"},
		{"unresolvable host", []string{"run", "--url", "http://loadlab-test.invalid/"}, 1, "resolve loadlab-test.invalid"},
		{"refused", []string{"run", "--url", "http://127.0.0.1:1/"}, 1, "connection refused"},
		{"table without csv", []string{"report", t.TempDir(), "--table", "series"}, 2, "--table picks one of the CSV tables; add --format csv"},
		{"point of one result", []string{"report", t.TempDir(), "--point-a", "x=1"}, 2, "--point-a and --point-b pick the points of two experiments"},
		{"report of nothing", []string{"report", filepath.Join(t.TempDir(), "none")}, 2, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cli(context.Background(), t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", stderr, tt.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 || strings.Contains(stderr, "goroutine") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Errorf("bad input sent %d requests", n)
	}
}

func TestTLSVerification(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure")
	}))
	defer srv.Close()
	_, stderr, code := cli(context.Background(), t, "run", "--url", srv.URL+"/", "-n", "5")
	if code != exitFailed || !strings.Contains(stderr, "certificate") || !strings.Contains(stderr, "--insecure") {
		t.Errorf("self-signed certificate: exit %d, stderr %q; want a failed run that names the certificate and --insecure", code, stderr)
	}
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", srv.URL+"/", "-n", "50", "-c", "5", "--insecure")
	if code != 0 || !strings.Contains(stdout, "50 requests") || !strings.Contains(stdout, "no errors") {
		t.Errorf("--insecure: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
}

func TestJSONSummary(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{})
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "300", "-c", "4", "--json")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q (no progress lines off a terminal in a short run)", code, stderr)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	// The documented keys that scripts rely on.
	for _, key := range []string{"schema", "requests", "throughput_rps", "errors", "latency_ms", "service_time_ms", "late"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("summary has no %q", key)
		}
	}
	for _, group := range []string{"latency_ms", "service_time_ms"} {
		m, _ := raw[group].(map[string]any)
		for _, key := range []string{"p50", "p90", "p95", "p99", "p999", "max"} {
			if _, ok := m[key]; !ok {
				t.Errorf("%s has no %q", group, key)
			}
		}
	}
	errs, _ := raw["errors"].(map[string]any)
	for _, key := range []string{"connect", "timeout", "status_4xx", "status_5xx"} {
		if _, ok := errs[key]; !ok {
			t.Errorf("errors has no %q", key)
		}
	}
	var s result.Summary
	json.Unmarshal([]byte(stdout), &s)
	if s.Schema != result.SchemaSummary || s.Requests != 300 || s.Errors.Total != 0 || s.ThroughputRPS <= 0 || s.Latency.P50 <= 0 {
		t.Errorf("summary %+v", s)
	}
}

func TestOutAndReport(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{Status: []target.StatusWeight{{Code: 200, Weight: 3}, {Code: 503, Weight: 1}}})
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, dir := range dirs {
		_, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "400", "-c", "3", "--out", dir, "--threshold", "error_rate < 50%")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	var total int64
	merged := metrics.NewHistogram()
	for _, dir := range dirs {
		r, err := store.ReadResult(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Summary.Requests != 400 || r.Summary.Errors.Status5xx == 0 || len(r.Series) == 0 {
			t.Fatalf("result %+v", r.Summary)
		}
		for _, class := range []string{"ok", "5xx"} {
			h, err := metrics.Decode(r.Steps[0].Histograms.Latency[class])
			if err != nil {
				t.Fatal(err)
			}
			merged.Merge(h)
		}
		total += r.Summary.Responses
	}
	if merged.TotalCount() != total || total != 800 {
		t.Errorf("merged histograms count %d, results say %d", merged.TotalCount(), total)
	}

	stdout, _, code := cli(context.Background(), t, "report", dirs[0])
	if code != 0 || !strings.Contains(stdout, "400 requests") || !strings.Contains(stdout, "5xx") {
		t.Errorf("report: exit %d\n%s", code, stdout)
	}
	stdout, _, code = cli(context.Background(), t, "report", "--format", "json", filepath.Join(dirs[0], "result.json"))
	var s result.Summary
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Requests != 400 {
		t.Errorf("report --format json: exit %d, %v", code, err)
	}

	// Every format, for a run, an experiment and a comparison of two runs.
	exp := t.TempDir()
	if err := os.CopyFS(exp, os.DirFS("../../internal/report/testdata/experiment")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{dirs[0], "--format", "html"}, "<!doctype html>"},
		{[]string{dirs[0], "--format", "md"}, "a/report-throughput.png)"},
		{[]string{dirs[0], "--format", "csv"}, "scenario,step,"},
		{[]string{dirs[0], "--format", "csv", "--table", "series"}, "t_s,len_s,requests,"},
		{[]string{exp}, "workers=2 (base)"},
		{[]string{exp, "--format", "json"}, `"schema": "loadlab.experiment/v2"`}, // a v1 experiment, read and analysed anew
		{[]string{exp, "--format", "html"}, "<h2>Verdict</h2>"},
		{[]string{exp, "--format", "md"}, "| throughput (req/s) |"},
		{[]string{exp, "--format", "csv"}, "run,point,rep,status,"},
		{[]string{exp, "--format", "csv", "--table", "points"}, "point,baseline,figure,"},
		{[]string{dirs[0], dirs[1]}, "B vs A"},
		{[]string{dirs[0], dirs[1], "--format", "json"}, `"key": "p95"`},
		{[]string{dirs[0], dirs[1], "--format", "html"}, "<h1>Comparison</h1>"},
		{[]string{dirs[0], dirs[1], "--format", "md"}, "| figure | A | B | B vs A |"},
		{[]string{dirs[0], dirs[1], "--format", "csv"}, "figure,unit,runs_a,"},
	} {
		stdout, stderr, code := cli(context.Background(), t, append([]string{"report"}, tt.args...)...)
		if code != 0 || !strings.Contains(stdout, tt.want) {
			t.Errorf("report %s: exit %d, want %q in:\n%.600s%s", strings.Join(tt.args, " "), code, tt.want, stdout, stderr)
		}
		// Markdown on stdout links its charts from where it is printed.
		for _, m := range regexp.MustCompile(`!\[[^]]*\]\(([^)]+)\)`).FindAllStringSubmatch(stdout, -1) {
			if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("report %s links %s: %v", strings.Join(tt.args, " "), m[1], err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "report-throughput.png")); err != nil {
		t.Errorf("report --format md wrote no chart beside the result: %v", err)
	}
	for _, bad := range [][]string{{dirs[0], "--format", "pdf"}, {dirs[0], "--format", "csv", "--table", "points"}, {dirs[0], dirs[1], "--format", "pdf"}} {
		if _, stderr, code := cli(context.Background(), t, append([]string{"report"}, bad...)...); code != exitUsage || !strings.Contains(stderr, "report:") {
			t.Errorf("report %s: exit %d, %s", strings.Join(bad, " "), code, stderr)
		}
	}
}

func TestInterruptKeepsResults(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{Delay: 5 * time.Millisecond})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	start := time.Now()
	stdout, stderr, code := cli(ctx, t, "run", "--url", url+"/", "-c", "8", "-d", "1m", "--out", dir)
	// The load stops within a second (its own clock, below); writing the
	// results after it is CPU work that a busy machine may slow down.
	if took := time.Since(start) - 700*time.Millisecond; took > 3*time.Second {
		t.Errorf("exited %v after the interrupt", took)
	}
	if code != exitFailed || !strings.Contains(stderr, "interrupted") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "requests in") || !strings.Contains(stdout, "interrupted") {
		t.Errorf("no summary on interrupt:\n%s", stdout)
	}
	r, err := store.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Summary.Interrupted || r.Summary.Requests == 0 {
		t.Errorf("result: interrupted %v, %d requests", r.Summary.Interrupted, r.Summary.Requests)
	}
	if r.Summary.DurationS > 0.7+1 {
		t.Errorf("the load ran %.2fs, interrupted at 0.7s: want it stopped within a second", r.Summary.DurationS)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(matches) > 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

// TestURLCredentials: a user and password in the URL are sent as basic
// authentication, as curl sends them, and neither is stored.
func TestURLCredentials(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var user, pass string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		user, pass, _ = r.BasicAuth()
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	out := t.TempDir()
	u := strings.Replace(srv.URL, "http://", "http://bob:s3cret-pw@", 1) + "/"
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", u, "-n", "3", "-c", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if user != "bob" || pass != "s3cret-pw" {
		t.Errorf("the server saw user %q password %q", user, pass)
	}
	data, _ := os.ReadFile(filepath.Join(out, "result.json"))
	if bytes.Contains(data, []byte("bob")) || bytes.Contains(data, []byte("s3cret-pw")) || strings.Contains(stdout, "s3cret-pw") || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte("bob:s3cret-pw")))) {
		t.Error("the password is in result.json or the summary")
	}
}

// TestOpenFileLimit: asking for more connections than loadlab may open files
// is refused before any load, in quick mode and in a plan, instead of a run
// whose every new connection fails with "too many open files".
func TestOpenFileLimit(t *testing.T) {
	t.Parallel()
	path := writePlan(t, map[string]string{"plan.yaml": "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 300, iterations: 1 } }\n"})
	for _, args := range []string{"run --url http://127.0.0.1:1/ -c 300 -d 1s", "run " + path} {
		cmd := exec.Command("/bin/sh", "-c", "ulimit -n 200 && exec \"$0\" "+args, os.Args[0])
		cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(string(out), "needs 300 connections, but loadlab may open only 136 files (ulimit -n 200)") {
			t.Errorf("%s under ulimit -n 200: %v\n%s", args, err, out)
		}
	}
}

// TestNoResponseFailsTheRun: a server that never answers in time gives no
// response at all. The run fails (exit 1) naming the cause, yet its summary,
// with a validity warning, and result.json are still there.
func TestNoResponseFailsTheRun(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{Delay: 400 * time.Millisecond})
	dir := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-c", "2", "-d", "1s", "--timeout", "50ms", "--out", dir, "--json")
	if code != exitFailed || !strings.Contains(stderr, "none of the") || !strings.Contains(stderr, "timeout errors") {
		t.Fatalf("exit %d, stderr %q; want 1 and the cause", code, stderr)
	}
	var s struct {
		result.Summary
		Validity []result.Warning `json:"validity"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Requests == 0 || s.Errors.Timeout != s.Requests || !slices.ContainsFunc(s.Validity, func(w result.Warning) bool { return w.Code == "no_response" }) {
		t.Errorf("%d requests, %d timeouts, validity %v; want every request timed out and a no_response warning", s.Requests, s.Errors.Timeout, s.Validity)
	}
	if _, err := store.ReadResult(dir); err != nil {
		t.Error(err)
	}

	// Nothing answered before the grace period ended: no request finished
	// at all, and the run fails the same way.
	_, stderr, code = cli(context.Background(), t, "run", "--url", url+"/?delay=2s", "-c", "2", "-d", "500ms", "--grace", "100ms")
	if code != exitFailed || !strings.Contains(stderr, "still waiting for an answer when the grace period ended") {
		t.Errorf("all abandoned: exit %d, stderr %q", code, stderr)
	}

	// Some answers: the run stands, and errors are figures, not a failure.
	_, stderr, code = cli(context.Background(), t, "run", "--url", url+"/?delay=0s", "-c", "2", "-n", "20", "--timeout", "50ms")
	if code != exitOK {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestQuickErrorsFailTheRun: a quick run where every response was a 503
// fails (exit 3) by the default threshold, error_rate < 1%, and says so; a
// URL where the plan would go is quick mode's URL; --threshold replaces the
// default, and one that fails fails the run.
func TestQuickErrorsFailTheRun(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{})
	stdout, stderr, code := cli(context.Background(), t, "run", url+"/?status=503", "-c", "2", "-n", "50", "--no-history")
	if code != exitThreshold || !strings.Contains(stderr, "the default error_rate < 1% of a quick run: 100.00% of the requests") {
		t.Errorf("all 503: exit %d, stderr %q; want %d and the default threshold named", code, stderr, exitThreshold)
	}
	if !strings.Contains(stdout, "FAIL  error_rate < 1%") {
		t.Errorf("the summary does not show the default threshold:\n%s", stdout)
	}
	if _, stderr, code := cli(context.Background(), t, "run", url+"/", "-c", "2", "-n", "50", "--no-history"); code != exitOK {
		t.Errorf("no errors: exit %d, %s", code, stderr)
	}
	// --threshold replaces the default: the 503s pass a latency threshold...
	if _, stderr, code := cli(context.Background(), t, "run", url+"/?status=503", "-c", "2", "-n", "50", "--no-history", "--threshold", "p95(latency) < 10s"); code != exitOK {
		t.Errorf("--threshold replaces the default: exit %d, %s", code, stderr)
	}
	// ...and a --threshold that fails fails the run.
	stdout, _, code = cli(context.Background(), t, "run", url+"/", "-c", "2", "-n", "50", "--no-history", "--json", "--threshold", "p50(latency) < 1us")
	var s struct {
		Thresholds []result.ThresholdResult `json:"thresholds"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if code != exitThreshold || len(s.Thresholds) != 1 || s.Thresholds[0].Pass || s.Thresholds[0].Default {
		t.Errorf("a failing --threshold: exit %d, thresholds %+v", code, s.Thresholds)
	}
	// With a plan, --threshold adds to the plan's thresholds, checked as they are.
	plan := writePlan(t, map[string]string{"plan.yaml": "target: " + url + "\nsteps:\n  - get: /\nload: { closed: { vus: 1, iterations: 2 } }\n"})
	if _, stderr, code := cli(context.Background(), t, "run", plan, "--no-history", "--threshold", "p50(latency) < 1us"); code != exitThreshold || !strings.Contains(stderr, "1 of 1 thresholds failed") {
		t.Errorf("a plan with a failing --threshold: exit %d, %s", code, stderr)
	}
	if _, stderr, code := cli(context.Background(), t, "run", plan, "--no-history", "--threshold", "p95(latency, step=nope) < 1s"); code != exitUsage || !strings.Contains(stderr, `--threshold "p95(latency, step=nope) < 1s"`) {
		t.Errorf("a plan with a --threshold of no step: exit %d, %s", code, stderr)
	}
	// Without --out, a failed check's response is named as not kept, not as
	// a failures/ file that was never written.
	checked := writePlan(t, map[string]string{"plan.yaml": "target: " + url + "\nsteps:\n  - get: /\n    expect: { contains: nothing-like-this }\nload: { closed: { vus: 1, iterations: 1 } }\n"})
	if stdout, _, _ := cli(context.Background(), t, "run", checked, "--no-history"); !strings.Contains(stdout, "the whole response was not kept (pass --out DIR to keep it)") || strings.Contains(stdout, "failures/") {
		t.Errorf("a failed check without --out:\n%s", stdout)
	}
	for _, bad := range [][]string{
		{url + "/", "--threshold", "p95(latency) <"},
		{url + "/", "--threshold", "server.cpu < 50%"},
		{url + "/", "--url", url + "/"},
		{url + "/", "--out", "json=results.json"}, // k6's --out KIND=... is not a directory
	} {
		if _, stderr, code := cli(context.Background(), t, append([]string{"run", "-n", "1"}, bad...)...); code != exitUsage {
			t.Errorf("run %q: exit %d, %s; want %d", bad, code, stderr, exitUsage)
		}
	}
}

// TestVersionFlag: loadlab version and loadlab --version print the same.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	a, _, _ := cli(context.Background(), t, "version")
	b, _, _ := cli(context.Background(), t, "--version")
	if a != b || !strings.HasPrefix(a, "loadlab ") {
		t.Errorf("version %q, --version %q: want the same", a, b)
	}
}

// TestQuickFlagsHaveAPlanEquivalent: a quick-mode flag given with a plan is
// refused with where the plan sets the same thing.
func TestQuickFlagsHaveAPlanEquivalent(t *testing.T) {
	t.Parallel()
	for _, name := range quickOnly {
		if planEquivalent[name] == "" {
			t.Errorf("--%s: no plan equivalent to suggest", name)
		}
	}
}

// TestQuickHeadersMasked: credential headers given with -H reach the server
// but no file of --out, whatever their name (quick mode once masked four
// names, plans eight).
func TestQuickHeadersMasked(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got["X-Auth-Token"], got["X-Api-Key"] = r.Header.Get("X-Auth-Token"), r.Header.Get("X-Api-Key")
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", srv.URL+"/", "-n", "3", "-c", "1",
		"-H", "X-Auth-Token: s3cret-tok", "-H", "X-Api-Key: k3y-value", "-H", "Accept: text/plain", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	if got["X-Auth-Token"] != "s3cret-tok" || got["X-Api-Key"] != "k3y-value" {
		t.Errorf("the server saw %v", got)
	}
	mu.Unlock()
	files := 0
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range []string{"s3cret-tok", "k3y-value"} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds the secret %q", filepath.Base(path), s)
			}
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("%d files in --out: %v", files, err)
	}
	data, _ := os.ReadFile(filepath.Join(out, "result.json"))
	if !bytes.Contains(data, []byte(`"X-Auth-Token: ***"`)) || !bytes.Contains(data, []byte(`"Accept: text/plain"`)) {
		t.Errorf("result.json does not list the headers as sent, masked: %s", data[:min(len(data), 600)])
	}
	if strings.Contains(stdout, "s3cret-tok") {
		t.Error("the summary shows the token")
	}
}

// TestEngineChoice: an unknown LOADLAB_ENGINE is invalid input (exit 2,
// nothing sent), and result.json says which engine sent the load.
func TestEngineChoice(t *testing.T) {
	url, served := counting(t)
	t.Setenv(httpx.EngineEnv, "bogus")
	for _, args := range [][]string{{"run", "--url", url + "/", "-n", "5"}, {"demo", "--event-loops", "1"}} {
		_, stderr, code := cli(context.Background(), t, args...)
		if code != exitUsage || !strings.Contains(stderr, "LOADLAB_ENGINE=bogus") {
			t.Errorf("%s with LOADLAB_ENGINE=bogus: exit %d, stderr %q; want exit 2 naming the variable", args[0], code, stderr)
		}
	}
	if n := served.Load(); n != 0 {
		t.Errorf("an unknown engine sent %d requests", n)
	}
	for _, engine := range []string{"epoll", "portable"} {
		t.Setenv(httpx.EngineEnv, engine)
		dir := filepath.Join(t.TempDir(), engine)
		if _, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "--out", dir); code != 0 {
			t.Fatalf("%s: exit %d: %s", engine, code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Settings struct{ Engine string } `json:"settings"`
		}
		if err := json.Unmarshal(b, &res); err != nil || res.Settings.Engine != engine {
			t.Errorf("result.json settings.engine %q (%v), want %q", res.Settings.Engine, err, engine)
		}
	}
}
