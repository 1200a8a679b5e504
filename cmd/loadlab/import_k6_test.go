package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestImportK6: import k6 writes the plan and its data beside it, lists
// what it did not convert with file:line:col, and --check runs the
// journey once against loadlab target and passes.
func TestImportK6(t *testing.T) {
	t.Parallel()
	site := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	out := filepath.Join(dir, "data.yaml")
	script := filepath.Join("..", "..", "internal", "importer", "testdata", "k6", "data.js")
	_, stderr, code := cli(context.Background(), t, "import", "k6", script, "-o", out, "--target", site, "--check")
	t.Logf("stderr:\n%s", stderr)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{
		"imported 2 requests to " + site,
		script + ":23:3: http.batch(",
		script + ":26:8: function teardown()",
		"data: " + filepath.Join(dir, "users.csv"),
		"data: " + filepath.Join(dir, "products.csv"),
		"plan: " + out,
		"check: passed: 1 journey, 2 requests, 1 of 1 checks passed",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	plan, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(plan), "# not converted: 23:3: http.batch(") || !strings.Contains(string(plan), "target: \""+site+"\"") {
		t.Errorf("the plan:\n%s (%v)", plan, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "products.csv")); err != nil {
		t.Error(err)
	}

	_, stderr, code = cli(context.Background(), t, "import", "k6", filepath.Join("..", "..", "internal", "importer", "testdata", "k6", "syntax.js"))
	if code != 2 || !strings.Contains(stderr, "syntax.js:3:25: syntax error") {
		t.Errorf("a syntax error: exit %d, stderr %q; want 2 and its line:col", code, stderr)
	}
}
