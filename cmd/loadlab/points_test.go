package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaterPointInvalid: a param value that breaks the plan at the third
// point of an experiment is found before any run: exit 2, naming the point
// and the place in the file, and no request reaches the server.
func TestLaterPointInvalid(t *testing.T) {
	url, requests := counting(t)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`name: later-point
target: %s
steps: [ { get: / } ]
load: { closed: { vus: "{{ users }}", iterations: 2 } }
params: { users: [1, 2, 0] }
repeat: 2
`, url)})
	out := filepath.Join(t.TempDir(), "results")
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	for _, want := range []string{"point users=0 (3 of 3) is not a valid plan", path + ":4:24: vus must be at least 1, got 0"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server before the error", n)
	}
	if _, err := os.Stat(filepath.Join(out, "experiment.db")); err == nil {
		t.Errorf("an invalid experiment left %s", filepath.Join(out, "experiment.db"))
	}
}
