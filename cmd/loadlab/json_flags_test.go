package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONFlags: compare --json prints what report A B --format json does,
// and report --json what report --format json does, on a recorded result;
// --json with another --format is refused.
func TestJSONFlags(t *testing.T) {
	t.Parallel()
	run := filepath.Join("..", "..", "internal", "report", "testdata", "run.json")
	same := func(a, b []string) {
		t.Helper()
		outA, errA, codeA := cli(t.Context(), t, a...)
		outB, errB, codeB := cli(t.Context(), t, b...)
		if codeA != 0 || codeB != 0 {
			t.Fatalf("exit %d (%s) and %d (%s)", codeA, errA, codeB, errB)
		}
		if outA != outB {
			t.Errorf("%s printed:\n%s\n%s printed:\n%s", strings.Join(a, " "), outA, strings.Join(b, " "), outB)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(outA), &v); err != nil {
			t.Errorf("%s: not JSON: %v\n%s", strings.Join(a, " "), err, outA)
		}
	}
	same([]string{"compare", run, run, "--json"}, []string{"report", run, run, "--format", "json"})
	same([]string{"report", run, "--json"}, []string{"report", run, "--format", "json"})
	if _, stderr, code := cli(t.Context(), t, "report", run, "--json", "--format", "md"); code != 2 || !strings.Contains(stderr, "give --json or --format, not both") {
		t.Errorf("report --json --format md: exit %d, %s", code, stderr)
	}
}

// TestOutLooksLikeASink: --out KIND=... (k6's sinks) is refused naming the
// flags the command has for live figures and for JSON. No load is sent.
func TestOutLooksLikeASink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--url", "http://127.0.0.1:1/", "-n", "1", "--out", "json=results.json"}, "live figures go to --push prometheus-rw=URL or --push otlp=URL, and --json prints the summary as JSON"},
		{[]string{"capacity", "--url", "http://127.0.0.1:1/", "--out", "prometheus-rw=http://127.0.0.1:1/"}, "live figures go to --metrics-addr (/metrics, for Prometheus to scrape), and --json prints the summary as JSON"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			t.Parallel()
			_, stderr, code := cli(t.Context(), t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %s; want exit 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
