package hartest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"sync"
)

// Tracker is a small issue tracker with what a recording must be correlated
// on: a CSRF-protected login form, a project id in the login's redirect, an
// issue created by a form whose id is in the redirect, a JSON API that wants
// the CSRF token in a header, and a logout. Its ids start where New says, so
// a fresh one does not give the recorded ids.
type Tracker struct {
	mu       sync.Mutex
	sessions map[string]*trackerSession
	project  int
	nextID   int
	issues   map[int]string
	comments int
}

type trackerSession struct {
	csrf   string
	logged bool
}

// Password is the one user's password.
const Password = "s3cret-horse"

// NewTracker makes a tracker whose project is project and whose issues are
// numbered from firstIssue.
func NewTracker(project, firstIssue int) *Tracker {
	return &Tracker{sessions: map[string]*trackerSession{}, project: project, nextID: firstIssue, issues: map[int]string{}}
}

// Created is how many issues and comments were created.
func (t *Tracker) Created() (issues, comments int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.issues), t.comments
}

func (t *Tracker) session(w http.ResponseWriter, r *http.Request) *trackerSession {
	if c, err := r.Cookie("_tracker_session"); err == nil {
		if s, ok := t.sessions[c.Value]; ok {
			return s
		}
	}
	id := rand.Text()
	s := &trackerSession{csrf: rand.Text()}
	t.sessions[id] = s
	http.SetCookie(w, &http.Cookie{Name: "_tracker_session", Value: id, Path: "/", HttpOnly: true})
	return s
}

func page(w http.ResponseWriter, s *trackerSession, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!DOCTYPE html><html><head><meta name="csrf-token" content="%s"><title>Tracker</title>
<link rel="stylesheet" href="/app.css"></head><body>%s</body></html>`, s.csrf, body)
}

// ServeHTTP serves the tracker.
func (t *Tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.session(w, r)
	proj := strconv.Itoa(t.project)
	verified := func() bool {
		tok := r.PostFormValue("authenticity_token")
		if tok == "" {
			tok = r.Header.Get("X-CSRF-Token")
		}
		if tok != s.csrf {
			http.Error(w, "422 invalid authenticity token", http.StatusUnprocessableEntity)
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, "body { margin: 0 }")
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, _ *http.Request) {
		page(w, s, fmt.Sprintf(`<form method="post" action="/login"><input type="hidden" name="authenticity_token" value="%s">
<input name="email"><input type="password" name="password"><button>Log in</button></form>`, s.csrf))
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if !verified() {
			return
		}
		if r.PostFormValue("password") != Password {
			http.Error(w, "401 wrong password", http.StatusUnauthorized)
			return
		}
		s.logged = true
		http.Redirect(w, r, "/projects/"+proj+"/issues", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /projects/{p}/issues", func(w http.ResponseWriter, r *http.Request) {
		if !s.logged || r.PathValue("p") != proj {
			http.NotFound(w, r)
			return
		}
		page(w, s, fmt.Sprintf(`<h1>Issues</h1><form method="post" action="/projects/%s/issues">
<input type="hidden" name="authenticity_token" value="%s"><input name="title"><button>New issue</button></form>`, proj, s.csrf))
	})
	mux.HandleFunc("POST /projects/{p}/issues", func(w http.ResponseWriter, r *http.Request) {
		if !s.logged || r.PathValue("p") != proj {
			http.NotFound(w, r)
			return
		}
		if !verified() {
			return
		}
		id := t.nextID
		t.nextID++
		t.issues[id] = r.PostFormValue("title")
		http.Redirect(w, r, fmt.Sprintf("/projects/%s/issues/%d", proj, id), http.StatusFound)
	})
	mux.HandleFunc("GET /projects/{p}/issues/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		title, ok := t.issues[id]
		if !s.logged || r.PathValue("p") != proj || !ok {
			http.NotFound(w, r)
			return
		}
		page(w, s, fmt.Sprintf(`<h1 id="issue-%d">%s</h1>`, id, html.EscapeString(title)))
	})
	mux.HandleFunc("POST /projects/{p}/issues/{id}/comments", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		if _, ok := t.issues[id]; !s.logged || r.PathValue("p") != proj || !ok {
			http.NotFound(w, r)
			return
		}
		if !verified() {
			return
		}
		var c struct {
			Body string `json:"body"`
		}
		if json.NewDecoder(r.Body).Decode(&c) != nil || c.Body == "" {
			http.Error(w, "400 want {\"body\": ...}", http.StatusBadRequest)
			return
		}
		t.comments++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id": %d, "issue_id": %d}`, 1000+t.comments, id)
	})
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		if !verified() {
			return
		}
		s.logged = false
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
	mux.ServeHTTP(w, r)
}
