package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

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

// TestNativeHistogramsPrometheus: --output prometheus-rw=URL,native=true
// sends each step's latencies as a native histogram to a real Prometheus
// (Debian's 2.42, --enable-feature=native-histograms), whose
// histogram_quantile agrees with result.json's p95 within the width of a
// bucket (2^(1/8), 9.05%); one without the feature refuses them, and gets
// the classic series alone, all counted, which the summary says.
func TestNativeHistogramsPrometheus(t *testing.T) {
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
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--out", out, "--output", native, "--output", refused)
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
		// The engine's own figure is within 0.1% of the value.
		if math.Abs(got/want-1) > width+0.002 {
			t.Errorf("step %s: native histogram_quantile(0.95) = %.3f ms, result.json's p95 %.3f ms: %+.1f%%, more than a bucket's %.2f%%",
				st.Name, got*1000, want*1000, 100*(got/want-1), 100*width)
		}
	}
}
