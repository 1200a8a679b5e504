package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
	"github.com/loadlab/loadlab/internal/telemetry"
)

// prometheus3Version is the Prometheus that scripts/deps/prometheus.sh
// builds from the Go module proxy (its module version; Prometheus 3.x).
const prometheus3Version = "v0.316.0"

// prometheus3 is the path of that Prometheus; the test skips without it.
func prometheus3(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("LOADLAB_DEPS_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "loadlab-deps")
	}
	bin := filepath.Join(cache, "prometheus-"+prometheus3Version, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not built: run scripts/test-deps (it builds it with scripts/deps/prometheus.sh)", bin)
	}
	return bin
}

// waitQuery waits up to 10 s for the query to yield want; it returns what
// it yielded last.
func waitQuery(prom, q string, want float64) (float64, error) {
	var got float64
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, err = promQuery(prom, q); err == nil && got == want {
			break
		}
	}
	return got, err
}

// readResult reads dir/result.json.
func readResult(t *testing.T, dir string) *result.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// TestOTLPPrometheus: --push otlp pushes to a real receiver, the OTLP
// endpoint of a Prometheus 3 (built from the module proxy), and its query
// API gives result.json's totals under the names a scrape has: the
// receiver's translation adds _total to the counters and keeps the rest,
// and the counters are cumulative, as it wants them.
func TestOTLPPrometheus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a real Prometheus and a 3 s run")
	}
	prom := runPrometheus(t, prometheus3(t), "global: {}\n", "--web.enable-otlp-receiver")
	url := targettest.Start(t, target.Options{})
	dir, plan := homeAndBrokenPlan(t, "otlp-shop", url, "3s", "checks > 10%")
	out := filepath.Join(dir, "out")
	otlp := "http://" + prom + "/api/v1/otlp/v1/metrics"
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--push", "otlp="+otlp)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "\noutputs\n  otlp="+otlp+": ") || !strings.Contains(stdout, " 0 dropped") {
		t.Errorf("the summary does not end with the pushes, none dropped:\n%s", stdout)
	}
	s := readResult(t, out).Summary
	if s.Requests < 10 || s.Errors.Status5xx == 0 || s.Checks.Failed == 0 {
		t.Fatalf("the run measured too little to compare: %+v", s)
	}
	for q, w := range map[string]float64{
		`sum(max_over_time(loadlab_requests_total{job="loadlab"}[5m]))`:                            float64(s.Requests),
		`sum(max_over_time(loadlab_requests_total{job="loadlab",class="5xx"}[5m]))`:                float64(s.Errors.Status5xx),
		`sum(max_over_time(loadlab_checks_total{job="loadlab",result="passed"}[5m]))`:              float64(s.Checks.Passed),
		`sum(max_over_time(loadlab_checks_total{job="loadlab",result="failed"}[5m]))`:              float64(s.Checks.Failed),
		`sum(max_over_time(loadlab_iterations_total{job="loadlab"}[5m]))`:                          float64(s.Iterations),
		`sum(max_over_time(loadlab_request_duration_seconds_count{job="loadlab"}[5m]))`:            float64(s.Requests),
		`sum(max_over_time(loadlab_request_duration_seconds_bucket{job="loadlab",le="+Inf"}[5m]))`: float64(s.Requests),
		`max_over_time(loadlab_runs_total{job="loadlab"}[5m])`:                                     1,
		`last_over_time(loadlab_running{job="loadlab"}[5m])`:                                       0,
	} {
		if got, err := waitQuery(prom, q, w); err != nil || got != w {
			t.Errorf("%s = %v (%v), want %v as in result.json", q, got, err, w)
		}
	}
	// Every name a scrape has (the dashboard's) is there by OTLP too; the
	// server's figures only when loadlab starts the server.
	for _, name := range telemetry.Names() {
		if strings.HasPrefix(name, "loadlab_server_") {
			continue
		}
		q := fmt.Sprintf(`count(last_over_time({__name__=%q,job="loadlab"}[5m]))`, name)
		if got, err := promQuery(prom, q); err != nil || got == 0 {
			t.Errorf("%s: %v (%v): no series %s by OTLP", q, got, err, name)
		}
	}
}

