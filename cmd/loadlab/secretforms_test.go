package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/loadlab/loadlab/internal/target/targettest"
)

// The echo server: the test binary run as the server under test (echoMain,
// from TestMain), which logs every value it gets and sends each back in
// every form, as a careless server does.
// It makes up the session token itself (plantedToken): the plan knows
// it only by capturing it.
const echoAddrEnv = "LOADLAB_TEST_ECHO_ADDR"

// echoForms are the texts a value takes in a response or a log.
func echoForms(v string) []string {
	jsonHTML, _ := json.Marshal(v)
	var plain strings.Builder
	e := json.NewEncoder(&plain)
	e.SetEscapeHTML(false)
	e.Encode(v)
	return []string{v, url.QueryEscape(v), url.PathEscape(v), string(jsonHTML[1 : len(jsonHTML)-1]),
		strings.TrimSuffix(plain.String(), "\n")[1 : plain.Len()-2], html.EscapeString(v),
		base64.StdEncoding.EncodeToString([]byte(v)), base64.URLEncoding.EncodeToString([]byte(v)),
		base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
}

// echoMain serves as the echo server when the test binary is started as
// one, and exits; otherwise it returns at once.
func echoMain() {
	addr := os.Getenv(echoAddrEnv)
	if addr == "" {
		return
	}
	token := plantedToken
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	echo := func(w io.Writer, what string, values []string) {
		for _, v := range values {
			for _, f := range echoForms(v) {
				logf("%s: %s", what, f)
				fmt.Fprintf(w, "%s: %s\n", what, f)
			}
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		logf("login body %s", body)
		// Logged before loadlab has captured it, and flushed past what
		// server.log's masking holds back before the answer goes.
		logf("issued session %s\n%s", token, strings.Repeat("-", 8192))
		time.Sleep(50 * time.Millisecond)
		form, _ := url.ParseQuery(string(body))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"session_token": token, "you_sent": form.Get("password")})
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		logf("api body %s", body)
		var j map[string]any
		json.Unmarshal(body, &j)
		key, _ := j["api_key"].(string)
		w.WriteHeader(http.StatusServiceUnavailable)
		echo(w, "header", []string{r.Header.Get("X-Shout"), r.Header.Get("X-Echo"), r.Header.Get("X-Pw"), r.Header.Get("X-Sig")})
		echo(w, "api_key", []string{key})
	})
	if err := http.ListenAndServe(addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// The secrets planted, one in each way a secret reaches a run: a secret
// variable, a literal form field and JSON key named as credentials, a
// value made from a secret by a function, and a captured session token.
// Each has the characters that escaping changes.
const (
	plantedVar   = `Pw9+s/cr&"t<x`
	plantedForm  = `Fm7+l/t&"pw<y`
	plantedJSON  = `Js5+k/y&"z<w`
	plantedToken = `Tk4+s/ss&"n<v`
)

// recorder is a receiver of pushes that keeps every body, decoded.
func recorder(t *testing.T) (string, func() []byte) {
	var mu sync.Mutex
	var all []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Encoding") == "snappy" {
			if d, err := snappy.Decode(nil, b); err == nil {
				b = d
			}
		}
		mu.Lock()
		all = append(append(all, b...), '\n')
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return append([]byte(nil), all...)
	}
}

