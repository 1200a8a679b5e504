package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loadlab/loadlab/internal/store"
)

// oneSessionSite is a login like Redmine's: a CSRF-protected form, and one
// session per user, so that a login ends the user's older session (whose
// next request is sent back to the login form). It counts who logged in
// and how many sessions were cut short.
type oneSessionSite struct {
	mu       sync.Mutex
	users    map[string]string // login: password
	csrf     map[string]string // anonymous session: its form token
	sessions map[string]string // session: login
	current  map[string]string // login: its one live session
	logins   map[string]int    // login: times logged in
	kicked   int               // requests of a session a later login ended
}

func newOneSessionSite(t *testing.T, users map[string]string) (*oneSessionSite, string) {
	s := &oneSessionSite{users: users, csrf: map[string]string{}, sessions: map[string]string{}, current: map[string]string{}, logins: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		id, token := rand.Text(), rand.Text()
		s.mu.Lock()
		s.csrf[id] = token
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "_session", Value: id, Path: "/"})
		fmt.Fprintf(w, `<form action="/login" method="post"><input name="authenticity_token" value="%s"><input name="username"></form>`, token)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("_session")
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil || s.csrf[c.Value] == "" || s.csrf[c.Value] != r.FormValue("authenticity_token") {
			http.Error(w, "Invalid authenticity token", http.StatusUnprocessableEntity)
			return
		}
		delete(s.csrf, c.Value)
		login := r.FormValue("username")
		if pw, ok := s.users[login]; !ok || pw != r.FormValue("password") {
			http.Error(w, `<div class="flash error">Invalid user or password</div>`, http.StatusOK)
			return
		}
		id := rand.Text()
		s.sessions[id] = login
		s.current[login] = id // the user's older session ends here
		s.logins[login]++
		http.SetCookie(w, &http.Cookie{Name: "_session", Value: id, Path: "/"})
		http.Redirect(w, r, "/my/page", http.StatusFound)
	})
	mux.HandleFunc("GET /my/page", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("_session")
		s.mu.Lock()
		defer s.mu.Unlock()
		login := ""
		if err == nil {
			login = s.sessions[c.Value]
		}
		if login == "" || s.current[login] != c.Value {
			if login != "" {
				s.kicked++
			}
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		fmt.Fprintf(w, "<p>Logged in as %s</p>", html.EscapeString(login))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// TestManyUsersRecipe runs the recipe of docs/plan.md ("log in as many
// users"), docs/recipes/many-users.yaml as it is, against a site that keeps
// one session per user: with pick: vu each of the 5 VUs is its own user for
// the whole run, so every check passes and no session is cut short. The
// same plan with all VUs sharing one account logs them out of each other.
func TestManyUsersRecipe(t *testing.T) {
	t.Parallel()
	recipe := filepath.Join("..", "..", "docs", "recipes", "many-users.yaml")
	users := map[string]string{"alice": "alice-pw-1", "bob": "bob-pw-2", "carol": "carol-pw-3", "dave": "dave-pw-4", "erin": "erin-pw-5"}
	site, url := newOneSessionSite(t, users)
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", recipe, "-e", "SITE="+url, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	site.mu.Lock()
	if len(site.logins) != 5 || site.kicked != 0 {
		t.Errorf("logins per user %v, sessions cut short %d; want each of 5 users logged in, none cut short", site.logins, site.kicked)
	}
	for login, n := range site.logins {
		if n != 3 {
			t.Errorf("%s logged in %d times, want 3 (one VU's 3 iterations)", login, n)
		}
	}
	site.mu.Unlock()
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Summary.Checks; c.Failed != 0 || c.Passed == 0 {
		t.Errorf("checks %+v", c)
	}
	if data, _ := os.ReadFile(filepath.Join(out, store.ResultFile)); strings.Contains(string(data), "alice-pw-1") {
		t.Error("a password of users.csv (a secret column) is in result.json")
	}

	// Five VUs on one account: each login ends another VU's session.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "one.csv"), []byte("login,password\nalice,alice-pw-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shared, url := newOneSessionSite(t, users)
	sharedOut := t.TempDir()
	stdout, stderr, _ = cli(context.Background(), t, "run", recipe, "-e", "SITE="+url, "--out", sharedOut,
		"--set", "data.users.csv="+filepath.Join(dir, "one.csv"), "--set", "data.users.pick=sequential")
	r, err = store.ReadResult(sharedOut)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, stdout, stderr)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.kicked == 0 || r.Summary.Checks.Failed == 0 {
		t.Errorf("5 VUs sharing one account: %d sessions cut short, checks %+v; want some of each", shared.kicked, r.Summary.Checks)
	}
	// And pick: vu with that one row refuses to start.
	_, stderr, code = cli(context.Background(), t, "run", recipe, "-e", "SITE="+url, "--set", "data.users.csv="+filepath.Join(dir, "one.csv"))
	if code != 2 || !strings.Contains(stderr, "pick: vu gives each VU its own row, but one.csv has 1 rows for up to 5 VUs (load.closed.vus)") {
		t.Errorf("pick: vu with 1 row for 5 VUs: exit %d: %s", code, stderr)
	}
}

// TestExperimentChecksEveryPointFirst: an experiment whose one point asks
// for more VUs than a pick: vu source has rows stops before any load (exit
// 2), naming the point, rather than after the points before it have run.
func TestExperimentChecksEveryPointFirst(t *testing.T) {
	t.Parallel()
	url, hits := counting(t)
	path := writePlan(t, map[string]string{
		"users.csv": "login\na\nb\nc\n",
		"plan.yaml": `
target: ` + url + `
data: { users: { csv: users.csv, pick: vu } }
steps: [ { get: "/?u={{ users.login }}" } ]
load: { closed: { vus: "{{ n }}", iterations: 1 } }
params: { n: [1, 3, 5] }
baseline: { n: 1 }
repeat: 1
`})
	out := t.TempDir()
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 2 || !strings.Contains(stderr, "point n=5") || !strings.Contains(stderr, "has 3 rows for up to 5 VUs") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests sent before the error", n)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("the results directory got %d entries", len(entries))
	}
}
