package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
)

// TestMissedCaptureSaysWhy: a POST whose CSRF token is refused (422, no
// Location) leaves its Location capture unset; the next step, which takes
// an id out of it with split(), is not sent, and the journey's abort says
// in words what the capture did not find and what the POST answered,
// never Go's "interface conversion: interface {} is nil, not string".
func TestMissedCaptureSaysWhy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, "422 invalid authenticity token", http.StatusUnprocessableEntity)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	p, err := plan.Parse("test.yaml", []byte(`
target: `+srv.URL+`
steps:
  - post: /issues
    name: POST /issues
    form: { authenticity_token: stale }
    follow_redirects: false
    capture:
      issue_location: { header: Location }
  - get: "/issues/{{ split(issue_location, '/')[4] }}"
    name: GET /issues/:id
load: { closed: { vus: 1, iterations: 2 } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Plan(ctx, p, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const want = "capture issue_location found no Location header: the POST answered 422"
	found := false
	for reason, n := range r.Aborts {
		if strings.Contains(reason, "interface") || strings.Contains(reason, "nil") {
			t.Errorf("an abort shows a Go type error: %q", reason)
		}
		if strings.HasPrefix(reason, "GET /issues/:id: ") && strings.HasSuffix(reason, want) && n == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("aborts %v: want GET /issues/:id's, twice, ending %q", r.Aborts, want)
	}
}
