package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/store"
)

// railsSite is a Rails-like sign-in: GET /users/sign_in serves a form with
// a CSRF token (in a meta tag and a hidden input) and sets a session
// cookie; POST /users/sign_in with a wrong password answers 422 with the
// same page, whose flash ("Invalid user or password") sits after more than
// 2 KiB of head, the token echoed in the page and a link with an API key.
func railsSite(t *testing.T, csrf, session string) string {
	page := func(flash string) string {
		return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Shop · Sign in</title>
  <meta name="csrf-param" content="authenticity_token">
  <meta name="csrf-token" content="` + csrf + `">
  <link rel="stylesheet" href="/assets/application-3f2a.css">
  <style>` + strings.Repeat(".nav a { color: #333; padding: 0 1em; }\n", 60) + `</style>
  <script>window.dataLayer = window.dataLayer || [];</script>
</head>
<body class="sessions new">
  <nav><a href="/">Shop</a> <a href="/export?api_key=LINK-SEKRET-KEY">Export</a></nav>
  ` + flash + `
  <form action="/users/sign_in" method="post">
    <input type="hidden" name="authenticity_token" value="` + csrf + `">
    <input name="user[email]"> <input name="user[password]" type="password">
  </form>
</body>
</html>`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.SetCookie(w, &http.Cookie{Name: "_shop_session", Value: session, Path: "/", HttpOnly: true})
		if r.Method == http.MethodPost {
			r.ParseForm()
			if r.Form.Get("authenticity_token") != csrf {
				http.Error(w, "bad token", http.StatusUnprocessableEntity)
				return
			}
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, page(`<div class="flash alert">Invalid user or password</div>`))
			return
		}
		io.WriteString(w, page(""))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFailingResponseKept: a refused Rails sign-in, end to end. The first
// failing response of the step is kept whole in failures/login.http
// (status, headers, the page), secrets masked: the password, the captured
// CSRF token it echoes, the session cookie, an API key in a link. The
// summary and result.json show the flash, not the <!DOCTYPE; `loadlab
// report DIR --failures` prints the response; an experiment keeps one per
// run directory.
func TestFailingResponseKept(t *testing.T) {
	t.Parallel()
	const csrf, session, password = "CSRF-SEKRET-0123456789abcdef", "SESSION-SEKRET-42", "PASSWORD-SEKRET"
	url := railsSite(t, csrf, session)
	plan := `
name: sign-in
target: ` + url + `
vars: { password: ` + password + ` }
steps:
  - get: /users/sign_in
    name: form
    capture: { csrf: { css: "input[name=authenticity_token]", attr: value } }
  - post: /users/sign_in
    name: login
    form: { "user[email]": a@example.com, "user[password]": "{{ password }}", authenticity_token: "{{ csrf }}" }
    expect: { status: 200, contains: Signed in successfully }
load: { closed: { vus: 2, iterations: 3 } }
`
	path := writePlan(t, map[string]string{"plan.yaml": plan})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != exitThreshold { // the default checks threshold fails
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	const flash = `<div class="flash alert">Invalid user or password</div>`
	if !strings.Contains(stdout, "first failed check of login: status is 200; status 422, the page's flash or error element: "+flash) ||
		!strings.Contains(stdout, "the whole response: failures/login.http") {
		t.Errorf("the summary does not show the flash:\n%s", stdout)
	}
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Steps[1].FailedCheck
	if f == nil || f.Body != flash || f.Shown != "the page's flash or error element" || f.File != "failures/login.http" || r.Steps[0].FailedCheck != nil {
		t.Fatalf("first failed check %+v", f)
	}
	kept, err := os.ReadFile(filepath.Join(out, "failures", "login.http"))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(kept, []byte(flash)); i < 2048 {
		t.Errorf("the flash is at byte %d of the kept response: the test wants it after 2 KiB of head", i)
	}
	for _, want := range []string{"HTTP/1.1 422 Unprocessable Entity\r\n", "Content-Type: text/html; charset=utf-8\r\n", "Set-Cookie: _shop_session=***; Path=/; HttpOnly\r\n", "\r\n\r\n<!DOCTYPE html>", flash, `<meta name="csrf-token" content="***">`, "/export?api_key=***", "</html>"} {
		if !bytes.Contains(kept, []byte(want)) {
			t.Errorf("failures/login.http lacks %q:\n%s", want, kept)
		}
	}
	secrets := []string{csrf, session, password, "LINK-SEKRET-KEY"}
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %s", p, s)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(stdout+stderr, s) {
			t.Errorf("the summary holds %s", s)
		}
	}

	printed, stderr, code := cli(context.Background(), t, "report", out, "--failures")
	if code != 0 || !strings.Contains(printed, "== step login: status is 200 failed; "+filepath.Join(out, "failures", "login.http")+"\nHTTP/1.1 422 Unprocessable Entity\n") || !strings.Contains(printed, flash) {
		t.Errorf("report --failures: exit %d %s\n%s", code, stderr, printed)
	}
	if _, stderr, code := cli(context.Background(), t, "report", out, "--failures", "--format", "html"); code != exitUsage {
		t.Errorf("--failures --format html: exit %d %s", code, stderr)
	}

	// An experiment keeps them in each run's directory.
	exp := writePlan(t, map[string]string{"plan.yaml": plan + "repeat: 2\n"})
	expOut := t.TempDir()
	if _, stderr, code := cli(context.Background(), t, "run", exp, "--out", expOut); code != exitThreshold {
		t.Fatalf("experiment: exit %d: %s", code, stderr)
	}
	printed, stderr, code = cli(context.Background(), t, "report", expOut, "--failures")
	for run := 1; run <= 2; run++ {
		file := filepath.Join(expOut, "runs", fmt.Sprintf("%03d", run), "failures", "login.http")
		if _, err := os.Stat(file); err != nil {
			t.Errorf("run %d: %v", run, err)
		}
		if !strings.Contains(printed, fmt.Sprintf("== run %d (", run)) {
			t.Errorf("report --failures of the experiment lacks run %d: exit %d %s\n%s", run, code, stderr, headings(printed))
		}
	}
}

// headings are the lines of report --failures that say whose response
// follows.
func headings(printed string) string {
	var out []string
	for _, l := range strings.Split(printed, "\n") {
		if strings.HasPrefix(l, "== ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
