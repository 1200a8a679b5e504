package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestServerSecretsMasked: a secret used in the server section (a secret
// variable in run:, a credential-named environment variable, a
// credential-named server.env value) is masked in result.json's
// server.command, the reports and the stored plan, and in the server's
// errors on stderr and their log tail.
func TestServerSecretsMasked(t *testing.T) {
	t.Setenv("LOADLAB_TEST_DB_PASSWORD", "envPassw0rd")
	srv, url, _ := targetServer(t, target.Options{}, ": {{ api_token }} {{ env.LOADLAB_TEST_DB_PASSWORD }}; exec %s")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
vars: { api_token: tok-s3cretvalue }
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 3 } }
%s
`, url, srv)})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) == 0 {
		t.Fatal("nothing written")
	}
	sawCommand := false
	for _, f := range append(files, "stdout", "stderr") {
		var text string
		switch f {
		case "stdout":
			text = stdout
		case "stderr":
			text = stderr
		default:
			if filepath.Base(f) == "server.log" {
				continue // the server's own output, kept as written
			}
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			text = string(b)
		}
		for _, s := range []string{"tok-s3cretvalue", "envPassw0rd"} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %s", f, s)
			}
		}
		if filepath.Base(f) == "result.json" {
			sawCommand = strings.Contains(text, `: *** ***; exec`)
		}
	}
	if !sawCommand {
		t.Error("result.json's server.command is not the masked command")
	}

	// A server that fails to start: its error and log tail on stderr.
	addr := targettest.FreeAddr(t)
	path = writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: http://%s
vars: { api_token: tok-s3cretvalue }
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
server:
  run: "echo token={{ api_token }} db=$DB_PASSWORD; exit 3"
  env: { DB_PASSWORD: hunter2db }
  ready: http://%s/health
`, addr, addr)})
	out = t.TempDir()
	_, stderr, code = cli(context.Background(), t, "run", path, "--out", out)
	if code != exitFailed || !strings.Contains(stderr, "token=*** db=***") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	for _, s := range []string{"tok-s3cretvalue", "hunter2db"} {
		if strings.Contains(stderr, s) {
			t.Errorf("stderr shows the secret %s: %s", s, stderr)
		}
	}
}
