package main

import (
	"bytes"
	"context"
	"fmt"
	goio "io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
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
	t.Parallel()
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
	t.Parallel()
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

// TestBodyFileReadOnce: --body-file (a file, or - for stdin from a file or
// a pipe) is held once: the request is sent from the buffer the body was
// read into, so parsing allocates about one body, not two or three; and
// the server gets the body whole.
func TestBodyFileReadOnce(t *testing.T) {
	const size = 16 << 20
	path := filepath.Join(t.TempDir(), "body.bin")
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(in goio.Reader, file string) (*quickRun, uint64) {
		t.Helper()
		var f quickFlags
		if err := f.url.Set("http://127.0.0.1:1/upload"); err != nil {
			t.Fatal(err)
		}
		f.method.Set("POST")
		f.connections, f.requests, f.bodyFile = 1, 1, file
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		q, err := parseQuick(context.Background(), &stdio{in: in, out: goio.Discard, err: goio.Discard}, &f, true)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(q.wire, body) || !bytes.HasPrefix(q.wire, []byte("POST /upload HTTP/1.1\r\n")) || !bytes.Contains(q.wire, []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", size))) {
			t.Fatalf("the request is not the body after its head: %q", q.wire[:min(len(q.wire), 200)])
		}
		return q, after.TotalAlloc - before.TotalAlloc
	}
	if _, alloc := parse(nil, path); alloc > size*11/10 {
		t.Errorf("--body-file FILE allocated %d bytes for a %d-byte body", alloc, size)
	}
	stdin, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if _, alloc := parse(stdin, "-"); alloc > size*11/10 {
		t.Errorf("--body-file - from a file allocated %d bytes for a %d-byte body", alloc, size)
	}
	// A pipe's size is unknown: read in chunks, then copied once.
	if _, alloc := parse(bytes.NewReader(body), "-"); alloc > size*3 {
		t.Errorf("--body-file - from a pipe allocated %d bytes for a %d-byte body", alloc, size)
	}

	// End to end: the server gets the body whole.
	var mu sync.Mutex
	var got []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := goio.ReadAll(r.Body)
		mu.Lock()
		if bytes.Equal(b, body) {
			got = append(got, len(b))
		} else {
			got = append(got, -len(b))
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	if _, stderr, code := cli(context.Background(), t, "run", "--url", srv.URL+"/upload", "-X", "POST", "--body-file", path, "-n", "2", "-c", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != size || got[1] != size {
		t.Errorf("the server got bodies of %v bytes (negative: not the file), want 2 of %d", got, size)
	}
}
