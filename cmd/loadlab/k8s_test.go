package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestK8sBadInput: what cannot run as segments in pods is refused before
// any manifest is written, with exit 2 and a line that says why.
func TestK8sBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	steps := "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\n"
	plain := write("plain.yaml", steps+"load: { closed: { vus: 2, iterations: 1 } }\n")
	open := write("open.yaml", steps+"load: { open: { rate: 50/s, max_vus: 2, duration: 1s } }\n")
	exp := write("exp.yaml", steps+"load: { closed: { vus: 2, iterations: 1 } }\nrepeat: 3\n")
	server := write("server.yaml", steps+"load: { closed: { vus: 2, iterations: 1 } }\nserver: { run: [sleep, \"60\"], ready: \"http://127.0.0.1:1/\" }\n")
	write("outside/users.csv", "id\nr1\n")
	outside := write("plans/outside.yaml", steps+"data: { users: { csv: ../outside/users.csv } }\nload: { closed: { vus: 2, iterations: 1 } }\n")
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"k8s", plain}, "--parallel must be at least 1, got 0"},
		{[]string{"k8s", plain, "--parallel", "-1"}, "--parallel must be at least 1"},
		{[]string{"k8s", open, "--parallel", "4"}, "max_vus 2"},
		{[]string{"k8s", exp, "--parallel", "2"}, "is an experiment"},
		{[]string{"k8s", server, "--parallel", "2"}, "--set server=null"},
		{[]string{"k8s", outside, "--parallel", "2"}, "outside the plan's directory"},
		{[]string{"k8s", plain, "--parallel", "2", "--start-at", past}, "is in the past"},
		{[]string{"k8s", plain, "--parallel", "2", "--name", "Bad_Name"}, "want a DNS label"},
		{[]string{"k8s", plain, "--parallel", "2", "--access-mode", "ReadOnlyMany"}, "want ReadWriteOnce or ReadWriteMany"},
		{[]string{"k8s", plain, "--parallel", "2", "--storage-size", "lots"}, "--storage-size"},
		{[]string{"k8s", plain, "--parallel", "2", "--rerun", "3"}, "--rerun 3: want a segment from 1 to --parallel (2)"},
		{[]string{"k8s", plain, "--parallel", "2", "--pod-cpu", "two"}, `--pod-cpu "two": want a positive Kubernetes quantity`},
		{[]string{"k8s", plain, "--parallel", "2", "--pod-memory", "-1Gi"}, `--pod-memory "-1Gi": want a positive`},
		{[]string{"k8s", filepath.Join(dir, "missing.yaml"), "--parallel", "2"}, "cannot read the plan"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		stdout, stderr, code := cli(ctx, t, c.args...)
		cancel()
		if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%v: exit %d, %q, %d bytes out; want 2 and %q", c.args, code, stderr, len(stdout), c.want)
		}
	}
	// The server plan is accepted once its server is dropped, and the
	// segments are told to drop it too.
	stdout, stderr, code := cli(context.Background(), t, "k8s", server, "--parallel", "2", "--set", "server=null")
	if code != 0 || !strings.Contains(stdout, "--set server=null") || !strings.Contains(stdout, "completionMode: Indexed") {
		t.Errorf("--set server=null: exit %d: %s\n%s", code, stderr, stdout)
	}
}
