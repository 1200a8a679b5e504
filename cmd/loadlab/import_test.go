package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/importer/hartest"
)

// TestImportHAR: import har writes the plan, says what it inferred and
// dropped, and --check replays it once against a fresh tracker (other
// tokens, other ids) and passes; the written plan reads the password from
// the environment (LOADLAB_PASSWORD, -e or exported) and, without it, does
// not run: exit 2, naming the variable.
func TestImportHAR(t *testing.T) {
	recorded := httptest.NewServer(hartest.NewTracker(7, 58))
	har, err := hartest.RecordTracker(recorded.URL)
	recorded.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "tracker.har")
	if err := os.WriteFile(file, har, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := hartest.NewTracker(3, 900)
	fresh := httptest.NewServer(tr)
	defer fresh.Close()
	out := filepath.Join(dir, "tracker.yaml")
	ctx := context.Background()
	_, stderr, code := cli(ctx, t, "import", "har", file, "-o", out, "--target", fresh.URL, "--check")
	t.Logf("stderr:\n%s", stderr)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{
		"imported 7 requests to " + fresh.URL,
		"  capture authenticity_token: the <meta name=\"csrf-token\"> tag of GET /login",
		"  capture issue_location: the Location header of POST /projects/:id/issues (/projects/7/issues/58), whose segment 4 is 58",
		"  secret  password: the recorded password is a secret: not written; the plan reads it from the environment: export LOADLAB_PASSWORD=...",
		"dropped 1 assets", "/app.css",
		"plan: " + out,
		"check: passed: 1 journey, 7 requests, ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr has no %q", want)
		}
	}
	if issues, _ := tr.Created(); issues != 1 {
		t.Errorf("--check created %d issues, want 1", issues)
	}
	plan, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plan), hartest.Password) || !strings.Contains(string(plan), "password: { env: LOADLAB_PASSWORD, secret: true }") {
		t.Errorf("the written plan holds the password, or does not read it from LOADLAB_PASSWORD:\n%s", plan)
	}
	if _, stderr, code := cli(ctx, t, "run", out, "-e", "LOADLAB_PASSWORD="+hartest.Password); code != 0 {
		t.Errorf("run of the written plan with -e LOADLAB_PASSWORD: exit %d: %s", code, stderr)
	}
	t.Setenv("LOADLAB_PASSWORD", hartest.Password)
	if _, stderr, code := cli(ctx, t, "run", out); code != 0 {
		t.Errorf("run of the written plan with LOADLAB_PASSWORD exported: exit %d: %s", code, stderr)
	}
	if issues, _ := tr.Created(); issues != 3 {
		t.Errorf("after two runs: %d issues, want 3", issues)
	}
	// Without the password the plan does not load: exit 2, the error at
	// the variable, naming what to export.
	os.Unsetenv("LOADLAB_PASSWORD")
	_, stderr, code = cli(ctx, t, "run", out)
	if code != 2 || !strings.Contains(stderr, "variable password: environment variable LOADLAB_PASSWORD is not set (export LOADLAB_PASSWORD=...") {
		t.Errorf("run without LOADLAB_PASSWORD: exit %d, want 2: %s", code, stderr)
	}
}

func TestImportHARBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"nojson.har", "<html>", "nojson.har:1:1: not JSON"},
		{"nojson2.har", "{\n  \"log\": nope", "nojson2.har:2:11: not JSON"},
		{"cdn.har", `{"log": {"version": "1.2", "entries": [{"startedDateTime": "2026-12-01T10:00:00Z", "request": {"method": "GET", "url": "https://cdn.example/a.css"}, "response": {"status": 200, "content": {"mimeType": "text/css"}}}]}}`, "no entries for the target"},
		{"v3.har", `{"log": {"version": "3.0", "entries": []}}`, `HAR version "3.0"`},
		{"empty.har", `{"log": {"version": "1.2", "entries": []}}`, "no entries for the target"},
	} {
		f := filepath.Join(dir, tc.name)
		os.WriteFile(f, []byte(tc.body), 0o644)
		_, stderr, code := cli(context.Background(), t, "import", "har", f)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", tc.name, code, stderr, tc.want)
		}
	}
	if _, stderr, code := cli(context.Background(), t, "import", "har", filepath.Join(dir, "none.har")); code != 2 {
		t.Errorf("a missing file: exit %d (%s), want 2", code, stderr)
	}
	if _, stderr, code := cli(context.Background(), t, "import", "har", filepath.Join(dir, "v3.har"), "--think", "5s"); code != 2 || !strings.Contains(stderr, "max=DURATION") {
		t.Errorf("--think 5s: exit %d (%s), want 2", code, stderr)
	}
}

// TestImportHARKeepAssets: --assets keep keeps the stylesheet as a step of
// its own, says so and how it is fetched; another value is a usage error.
func TestImportHARKeepAssets(t *testing.T) {
	t.Parallel()
	recorded := httptest.NewServer(hartest.NewTracker(7, 58))
	har, err := hartest.RecordTracker(recorded.URL)
	recorded.Close()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tracker.har")
	if err := os.WriteFile(file, har, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stdout, stderr, code := cli(ctx, t, "import", "har", file, "--assets", "keep")
	if code != 0 || !strings.Contains(stderr, "kept 1 assets (stylesheets, scripts, images, fonts) as steps named \"asset METHOD PATH\" after their page") ||
		!strings.Contains(stdout, `name: "asset GET /app.css"`) {
		t.Errorf("--assets keep: exit %d\n%s\n%s", code, stderr, stdout)
	}
	if _, stderr, code := cli(ctx, t, "import", "har", file, "--assets", "inline"); code != 2 || !strings.Contains(stderr, "want drop or keep") {
		t.Errorf("--assets inline: exit %d, %s; want 2", code, stderr)
	}
}
