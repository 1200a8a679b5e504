package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaterPointInvalid: a param value that breaks the plan at the third
// point of an experiment is found before any run: exit 2, naming the point
// and the place in the file, and no request reaches the server.
func TestLaterPointInvalid(t *testing.T) {
	t.Parallel()
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

// TestLaterPointTooManyConnections: a point whose VUs would need more files
// than loadlab may open is found before any run too, as the baseline's
// load is.
func TestLaterPointTooManyConnections(t *testing.T) {
	t.Parallel()
	url, requests := counting(t)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`name: many
target: %s
steps: [ { get: / } ]
load: { closed: { vus: "{{ users }}", iterations: 1 } }
params: { users: [1, 300] }
repeat: 1
`, url)})
	cmd := exec.Command("/bin/sh", "-c", "ulimit -n 200 && exec \"$0\" run \"$1\" --out \"$2\"", os.Args[0], path, filepath.Join(t.TempDir(), "out"))
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(string(out), "point users=300 (2 of 2) is not a valid plan") || !strings.Contains(string(out), "needs 300 connections") {
		t.Errorf("under ulimit -n 200: %v\n%s", err, out)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server before the error", n)
	}
}

// TestPlanOnStdinLimit: a plan on stdin is read no further than the plan
// size limit, and refused past it.
func TestPlanOnStdinLimit(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	huge := io.MultiReader(strings.NewReader("name: x\n#"), &endless{})
	err := run(context.Background(), []string{"run", "-"}, huge, &stdout, &stderr)
	if code := reportExit(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "stdin:1:1: the plan is over 1 MiB") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// endless reads as an endless run of x.
type endless struct{}

func (*endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestLaterPointRendersBadly: every point's templates of constants are
// rendered before the first run: a param that makes the target's port
// 99999, an int() or an index that fails, a header with a line break or a
// URL with a % that is no escape at point 3 is exit 2, naming the point,
// the field and its place in the file, and no request reaches the server
// (before, points 1 and 2 ran and then every journey of point 3 aborted).
func TestLaterPointRendersBadly(t *testing.T) {
	t.Parallel()
	url, requests := counting(t)
	port := url[strings.LastIndexByte(url, ':')+1:]
	type test struct{ name, plan, want string }
	var tests []test
	for _, tt := range []test{
		{"port", "target: http://127.0.0.1:{{ p }}\nsteps: [ { get: / } ]\nparams: { p: [" + port + ", 1, 99999] }\n", `:2:9: target "http://127.0.0.1:99999": port 99999 is not a port`},
		{"int", "target: " + url + "\nsteps: [ { get: '/?n={{ int(p) }}' } ]\nparams: { p: ['1', '2', x] }\n", ":3:25: in {{ int(p) }}: invalid operation: int(x)"},
		{"index", "target: " + url + "\nsteps: [ { get: '/?n={{ [10, 20][p] }}' } ]\nparams: { p: [0, 1, 2] }\n", ":3:25: in {{ [10, 20][p] }}: index out of range"},
		{"crlf", "target: " + url + "\nsteps: [ { get: /, headers: { X-P: '{{ p }}' } } ]\nparams: { p: [a, b, \"c\\r\\nX-Evil: 1\"] }\n", ":3:36: GET /: header X-P: the value has a line break"},
		{"percent", "target: " + url + "\nsteps: [ { get: '/{{ p }}' } ]\nparams: { p: [a, b, '%zz'] }\n", `:3:17: GET /{{ p }}: the URL has "%zz", which is not a %XX escape`},
	} {
		tests = append(tests, tt)
	}
	t.Run("points", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				path := writePlan(t, map[string]string{"plan.yaml": "name: " + tt.name + "\n" + tt.plan + "load: { closed: { vus: 1, iterations: 2 } }\nrepeat: 1\n"})
				_, stderr, code := cli(context.Background(), t, "run", path, "--out", filepath.Join(t.TempDir(), "results"))
				if code != 2 {
					t.Fatalf("exit %d, want 2: %s", code, stderr)
				}
				if strings.Contains(stderr, "c\r\nX-Evil") {
					t.Errorf("stderr holds the param's line break as it is:\n%s", stderr)
				}
				if !strings.Contains(stderr, "(3 of 3) is not a valid plan") || !strings.Contains(stderr, path+tt.want) {
					t.Errorf("stderr does not name point 3 and say %q:\n%s", path+tt.want, stderr)
				}
			})
		}
	})
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server before the errors", n)
	}
}