// TestSecretInEveryForm plants one secret in each way a secret reaches a
// run (above), against a server that logs each value it gets and sends it
// back raw, URL-, JSON- and HTML-escaped and in base64; it runs a plan
// (with the dashboard, remote-write and OTLP receivers, --junit and the
// history) and an experiment, then greps every byte of every output for
// every form of every secret: result.json, report.html and .md, the CSVs,
// junit.xml, failures/, server.log, experiment.db, the history database,
// the dashboard's event stream and the pushed payloads. A server file
// made from a secret is written 0600.
func TestSecretInEveryForm(t *testing.T) {
	dir := t.TempDir()
	history := filepath.Join(dir, "history.db")
	t.Setenv("LOADLAB_HISTORY", history)
	addr := targettest.FreeAddr(t)
	marker := fmt.Sprintf("-test.run=^NoTest%d$", time.Now().UnixNano())
	env, _ := json.Marshal(map[string]string{echoAddrEnv: addr})
	plan := fmt.Sprintf(`target: http://%[1]s
vars:
  pw: { value: '%[2]s', secret: true }
server:
  run: [%[3]q, %[4]q]
  env: %[5]s
  ready: http://%[1]s/health
  files:
    secret.conf: { content: "password={{ pw }}" }
    plain.conf: { content: "threads=4" }
steps:
  - post: /login
    form: { user: ann, password: '%[6]s' }
    capture: { session_token: { json: "$.session_token" } }
  - post: /api
    headers: { X-Shout: "{{ upper(pw) }}", X-Echo: "{{ session_token }}", X-Pw: "{{ pw }}", X-Sig: "{{ upper(session_token) }}" }
    json: { name: widget, api_key: '%[7]s' }
    expect: { status: 200 }
load: { closed: { vus: 1, iterations: 5 } }
`, addr, plantedVar, os.Args[0], marker, env, plantedForm, plantedJSON)
	path := writePlan(t, map[string]string{"plan.yaml": plan})
	experiment := writePlan(t, map[string]string{"plan.yaml": plan + "params: { a: [1] }\n"})

	rw, rwBodies := recorder(t)
	otlp, otlpBodies := recorder(t)
	board := targettest.FreeAddr(t)
	events := make(chan []byte, 1)
	go func() {
		var b []byte
		defer func() { events <- b }()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get("http://" + board + "/events")
			if err != nil {
				continue
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				b = append(append(b, sc.Bytes()...), '\n')
				if sc.Text() == "event: end" {
					sc.Scan()
					b = append(append(b, sc.Bytes()...), '\n')
					return
				}
			}
			return
		}
	}()
	out := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdout, stderr, code := cli(ctx, t, "run", path, "--out", out, "--junit", filepath.Join(out, "junit.xml"),
		"--dashboard="+board, "--dashboard-linger", "2s",
		"--push", "prometheus-rw="+rw, "--push", "otlp="+otlp)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (the checks threshold fails): %s", code, stderr)
	}
	texts := map[string][]byte{"run stdout": []byte(stdout), "run stderr": []byte(stderr)}
	select {
	case b := <-events:
		if len(b) == 0 {
			t.Error("the dashboard's event stream was not read")
		}
		texts["dashboard events"] = b
	case <-ctx.Done():
		t.Error("the dashboard's event stream did not end")
	}
	texts["remote-write payloads"], texts["OTLP payloads"] = rwBodies(), otlpBodies()

	exp := filepath.Join(dir, "experiment")
	stdout, stderr, code = cli(ctx, t, "run", experiment, "--out", exp)
	if code != 3 {
		t.Fatalf("experiment: exit %d: %s", code, stderr)
	}
	texts["experiment stdout"], texts["experiment stderr"] = []byte(stdout), []byte(stderr)

	want := map[string]bool{"result.json": false, "report.html": false, "report.md": false, "steps.csv": false, "series.csv": false,
		"junit.xml": false, "server.log": false, "experiment.db": false, "runs.csv": false, "points.csv": false}
	failures := 0
	for _, root := range []string{out, exp, history} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			texts[rel] = b
			if _, ok := want[d.Name()]; ok {
				want[d.Name()] = true
			}
			if strings.Contains(rel, "failures") {
				failures++
			}
			return nil
		})
	}
	for name, found := range want {
		if !found {
			t.Errorf("no %s was written", name)
		}
	}
	if failures == 0 {
		t.Error("no failures/ file was written")
	}
	if len(texts[filepath.Join("run", "server.log")]) == 0 || !strings.Contains(string(texts[filepath.Join("run", "server.log")]), "api body") {
		t.Errorf("server.log does not hold what the server logged:\n%s", texts[filepath.Join("run", "server.log")])
	}
	var forms []string
	for _, s := range []string{plantedVar, plantedForm, plantedJSON, plantedToken, strings.ToUpper(plantedVar), strings.ToUpper(plantedToken)} {
		forms = append(forms, echoForms(s)...)
	}
	for name, b := range texts {
		for _, f := range forms {
			if i := strings.Index(string(b), f); i >= 0 {
				t.Errorf("%s holds %q: …%s…", name, f, b[max(0, i-60):min(len(b), i+len(f)+20)])
			}
		}
	}

	st, err := os.Stat(filepath.Join(filepath.Dir(path), "secret.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("secret.conf, made from a secret, has mode %v, want 0600", st.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Join(filepath.Dir(path), "plain.conf")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("plain.conf: %v, %v, want mode 0644", st, err)
	}
}
