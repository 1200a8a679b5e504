package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAbortReasonsMasked: a journey aborted by an error that quotes a
// secret value (a template evaluated on a secret data column) is counted
// under a reason with the value masked, in result.json, the reports and
// the summary.
func TestAbortReasonsMasked(t *testing.T) {
	url, _ := counting(t)
	path := writePlan(t, map[string]string{
		"users.csv": "email,password\na@example.com,s3cretpw1\nb@example.com,s3cretpw2\n",
		"plan.yaml": fmt.Sprintf(`target: %s
data:
  users: { csv: users.csv, secret: password }
steps:
  - get: "/x?n={{ int(users.password) }}"
load: { closed: { vus: 1, iterations: 2 } }
`, url)})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 1 || !strings.Contains(stderr, "no journey completed") {
		t.Fatalf("exit %d, want 1 (no journey completed): %s", code, stderr)
	}
	texts := map[string]string{"stdout": stdout, "stderr": stderr}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			texts[filepath.Base(f)] = string(b)
		}
	}
	if !strings.Contains(texts["result.json"], "invalid operation: int(***)") {
		t.Errorf("result.json has no masked abort reason:\n%s", texts["result.json"])
	}
	for name, text := range texts {
		if strings.Contains(text, "s3cretpw") {
			t.Errorf("%s shows a secret data value", name)
		}
	}
}
