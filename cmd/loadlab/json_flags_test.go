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
