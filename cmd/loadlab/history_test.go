package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/history"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestHistoryQuick: quick runs are recorded (unless told not to), listed,
// and a history that cannot be written costs one line, not the run.
func TestHistoryQuick(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{})
	db := filepath.Join(t.TempDir(), "h.db")
	for range 2 {
		if _, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "20", "-c", "2", "--history", db); code != 0 || stderr != "" {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	if _, _, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "20", "-c", "2", "--history", db, "--no-history"); code != 0 {
		t.Fatalf("--no-history: exit %d", code)
	}
	stdout, stderr, code := cli(context.Background(), t, "history", "--history", db)
	if code != 0 || !strings.Contains(stdout, "GET "+url+"/") || !strings.Contains(stdout, "2 runs") {
		t.Fatalf("history: exit %d\n%s%s", code, stdout, stderr)
	}
	// Without a plan, --json lists the plans as JSON, not as text.
	stdout, stderr, code = cli(context.Background(), t, "history", "--history", db, "--json")
	var listed struct {
		Schema string
		Plans  []struct {
			Plan string
			Runs int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &listed); code != 0 || err != nil || listed.Schema != "loadlab.history-plans/v1" || len(listed.Plans) != 1 || listed.Plans[0].Runs != 2 {
		t.Errorf("history --json: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	stdout, stderr, code = cli(context.Background(), t, "history", "GET "+url+"/", "--history", db, "--figure", "throughput")
	if code != 0 || !strings.Contains(stdout, "2 runs at") || !strings.Contains(stdout, "No change point") {
		t.Fatalf("history of the URL: exit %d\n%s%s", code, stdout, stderr)
	}
	// Unwritable: the database's directory is a file.
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	_, stderr, code = cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--history", filepath.Join(blocker, "h.db"))
	if code != 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not in the history") {
		t.Errorf("unwritable history: exit %d, stderr %q; want 0 and one line", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "nothing", "--history", db}, `no runs of "nothing"`},
		{[]string{"history", "GET " + url + "/", "--history", db, "--figure", "p96"}, "the figures are"},
		{[]string{"history", "--history", db, "--since", "yesterday"}, "want a duration"},
		{[]string{"history", "--history", db, "--format", "xml"}, "want text, json"},
		{[]string{"history", "--history", filepath.Join(t.TempDir(), "none.db")}, "no history at"},
	} {
		if _, stderr, code := cli(context.Background(), t, c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestHistoryChangePoint records a real series: a plan whose server (a
// loadlab target) reads its delay from a file of the git checkout, run once
// a commit; the commit that makes the server slower is the one history
// names, and only it.
func TestHistoryChangePoint(t *testing.T) {
	if testing.Short() {
		t.Skip("ten runs of a plan with a server")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	addr := targettest.FreeAddr(t)
	argv, _ := targettest.Command(t, target.Options{}, addr)
	marker := fmt.Sprintf("-test.run=^NoHistory%d$", time.Now().UnixNano())
	delay := func(d time.Duration) {
		os.WriteFile(filepath.Join(repo, "target.json"), []byte(fmt.Sprintf(`{"Delay": %d}`, int64(d))), 0o644)
	}
	delay(2 * time.Millisecond)
	os.WriteFile(filepath.Join(repo, "plan.yaml"), []byte(fmt.Sprintf(`
name: history-shop
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: 2, duration: 500ms } }
server:
  run: LOADLAB_TARGETTEST_OPTIONS="$(cat %[2]s/target.json)" exec %[3]s '%[4]s'
  env: { LOADLAB_TARGETTEST_ADDR: "%[1]s" }
  ready: http://%[1]s/health
`, addr, repo, argv[0], marker)), 0o644)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "start")
	t.Chdir(repo)
	db := filepath.Join(t.TempDir(), "h.db")
	var commits []string
	for i := range 10 {
		if i == 5 {
			delay(12 * time.Millisecond)
			git("commit", "-q", "-am", "slower")
		} else if i > 0 {
			git("commit", "-q", "--allow-empty", "-m", fmt.Sprintf("commit %d", i))
		}
		commits = append(commits, git("rev-parse", "HEAD"))
		if _, stderr, code := cli(context.Background(), t, "run", "plan.yaml", "--history", db); code != 0 {
			t.Fatalf("run at commit %d: exit %d: %s", i, code, stderr)
		}
	}
	noOrphans(t, marker)
	// p50: a half-second run's p95 swings 2x on a busy machine; its median
	// does not.
	stdout, stderr, code := cli(context.Background(), t, "history", "plan.yaml", "--history", db, "--json", "--figure", "p50")
	if code != 0 {
		t.Fatalf("history: exit %d: %s", code, stderr)
	}
	var tr history.Trend
	if err := json.Unmarshal([]byte(stdout), &tr); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(tr.Commits) != 10 || tr.Commits[0].Commit != commits[0] || tr.Commits[0].Branch != "main" || tr.Commits[0].Dirty {
		t.Fatalf("commit groups: %+v", tr.Commits)
	}
	if len(tr.Changes) != 1 || tr.Changes[0].Commit != commits[5] || !tr.Changes[0].Worse || tr.Changes[0].Delta < 1 {
		t.Fatalf("changes %+v; want one, p50 twice or more, at %s (medians %v)", tr.Changes, commits[5], medians(tr))
	}
	stdout, _, _ = cli(context.Background(), t, "history", "history-shop", "--history", db, "--format", "md", "--figure", "p50")
	if !strings.Contains(stdout, "xychart-beta") || !strings.Contains(stdout, "**Change:** p50 latency +") || !strings.Contains(stdout, commits[5][:10]) {
		t.Errorf("markdown:\n%s", stdout)
	}
	stdout, _, _ = cli(context.Background(), t, "history", "history-shop", "--history", db, "--format", "html", "--figure", "p50")
	if !strings.Contains(stdout, "<svg") || !strings.Contains(stdout, "Change: p50 latency &#43;") {
		t.Errorf("html has no chart or change:\n%s", stdout)
	}
}

func medians(t history.Trend) []float64 {
	var m []float64
	for _, c := range t.Commits {
		m = append(m, c.Median)
	}
	return m
}

// TestCompareBaselineHistory: compare --baseline history takes side A from
// the last runs of B's plan, leaves B's own run out, and fails on a
// regression against them.
func TestCompareBaselineHistory(t *testing.T) {
	// One server whose delay the test sets: the history compares runs of
	// one plan at one target, as a CI job's are.
	var delay atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(delay.Load()))
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	fast, slow := "5ms", "25ms"
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("name: baseline-shop\ntarget: '{{ env.BASE }}'\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, iterations: 20 } }\n"), 0o644)
	db := filepath.Join(dir, "h.db")
	run := func(d, out string) {
		t.Helper()
		v, _ := time.ParseDuration(d)
		delay.Store(int64(v))
		args := []string{"run", plan, "-e", "BASE=" + srv.URL, "--history", db}
		if out != "" {
			args = append(args, "--out", out)
		}
		if _, stderr, code := cli(context.Background(), t, args...); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	for range 6 {
		run(fast, "")
	}
	slowDir := filepath.Join(dir, "slow")
	run(slow, slowDir)
	stdout, stderr, code := cli(context.Background(), t, "compare", "--baseline", "history", slowDir, "--history", db, "--fail-on", "p50 +50%")
	if code != 3 || !strings.Contains(stdout, "the last 5 runs of baseline-shop") || !strings.Contains(stderr, "regression") {
		t.Errorf("slow run against the history: exit %d\n%s%s", code, stdout, stderr)
	}
	fastDir := filepath.Join(dir, "fast")
	run(fast, fastDir)
	// The last 5 before it: 4 fast and the slow one; the median is fast.
	if stdout, stderr, code := cli(context.Background(), t, "compare", "--baseline", "history", fastDir, "--history", db, "--fail-on", "p50 +50%"); code != 0 {
		t.Errorf("fast run against the history: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--baseline", "history:nosuch", fastDir, "--history", db}, "no earlier runs of \"baseline-shop\" on branch nosuch"},
		{[]string{"compare", "--baseline", "hist", fastDir, "--history", db}, "want history or history:BRANCH"},
		{[]string{"compare", "--baseline", "history", fastDir, slowDir, "--history", db}, "give A and B, or --baseline"},
		{[]string{"compare", fastDir}, "give A and B, or --baseline"},
		{[]string{"compare", "--baseline", "history", fastDir, "--history", db, "--last", "0"}, "--last 0"},
	} {
		if _, stderr, code := cli(context.Background(), t, c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
