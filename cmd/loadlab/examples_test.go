package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
)

// TestExamples runs the recipes of examples/ scaled down, as their READMEs'
// "CI runs" say, so that they cannot rot: real Puma, Thin and HAProxy from
// Debian packages (scripts/test-deps installs them).
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Ruby servers for about 90 s")
	}
	for _, bin := range []string{"ruby", "puma", "thin", "haproxy"} {
		if _, err := exec.LookPath(bin); err != nil {
			if _, err := exec.LookPath("/usr/sbin/" + bin); err != nil {
				t.Fatalf("%s is not installed: run scripts/test-deps", bin)
			}
		}
	}
	tests := []struct {
		name string
		set  []string
		// bad is a point the recipe shows failing (HAProxy's roundrobin to
		// an unequal pair): its thresholds and checks may fail, the exit
		// code may be 3.
		bad string
	}{
		{"puma-threads", []string{"repeat=1", "params.threads=[1, 5]"}, ""},
		{"jemalloc", []string{"repeat=1", "load.open.duration=12s"}, ""},
		{"launch", []string{"repeat=1", "load.open.rate=60/15s"}, "balance=roundrobin"},
		{"thin-vs-puma", []string{"repeat=1", `params.case={"100/1000": {vus: 100, iterations: 10}}`}, ""},
		{"actioncable", []string{"repeat=1", "load.closed.duration=3s"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := []string{"run", filepath.Join("..", "..", "examples", tt.name, "plan.yaml"), "--out", out}
			if tt.name == "launch" { // its users in this test's directory, not the shared default under /tmp
				args = append(args, "--set", "server.env.USERS_DIR="+t.TempDir())
			}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			stdout, stderr, code := cli(context.Background(), t, args...)
			if code != 0 && !(code == exitThreshold && tt.bad != "") {
				t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
			}
			o, err := experiment.LoadOutcome(out)
			if err != nil {
				t.Fatal(err)
			}
			if !o.Complete {
				t.Fatalf("%d runs, not all done", len(o.Runs))
			}
			for i, r := range o.Results() {
				if o.Runs[i].Point == tt.bad {
					continue
				}
				for _, th := range r.Thresholds {
					if !th.Pass {
						t.Errorf("run %d (%s): threshold %s failed: %s", i+1, o.Runs[i].Point, th.Text, th.Detail)
					}
				}
				if r.Summary.Checks.Failed != 0 || r.Summary.Requests == 0 || r.Server == nil {
					var steps []string
					for _, st := range r.Steps {
						steps = append(steps, fmt.Sprintf("%s: %d requests, %d errors %+v, checks %+v", st.Name, st.Summary.Requests, st.Summary.Errors.Total, st.Summary.Errors, st.Summary.Checks))
						if f := st.FailedCheck; f != nil {
							steps = append(steps, fmt.Sprintf("  first failed check: %s; status %d %s %q", f.Check, f.Status, f.Error, f.Body))
						}
					}
					if log, err := os.ReadFile(filepath.Join(out, o.Runs[i].Dir, "server.log")); err == nil {
						lines := strings.Split(strings.TrimSpace(string(log)), "\n")
						steps = append(steps, "server.log ends:\n"+strings.Join(lines[max(0, len(lines)-15):], "\n"))
					}
					t.Errorf("run %d (%s): %d requests, %d failed checks, server %v, aborted %v: the recipe no longer does what it says\n%s",
						i+1, o.Runs[i].Point, r.Summary.Requests, r.Summary.Checks.Failed, r.Server != nil, r.Aborts, strings.Join(steps, "\n"))
				}
			}
		})
	}
}
