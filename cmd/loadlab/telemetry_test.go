package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// freePort returns a loopback address nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startPrometheus runs Debian's Prometheus on loopback, scraping scrape
// every second as job "scraped" and taking remote-write; it returns its
// address.
func startPrometheus(t *testing.T, scrape string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (scripts/test-deps installs Debian's)")
	}
	return runPrometheus(t, bin, `global: { scrape_interval: 1s, scrape_timeout: 900ms }
scrape_configs:
  - job_name: scraped
    static_configs: [ { targets: ["`+scrape+`"] } ]
`, "--web.enable-remote-write-receiver")
}

// runPrometheus runs the Prometheus bin on loopback with config and flags,
// its data in a temporary directory, until the test ends; it returns its
// address once ready.
func runPrometheus(t *testing.T, bin, config string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	configFile := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(configFile, []byte(config), 0o644)
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--config.file=" + configFile, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr}, flags...)...)
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promQuery returns the value of an instant query that yields one number
// (NaN-free), or an error.
func promQuery(addr, q string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" || len(body.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %s %s, %d results", q, body.Status, body.Error, len(body.Data.Result))
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// TestLiveMetricsPrometheus: a real Prometheus scrapes --metrics-addr and
// receives --push prometheus-rw; its query API gives the totals that
// result.json holds, by either path.
func TestLiveMetricsPrometheus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a real Prometheus and a 3 s run")
	}
	metricsAddr := freePort(t)
	prom := startPrometheus(t, metricsAddr)
	url := targettest.Start(t, target.Options{})
	dir, plan := homeAndBrokenPlan(t, "live-shop", url, "3s", "p95(latency) < 10s", "checks > 10%")
	out := filepath.Join(dir, "out")
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--out", out,
		"--metrics-addr", metricsAddr, "--metrics-linger", "10s",
		"--push", "prometheus-rw=http://"+prom+"/api/v1/write")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "on loopback only") {
		t.Errorf("stderr does not say metrics are served on loopback only:\n%s", stderr)
	}
	if !strings.Contains(stdout, "\noutputs\n  prometheus-rw=http://"+prom+"/api/v1/write: ") || !strings.Contains(stdout, " 0 dropped") {
		t.Errorf("the summary does not end with the pushes, none dropped:\n%s", stdout)
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
	if s.Requests < 10 || s.Errors.Status5xx == 0 || s.Checks.Failed == 0 {
		t.Fatalf("the run measured too little to compare: %+v", s)
	}
	for _, job := range []string{"scraped", "loadlab"} {
		want := map[string]float64{
			`sum(max_over_time(loadlab_requests_total{job="%s"}[5m]))`:                            float64(s.Requests),
			`sum(max_over_time(loadlab_requests_total{job="%s",class="5xx"}[5m]))`:                float64(s.Errors.Status5xx),
			`sum(max_over_time(loadlab_checks_total{job="%s",result="passed"}[5m]))`:              float64(s.Checks.Passed),
			`sum(max_over_time(loadlab_checks_total{job="%s",result="failed"}[5m]))`:              float64(s.Checks.Failed),
			`sum(max_over_time(loadlab_iterations_total{job="%s"}[5m]))`:                          float64(s.Iterations),
			`sum(max_over_time(loadlab_request_duration_seconds_count{job="%s"}[5m]))`:            float64(s.Requests),
			`sum(max_over_time(loadlab_request_duration_seconds_bucket{job="%s",le="+Inf"}[5m]))`: float64(s.Requests),
		}
		for q, w := range want {
			q = fmt.Sprintf(q, job)
			var got float64
			var err error
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if got, err = promQuery(prom, q); err == nil && got == w {
					break
				}
			}
			if err != nil || got != w {
				t.Errorf("%s = %v (%v), want %v as in result.json", q, got, err, w)
			}
		}
	}
}

