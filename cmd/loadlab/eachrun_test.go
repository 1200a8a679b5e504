package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
)

// TestEachRunCommands: server.before_each_run writes the file the server
// reads at start (here the status it answers, from the point's param), and
// after_each_run runs once the server has stopped. A before_each_run that
// fails makes that run failed, with the command's output (secrets masked),
// and the experiment goes on with the next run.
func TestEachRunCommands(t *testing.T) {
	t.Parallel()
	srv, url, marker := targetServer(t, target.Options{}, `LOADLAB_TARGETTEST_OPTIONS="$(cat options.json)" exec %s`)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
name: each-run
target: %s
vars: { token: { value: s3cret-tok, secret: true } }
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 3 } }
params: { code: [200, 404, 599] }
baseline: { code: 200 }
repeat: 1
%s
  before_each_run: |
    rm -f options.json
    test {{ code }} != 599 || { echo "restore failed for {{ token }}" >&2; exit 4; }
    printf '{"Status":[{"Code":{{ code }},"Weight":1}]}' > options.json
  after_each_run: [ sh, -c, "test -f options.json && echo after {{ code }} >> after.log" ]
`, url, srv)})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	noOrphans(t, marker)
	if code != exitFailed || !strings.Contains(stderr, "1 of 3 runs failed") {
		t.Fatalf("exit %d, want %d with 1 of 3 runs failed: %s\n%s", code, exitFailed, stderr, stdout)
	}
	o, err := experiment.LoadOutcome(out)
	if err != nil {
		t.Fatal(err)
	}
	results := o.Results()
	for i, run := range o.Runs {
		switch run.Point {
		case "code=599":
			if run.Status != "failed" || !strings.Contains(run.Error, "the server was not started: server.before_each_run failed") ||
				!strings.Contains(run.Error, "exit status 4") || !strings.Contains(run.Error, "restore failed for ***") || strings.Contains(run.Error, "s3cret-tok") {
				t.Errorf("run %d (%s): %s: %q", i+1, run.Point, run.Status, run.Error)
			}
		case "code=200", "code=404":
			if run.Status != "done" || results[i] == nil {
				t.Fatalf("run %d (%s): %s %s", i+1, run.Point, run.Status, run.Error)
			}
			want := int64(0)
			if run.Point == "code=404" {
				want = 3
			}
			if got := results[i].Summary.Errors.Status4xx; got != want {
				t.Errorf("run %d (%s): %d answers 4xx, want %d: the server did not read what before_each_run wrote", i+1, run.Point, got, want)
			}
			if _, err := os.Stat(filepath.Join(out, run.Dir, "before_each_run.log")); err != nil {
				t.Errorf("run %d: %v", i+1, err)
			}
		default:
			t.Errorf("run %d: point %q", i+1, run.Point)
		}
	}
	after, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "after.log"))
	if got := strings.Fields(string(after)); len(got) != 4 || !strings.Contains(string(after), "after 200\n") || !strings.Contains(string(after), "after 404\n") {
		t.Errorf("after.log = %q, want after 200 and after 404, once each", after)
	}
}

// TestEachRunFailures: an after_each_run that fails makes a single run
// fail (exit 1) and keeps its result; a command that outlasts
// each_run_timeout is stopped with its tree; Ctrl-C during before_each_run
// stops it with its tree and starts no server.
func TestEachRunFailures(t *testing.T) {
	t.Parallel()
	url, hits := counting(t)
	base := fmt.Sprintf(`
target: %s
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 2 } }
server:
  run: [ sleep, "30" ]
  grace: 1s
`, url)
	path := writePlan(t, map[string]string{"plan.yaml": base})
	t.Run("after_each_run fails", func(t *testing.T) {
		out := t.TempDir()
		stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out, "--set", `server.after_each_run=echo cleanup broke >&2; exit 9`)
		if code != exitFailed || !strings.Contains(stderr, "server.after_each_run failed") || !strings.Contains(stderr, "exit status 9") || !strings.Contains(stderr, "cleanup broke") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if r, err := store.ReadResult(out); err != nil || r.Summary.Requests != 2 {
			t.Errorf("the run's result: %v %+v\n%s", err, r, stdout)
		}
	})
	t.Run("each_run_timeout", func(t *testing.T) {
		sleep := fmt.Sprintf("31.%d", time.Now().UnixNano()%1e9)
		before := hits.Load()
		start := time.Now()
		_, stderr, code := cli(context.Background(), t, "run", path, "--set", "server.before_each_run=sleep "+sleep+" & sleep "+sleep, "--set", "server.each_run_timeout=300ms")
		if code != exitFailed || !strings.Contains(stderr, "still running after 300ms (the timeout): stopped with its process tree") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("took %v", took)
		}
		if hits.Load() != before {
			t.Error("load was sent after before_each_run failed")
		}
		noOrphans(t, sleep)
	})
	t.Run("Ctrl-C", func(t *testing.T) {
		sleep := fmt.Sprintf("32.%d", time.Now().UnixNano()%1e9)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		before := hits.Load()
		_, stderr, code := cli(ctx, t, "run", path, "--set", "server.before_each_run=sleep "+sleep+" & sleep "+sleep)
		if code != exitFailed {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if hits.Load() != before {
			t.Error("load was sent after an interrupt")
		}
		noOrphans(t, sleep)
	})
}
