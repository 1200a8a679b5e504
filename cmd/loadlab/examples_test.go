package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/limits"
	"github.com/loadlab/loadlab/internal/plan"
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
		// Its three boxes at one worker per CPU of 5 threads, 3 s each: about 15 s.
		{"size-the-box", []string{"repeat=1", "params.workers=[1]", "params.threads=[5]", "load.closed.duration=3s", "warmup=0s"}, ""},
		{"actioncable", []string{"repeat=1", "load.closed.duration=3s"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "size-the-box" {
				skipWithoutLimits(t, limits.Limits{Memory: 512 << 20})
			}
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
			if b := o.Verdict.Boxes; tt.name == "size-the-box" && (b == nil || len(b.Boxes) != 3 || len(b.Options) == 0 || !strings.Contains(stdout, "which box (box): cheapest for ")) {
				t.Errorf("no verdict on the boxes: %+v\n%s", b, stdout)
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

// skipWithoutLimits skips a test where the limits cannot be enforced (no
// writable cgroup: a container without delegation, macOS), saying what is
// missing.
func skipWithoutLimits(t *testing.T, l limits.Limits) {
	t.Helper()
	g, err := limits.Create(l)
	var u *limits.UnavailableError
	if errors.As(err, &u) {
		t.Skipf("needs server.limits, which this machine cannot enforce: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	g.Remove()
}

// TestSizeTheBoxPlan: examples/size-the-box/plan.yaml loads, its box param
// is a param of boxes with prices, and each point's server runs workers
// per CPU of its box inside the box's limits (no cgroup needed to check).
func TestSizeTheBoxPlan(t *testing.T) {
	t.Parallel()
	p, err := plan.Load(filepath.Join("..", "..", "examples", "size-the-box", "plan.yaml"), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := p.Experiment
	if e == nil || len(e.Params) != 3 || !e.Params[0].Boxes || e.TargetRate != 300 {
		t.Fatalf("experiment %+v", e)
	}
	points := experiment.Points(e)
	want := map[string]string{
		"box=1x workers=2 threads=5":        "c=1; |-w $(( 2 * c )) -t 5:5|cpus 1, memory 512 MiB, swap 0 B",
		"box=2x workers=2 threads=5":        "c=2; |-w $(( 2 * c )) -t 5:5|cpus 2, memory 1 GiB, swap 0 B",
		"box=1x workers=3 threads=5":        "c=1; |-w $(( 3 * c )) -t 5:5|cpus 1, memory 512 MiB, swap 0 B",
		"box=1x-shared workers=2 threads=5": "c=100%; |-w $(( 2 * c )) -t 5:5|cpus 100%, memory 512 MiB, swap 0 B",
	}
	for _, pt := range points {
		w, ok := want[pt.Key]
		if !ok {
			continue
		}
		delete(want, pt.Key)
		spec, err := p.ServerSpec(pt.Params)
		if err != nil {
			t.Fatalf("%s: %v", pt.Key, err)
		}
		parts := strings.Split(w, "|")
		if !strings.HasPrefix(spec.Shell, parts[0]) || !strings.Contains(spec.Shell, parts[1]) || spec.Limits.String() != parts[2] {
			t.Errorf("%s: server %q with limits %q, want %q…%q with %q", pt.Key, spec.Shell, spec.Limits.String(), parts[0], parts[1], parts[2])
		}
	}
	if len(want) > 0 || len(points) != 8 {
		t.Errorf("%d points; not found: %v", len(points), want)
	}
}
