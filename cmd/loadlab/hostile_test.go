package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// TestQuerySecretsMasked: credentials in URL query strings (?api_key=,
// token=, password=, access_token=, and a query: map's password) are sent
// as written, and masked in result.json, the reports, the summary and the
// stored plan; in quick mode's --url too.
func TestQuerySecretsMasked(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RawQuery)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	secrets := []string{"QKEYabc123", "TOKxyz789", "ACCtok4567", "PWq12345"}
	check := func(what, out, stdout string) {
		t.Helper()
		entries, _ := os.ReadDir(out)
		if len(entries) == 0 {
			t.Fatalf("%s: nothing in --out", what)
		}
		texts := map[string]string{"stdout": stdout}
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(out, e.Name()))
			texts[e.Name()] = string(b)
		}
		for name, text := range texts {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("%s: %s shows the secret %s", what, name, s)
				}
			}
		}
		if !strings.Contains(stdout, "=***") {
			t.Errorf("%s: the summary does not show the masked URL:\n%s", what, stdout)
		}
	}

	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", srv.URL+"/x?api_key=QKEYabc123&token=TOKxyz789&page=2", "-n", "2", "-c", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	check("quick mode", out, stdout)

	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
steps:
  - get: /a?access_token=ACCtok4567&x=1
  - get: /b
    query: { password: PWq12345, q: 1 }
load: { closed: { vus: 1, iterations: 1 } }
`, srv.URL)})
	out = t.TempDir()
	stdout, stderr, code = cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	check("plan", out, stdout)
	mu.Lock()
	defer mu.Unlock()
	sent := "&" + strings.Join(seen, "&") + "&"
	for _, w := range []string{"api_key=QKEYabc123", "token=TOKxyz789", "access_token=ACCtok4567", "password=PWq12345"} {
		if !strings.Contains(sent, "&"+w+"&") {
			t.Errorf("the server never saw %q: %v", w, seen)
		}
	}
}

// TestResumeRemovesTempFiles: the temporary files a killed loadlab left
// while it wrote experiment.json or a run's report are removed when the
// experiment is run again; its own files stay.
func TestResumeRemovesTempFiles(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 2 } }
params: { a: [1, 2] }
`, srv.URL)})
	out := t.TempDir()
	if _, stderr, code := cli(context.Background(), t, "run", path, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	left := []string{filepath.Join(out, ".experiment.json.tmp-1234"), filepath.Join(out, "runs", "001", ".report.html.tmp-5678")}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := cli(context.Background(), t, "run", path, "--out", out); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	for _, p := range []string{"experiment.json", "experiment.db", filepath.Join("runs", "001", "report.html")} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