// TestMetricsAddrBusy: a port already taken is a clear error before any
// load is sent.
func TestMetricsAddrBusy(t *testing.T) {
	t.Parallel()
	url, n := counting(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--metrics-addr", ln.Addr().String())
	if code != 2 || !strings.Contains(stderr, "--metrics-addr") || !strings.Contains(stderr, "is in use") {
		t.Errorf("exit %d, stderr %q: want a usage error naming --metrics-addr and the port in use", code, stderr)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests were sent before the error", n.Load())
	}
	_, stderr, code = cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--push", "influx=http://127.0.0.1:1/")
	if code != 2 || !strings.Contains(stderr, "unknown output") {
		t.Errorf("exit %d, stderr %q: want a usage error for an unknown output", code, stderr)
	}
}

// TestLiveMetricsExperiment: the live figures of an experiment add up its
// runs: what remote-write last received holds every run's requests and
// counts the runs.
func TestLiveMetricsExperiment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("an experiment of four 1 s runs")
	}
	var mu sync.Mutex
	var last prompb.WriteRequest
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		data, err := snappy.Decode(nil, body)
		var req prompb.WriteRequest
		if err == nil {
			err = req.Unmarshal(data)
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		last = req
		mu.Unlock()
	}))
	defer recv.Close()
	url := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: live-sweep
target: `+url+`
steps: [ { get: "/?delay={{ delay }}", name: page } ]
load: { closed: { vus: 2, duration: 1s } }
params: { delay: [1ms, 3ms] }
repeat: 2
`), 0o644)
	out := filepath.Join(dir, "exp")
	if _, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--push", "prometheus-rw="+recv.URL); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "runs", "*", "result.json"))
	var requests int64
	for _, path := range runs {
		data, _ := os.ReadFile(path)
		var r result.Result
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		requests += r.Summary.Requests
	}
	mu.Lock()
	defer mu.Unlock()
	got := map[string]float64{}
	for _, ts := range last.Timeseries {
		for _, l := range ts.Labels {
			if l.Name == "__name__" {
				got[l.Value] += ts.Samples[0].Value
			}
		}
	}
	if len(runs) != 4 || got["loadlab_runs_total"] != 4 || got["loadlab_requests_total"] != float64(requests) || got["loadlab_running"] != 0 {
		t.Errorf("%d runs, %d requests in their results; remote-write got runs %v, requests %v, running %v",
			len(runs), requests, got["loadlab_runs_total"], got["loadlab_requests_total"], got["loadlab_running"])
	}
}

// homeAndBrokenPlan writes, in a new directory, the plan the live-figure
// tests share: two VUs for duration, a step that passes (home) and one whose
// check fails on a 503 (broken), and the thresholds given.
func homeAndBrokenPlan(t *testing.T, name, url, duration string, thresholds ...string) (dir, plan string) {
	t.Helper()
	dir = t.TempDir()
	plan = filepath.Join(dir, "plan.yaml")
	text := "name: " + name + "\ntarget: " + url + `
steps:
  - get: /
    name: home
    expect: { status: 200 }
  - get: /?status=503
    name: broken
    expect: { status: 200 }
load: { closed: { vus: 2, duration: ` + duration + ` } }
thresholds:
`
	for _, th := range thresholds {
		text += "  - " + th + "\n"
	}
	if err := os.WriteFile(plan, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, plan
}

// TestMetricsTokenPrinted: --metrics-addr off loopback prints the token a
// scrape needs, as --dashboard does; a LOADLAB_METRICS_TOKEN too short to
// guess hard is a usage error before any load.
func TestMetricsTokenPrinted(t *testing.T) {
	var ip string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			ip = n.IP.String()
			break
		}
	}
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address")
	}
	url, n := counting(t)
	_, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "3", "-c", "1", "--metrics-addr", ip+":0")
	if code != 0 || !regexp.MustCompile(`metrics at http://[0-9.:]+/metrics, open to other machines; a scrape needs the token [0-9a-f]{32} `).MatchString(stderr) {
		t.Errorf("exit %d, stderr %q: want the token printed", code, stderr)
	}
	t.Setenv("LOADLAB_METRICS_TOKEN", "short")
	before := n.Load()
	_, stderr, code = cli(context.Background(), t, "run", "--url", url+"/", "-n", "3", "-c", "1", "--metrics-addr", ip+":0")
	if code != 2 || !strings.Contains(stderr, "too short") || n.Load() != before {
		t.Errorf("exit %d, stderr %q, %d requests: want a usage error before any load", code, stderr, n.Load()-before)
	}
}
