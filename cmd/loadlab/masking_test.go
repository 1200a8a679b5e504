package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/target"
)

// TestAbortReasonsMasked: a journey aborted by an error that quotes a
// secret value (a template evaluated on a secret data column) is counted
// under a reason with the value masked, in result.json, the reports and
// the summary.
func TestAbortReasonsMasked(t *testing.T) {
	t.Parallel()
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

// TestServerLogMasked: server.log is written with the plan's secrets
// masked, as the server prints them (stdout and stderr, a secret split
// across two writes), the rest of its output kept.
func TestServerLogMasked(t *testing.T) {
	t.Setenv("LOADLAB_TEST_DB_PASSWORD", "envPassw0rd")
	srv, url, _ := targetServer(t, target.Options{}, `echo "starting with {{ api_token }}"; echo "db {{ env.LOADLAB_TEST_DB_PASSWORD }}" >&2; printf 'split tok-s3'; sleep 0.1; printf 'cretvalue end\n'; exec %s`)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
vars: { api_token: tok-s3cretvalue }
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 3 } }
%s
`, url, srv)})
	out := t.TempDir()
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"starting with ***\n", "db ***\n", "split *** end\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("server.log does not hold %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "s3cret") || strings.Contains(log, "envPassw0rd") {
		t.Errorf("server.log shows a secret:\n%s", log)
	}
}
