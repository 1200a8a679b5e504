package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestImportMultipartRecordingRuns: the committed Chromium recording of
// internal/importer/testdata/issues (a Redmine-shaped Rack app whose
// new-issue and edit forms are multipart/form-data, with CSRF tokens, an
// upload's token and the issue's id in them) imports with --target a fresh
// instance of the app in Puma, and loadlab run replays it three times:
// exit 0, every check passed, and the app holds three issues, each with
// its 45-byte file, and three notes. Before, the POST replayed the
// recorded body, stale token and all: 422, then "interface conversion:
// interface {} is nil, not string".
func TestImportMultipartRecordingRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Puma")
	}
	app := filepath.Join("..", "..", "internal", "importer", "testdata", "issues")
	base := startPuma(t, app, 500)
	dir := t.TempDir()
	plan := filepath.Join(dir, "issues.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, stderr, code := cli(ctx, t, "import", "har", filepath.Join(app, "recorded.har"), "-o", plan, "--target", base)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	src, _ := os.ReadFile(plan)
	if !strings.Contains(string(src), "multipart:") || strings.Contains(string(src), "WebKitFormBoundary") {
		t.Errorf("the plan has no multipart: step, or the recorded body:\n%s", src)
	}
	stdout, stderr, code := cli(ctx, t, "run", plan, "--set", "load.closed.iterations=3")
	if code != 0 || !strings.Contains(stdout+stderr, "checks      ") || strings.Contains(stdout+stderr, "interface conversion") {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	resp, err := http.Get(base + "/count")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct{ Issues, Attachments, Notes, Bytes int }
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &c); err != nil || c.Issues != 3 || c.Attachments != 3 || c.Notes != 3 || c.Bytes != 3*45 {
		t.Errorf("the app was sent %s (%v), want 3 issues, 3 files of 45 bytes and 3 notes", b, err)
	}
}

// startPuma runs dir/config.ru in Puma on a free loopback port, its ids
// from firstID, and returns its URL.
func startPuma(t *testing.T, dir string, firstID int) string {
	t.Helper()
	puma, err := exec.LookPath("puma")
	if err != nil {
		t.Fatal("puma is not installed: run scripts/test-deps")
	}
	cmd := exec.Command(puma, "-b", "tcp://127.0.0.1:0", "-t", "1:4", "config.ru")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FIRST_ID="+strconv.Itoa(firstID))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`Listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("puma did not say where it listens within 30s")
	}
	return ""
}