// TestNativeHistogramsPrometheus: --push prometheus-rw=URL,native=true
// sends each step's latencies as a native histogram to a real Prometheus
// (Debian's 2.42, --enable-feature=native-histograms), whose
// histogram_quantile agrees with result.json's p95 within the width of a
// bucket (2^(1/8), 9.05%); one without the feature refuses them, and gets
// the classic series alone, all counted, which the summary says.
func TestNativeHistogramsPrometheus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("two real Prometheus servers and a 3 s run")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (scripts/test-deps installs Debian's)")
	}
	prom := runPrometheus(t, bin, "global: {}\n", "--web.enable-remote-write-receiver", "--enable-feature=native-histograms")
	classic := runPrometheus(t, bin, "global: {}\n", "--web.enable-remote-write-receiver")
	url := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: native-shop
target: `+url+`
steps:
  - get: /?delay=12ms&jitter=6ms
    name: fast
  - get: /?delay=140ms&jitter=60ms
    name: slow
load: { closed: { vus: 4, duration: 3s } }
`), 0o644)
	out := filepath.Join(dir, "out")
	native := "prometheus-rw=http://" + prom + "/api/v1/write,native=true"
	refused := "prometheus-rw=http://" + classic + "/api/v1/write,native=true"
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--push", native, "--push", refused)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := map[string]string{}
	for line := range strings.SplitSeq(stdout, "\n") {
		for _, o := range []string{native, refused} {
			if strings.HasPrefix(line, "  "+o+": ") {
				lines[o] = line
			}
		}
	}
	if l := lines[native]; !strings.Contains(l, " 0 dropped") || strings.Contains(l, "refused") {
		t.Errorf("summary line %q: want every push taken, native histograms too", l)
	}
	if l := lines[refused]; !strings.Contains(l, " 0 dropped") || !strings.Contains(l, "the receiver refused native histograms") {
		t.Errorf("summary line %q: want every push taken, saying native histograms were refused", l)
	}
	res := readResult(t, out)
	if len(res.Steps) != 2 {
		t.Fatalf("%d steps in result.json, want 2", len(res.Steps))
	}
	width := math.Exp2(1.0/8) - 1
	for _, st := range res.Steps {
		n := float64(st.Summary.Latency.Count)
		sel := fmt.Sprintf(`{job="loadlab",step=%q}`, st.Name)
		if got, err := waitQuery(prom, "histogram_count(loadlab_request_duration_seconds"+sel+")", n); err != nil || got != n {
			t.Errorf("step %s: histogram_count of the native series = %v (%v), want %v as in result.json", st.Name, got, err, n)
			continue
		}
		if got, err := waitQuery(classic, "max_over_time(loadlab_request_duration_seconds_count"+sel+"[5m])", n); err != nil || got != n {
			t.Errorf("step %s: the refusing receiver's classic count = %v (%v), want %v", st.Name, got, err, n)
		}
		want := st.Summary.Latency.P95 / 1000
		got, err := promQuery(prom, "histogram_quantile(0.95, loadlab_request_duration_seconds"+sel+")")
		if err != nil {
			t.Errorf("step %s: %v", st.Name, err)
			continue
		}
		classicP95, _ := promQuery(prom, "histogram_quantile(0.95, loadlab_request_duration_seconds_bucket"+sel+")")
		t.Logf("step %s: p95 %.2f ms in result.json; histogram_quantile %.2f ms native (%+.1f%%), %.2f ms classic (%+.1f%%)",
			st.Name, want*1000, got*1000, 100*(got/want-1), classicP95*1000, 100*(classicP95/want-1))
		// Prometheus reads the quantile in the bucket of the latency of
		// rank ceil(0.95 n); HdrHistogram's p95 is that of rank round(0.95
		// n), which may lie a bucket lower when the tail is sparse (a busy
		// machine's: a p95 of 37.31 ms against 41.08 ms, +10.1%). So the
		// estimate must lie in the native bucket of that latency, as
		// result.json's histograms hold it (to 3 significant digits).
		lo, hi := rankBucket(t, st.Histograms.Latency, int64(math.Ceil(0.95*n)))
		if got < lo*0.999 || got > hi*1.001 {
			t.Errorf("step %s: native histogram_quantile(0.95) = %.3f ms, outside the native bucket (%.3f, %.3f] ms of the latency of rank ceil(0.95 n) (result.json's p95 %.3f ms)",
				st.Name, got*1000, lo*1000, hi*1000, want*1000)
		}
		if math.Abs(got/want-1) > 2*width+0.002 {
			t.Errorf("step %s: native histogram_quantile(0.95) = %.3f ms, result.json's p95 %.3f ms: %+.1f%%, more than two buckets' %.2f%%",
				st.Name, got*1000, want*1000, 100*(got/want-1), 200*width)
		}
	}
}

// rankBucket is the native bucket, (lower, upper] in seconds, of the
// latency of the given rank in a step's latency histograms (every class that
// counts in latency); a bucket wider when HdrHistogram's bin of that latency
// straddles two.
func rankBucket(t *testing.T, hists map[string]string, rank int64) (lo, hi float64) {
	t.Helper()
	h := metrics.NewHistogram()
	for class, enc := range hists {
		if class == "failed" {
			continue
		}
		x, err := metrics.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		h.Merge(x)
	}
	var seen int64
	for _, bar := range h.Distribution() {
		if seen += bar.Count; bar.Count > 0 && seen >= rank {
			bucket := func(k int) float64 { return math.Exp2(float64(k) / (1 << metrics.NativeSchema)) }
			return bucket(metrics.NativeIndex(float64(bar.From)/1e6) - 1), bucket(metrics.NativeIndex(float64(bar.To) / 1e6))
		}
	}
	t.Fatalf("no latency of rank %d in %d", rank, h.TotalCount())
	return 0, 0
}

// TestOutputsDownAndSlowReceivers: one receiver never answers, another is
// down; the load is what it would be without them (every arrival of an
// open load sent), their pushes are dropped and counted in the
// summary, and the command ends at most the final pushes' wait (5 s, all
// outputs at once) after the load. --metrics-addr :PORT serves loopback only, says so, and is not
// reachable on the machine's other addresses.
func TestOutputsDownAndSlowReceivers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 2 s run and the final push's 5 s wait")
	}
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // runs first
	down := "http://" + freePort(t) + "/api/v1/write"
	url := targettest.Start(t, target.Options{})
	_, port, _ := net.SplitHostPort(freePort(t))
	// While /metrics serves, no other address of this machine reaches it.
	var others []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			others = append(others, net.JoinHostPort(ipn.IP.String(), port))
		}
	}
	t.Logf("other addresses: %v", others)
	probed := make(chan []string, 1)
	go func() {
		var reached []string
		defer func() { probed <- reached }()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			c, err := net.Dial("tcp", "127.0.0.1:"+port)
			if err != nil {
				continue
			}
			c.Close()
			for _, a := range others {
				if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
					c.Close()
					reached = append(reached, a)
				}
			}
			return
		}
		reached = append(reached, "(127.0.0.1:"+port+" never served)")
	}()
	start := time.Now()
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "--rate", "100/s", "-d", "2s", "--out", out,
		"--metrics-addr", ":"+port, "--push", "prometheus-rw="+slow.URL, "--push", "otlp="+slow.URL, "--push", "prometheus-rw="+down)
	elapsed := time.Since(start)
	if reached := <-probed; len(reached) > 0 {
		t.Errorf("--metrics-addr :%s reached from %v; want loopback only (other addresses: %v)", port, reached, others)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "loadlab: metrics at http://127.0.0.1:"+port+"/metrics, on loopback only") {
		t.Errorf("stderr does not say /metrics is on loopback only:\n%s", stderr)
	}
	s := readResult(t, out).Summary
	// Every arrival sent, none failed. (How many went out late depends on
	// the machine's load: logged, not judged.)
	if s.Requests != 200 || s.Dropped != 0 || s.Errors.Total != 0 {
		t.Errorf("%d requests, %d dropped arrivals, %d errors: want the 200 arrivals of 2 s at 100/s, none dropped or failed", s.Requests, s.Dropped, s.Errors.Total)
	}
	t.Logf("%d of 200 requests sent 1 ms or more late", s.Late.Count)
	// One after another, the final pushes would wait 10 s: 12 s and more.
	if elapsed > 2*time.Second+5*time.Second+4*time.Second {
		t.Errorf("the command took %v: more than the load's 2 s, the final pushes' 5 s (all outputs at once) and 4 s to start and write", elapsed)
	}
	for _, o := range []string{"prometheus-rw=" + slow.URL, "otlp=" + slow.URL + "/v1/metrics", "prometheus-rw=" + down} {
		var line string
		for l := range strings.SplitSeq(stdout, "\n") {
			if strings.HasPrefix(l, "  "+o+": ") {
				line = l
			}
		}
		var sent, dropped int
		if _, err := fmt.Sscanf(strings.TrimPrefix(line, "  "+o+": "), "%d pushes sent, %d dropped", &sent, &dropped); err != nil || sent != 0 || dropped < 2 || !strings.Contains(line, "last error") {
			t.Errorf("summary line %q: want no push sent, the drops counted (2 s of pushes and the final one), the last error", line)
		}
	}
	t.Logf("took %v; summary:\n%s", elapsed, stdout)
}
