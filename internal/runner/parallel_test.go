package runner

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// assetServer answers / at once and every /a… after 100 ms, and counts
// what a browser-like client does to it: the asset requests in flight at
// once (the most), when the first began and the last ended, the requests
// per path and the connections opened. /a1 sets a cookie; /check shows the
// cookies it was sent.
type assetServer struct {
	url string

	mu          sync.Mutex
	inflight    int
	peak        int
	first, last time.Time
	count       map[string]int
	conns       int
}

func newAssetServer(t *testing.T) *assetServer {
	s := &assetServer{count: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.count[r.URL.Path]++
		s.mu.Unlock()
		switch {
		case r.URL.Path == "/check":
			fmt.Fprint(w, "cookie: "+r.Header.Get("Cookie"))
			return
		case r.URL.Path == "/missing.css":
			http.NotFound(w, r)
			return
		case r.URL.Path == "/old/moved.css":
			w.Header().Set("Location", "a4") // relative: /old/a4, a page
			w.WriteHeader(http.StatusFound)
			return
		case !strings.HasPrefix(r.URL.Path, "/a"):
			fmt.Fprint(w, "page")
			return
		}
		s.mu.Lock()
		if s.first.IsZero() {
			s.first = time.Now()
		}
		s.inflight++
		s.peak = max(s.peak, s.inflight)
		s.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		s.mu.Lock()
		s.inflight--
		s.last = time.Now()
		s.mu.Unlock()
		if r.URL.Path == "/a1" {
			http.SetCookie(w, &http.Cookie{Name: "seen", Value: "a1", Path: "/"})
		}
		fmt.Fprint(w, "asset")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *assetServer) snapshot() (peak int, span time.Duration, count map[string]int, conns int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	count = map[string]int{}
	for k, v := range s.count {
		count[k] = v
	}
	return s.peak, s.last.Sub(s.first), count, s.conns
}

// parallelPlan is a page, a group of n assets (/a1…), and a step after it
// that checks the cookie /a1 set.
func parallelPlan(t *testing.T, target string, n, most int, load, extra string) *plan.Plan {
	var assets []string
	for i := 1; i <= n; i++ {
		assets = append(assets, fmt.Sprintf("{ get: /a%d, expect: { status: 200 } }", i))
	}
	if extra != "" {
		assets = append(assets, extra)
	}
	p, err := plan.Parse("test.yaml", []byte(`
name: assets
target: `+target+`
load: `+load+`
scenarios:
  browse:
    steps:
      - get: /
      - parallel: { name: assets of /, max: `+fmt.Sprint(most)+`, steps: [ `+strings.Join(assets, ", ")+` ] }
      - get: /check
        expect: { contains: "seen=a1" }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func stepCounts(res *result.Result) map[string]int64 {
	out := map[string]int64{}
	for _, st := range res.Steps {
		out[st.Name] = st.Summary.Requests
	}
	return out
}

// TestParallelGroup: a parallel group's requests are in flight at once, at
// most max of them, on the VU's connections (kept between iterations),
// each counted and checked under its own step; the iteration goes on when
// all have ended, and closed and open loads count iterations and VUs as
// ever. On both engines.
func TestParallelGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load against a slow server")
	}
	for _, eng := range []string{"epoll", "portable"} {
		t.Run(eng, func(t *testing.T) {
			t.Setenv("LOADLAB_ENGINE", eng)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, tt := range []struct {
				max    int
				lo, hi time.Duration
				peak   int
			}{{6, 95 * time.Millisecond, 350 * time.Millisecond, 6}, {2, 295 * time.Millisecond, 650 * time.Millisecond, 2}} {
				srv := newAssetServer(t)
				res, err := Plan(ctx, parallelPlan(t, srv.url, 6, tt.max, "{ closed: { vus: 1, iterations: 1 } }", ""), Options{Workers: 1})
				if err != nil {
					t.Fatal(err)
				}
				peak, span, count, conns := srv.snapshot()
				t.Logf("max %d: 6 assets of 100 ms took %v, %d at once", tt.max, span.Round(time.Millisecond), peak)
				if peak != tt.peak || span < tt.lo || span > tt.hi {
					t.Errorf("max %d: %d at once over %v, want %d over %v..%v", tt.max, peak, span, tt.peak, tt.lo, tt.hi)
				}
				if conns-1 != tt.max { // the first is the preflight's
					t.Errorf("max %d: %d connections after the preflight's, want %d (the VU's, and max-1 more)", tt.max, conns-1, tt.max)
				}
				if s := res.Summary; s.Iterations != 1 || s.Aborted != 0 || s.Checks.Failed != 0 || s.Requests != 8 || count["/a6"] != 1 {
					t.Errorf("max %d: summary %+v, server %v", tt.max, s, count)
				}
			}

			// Closed: 2 VUs × 3 iterations, 3 at once; a missing asset
			// fails its own check only.
			srv := newAssetServer(t)
			res, err := Plan(ctx, parallelPlan(t, srv.url, 4, 3, "{ closed: { vus: 2, iterations: 3 } }", "{ get: /missing.css, expect: { status: 200 } }"), Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			peak, _, count, conns := srv.snapshot()
			counts := stepCounts(res)
			if res.Summary.Iterations != 6 || res.Summary.Aborted != 0 || res.Summary.VUsPeak != 2 || peak > 6 || conns-1 > 6 {
				t.Errorf("closed: summary %+v; server: %d at once, %d connections", res.Summary, peak, conns)
			}
			for _, name := range []string{"GET /", "GET /a1", "GET /a4", "GET /missing.css", "GET /check"} {
				if counts[name] != 6 {
					t.Errorf("closed: step counts %v, server %v", counts, count)
					break
				}
			}
			for _, st := range res.Steps {
				want := result.Checks{Passed: 6}
				switch st.Name {
				case "GET /":
					want = result.Checks{}
				case "GET /missing.css":
					want = result.Checks{Failed: 6}
				}
				if st.Summary.Checks != want {
					t.Errorf("closed: step %s checks %+v, want %+v", st.Name, st.Summary.Checks, want)
				}
			}

			// Open: 8 arrivals in 2 s, each a new visitor.
			srv = newAssetServer(t)
			res, err = Plan(ctx, parallelPlan(t, srv.url, 3, 6, "{ open: { rate: 4/s, max_vus: 4, duration: 2s } }", ""), Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, _, count, _ = srv.snapshot()
			s := res.Summary
			if s.Iterations != 8 || s.Dropped != 0 || s.Aborted != 0 || s.Checks.Failed != 0 || count["/a3"] != 8 || stepCounts(res)["GET /a2"] != 8 {
				t.Errorf("open: summary %+v, server %v", s, count)
			}

			// A request of the group that cannot be built (a capture that
			// found nothing) starts no more of it; the journey ends,
			// aborted, when the one in flight has ended.
			srv = newAssetServer(t)
			p, err := plan.Parse("test.yaml", []byte(`
target: `+srv.url+`
load: { closed: { vus: 1, iterations: 2 } }
scenarios:
  browse:
    steps:
      - get: /
        capture: { tok: { header: X-None } }
      - parallel: { max: 2, steps: [ { get: /a1 }, { get: "/a2?t={{ tok }}" }, { get: /a3 } ] }
      - get: /check
`), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err = Plan(ctx, p, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, _, count, _ = srv.snapshot()
			if s := res.Summary; s.Iterations != 0 || s.Aborted != 2 || count["/a1"] != 2 || count["/a2"] != 0 || count["/a3"] != 0 || count["/check"] != 0 {
				t.Errorf("a request that cannot be built: summary %+v, server %v", s, count)
			}

			// A redirect in a group is followed on its lane, resolved
			// against its own request's path (/old/moved.css), not the
			// last one the VU built (/a1).
			srv = newAssetServer(t)
			p, err = plan.Parse("test.yaml", []byte(`
target: `+srv.url+`
load: { closed: { vus: 1, iterations: 2 } }
steps:
  - parallel: { max: 2, steps: [ { get: /old/moved.css, expect: { status: 200 } }, { get: /a1 }, { get: /a2 } ] }
`), plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err = Plan(ctx, p, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, _, count, _ = srv.snapshot()
			if s := res.Summary; s.Iterations != 2 || s.Checks.Failed != 0 || count["/old/a4"] != 2 || count["/a4"] != 0 || stepCounts(res)["GET /old/moved.css"] != 4 {
				t.Errorf("a redirect in a group: summary %+v, server %v, steps %v", s, count, stepCounts(res))
			}

			// A load whose time is up mid-group: the groups in progress
			// finish in the grace period, every one whole.
			srv = newAssetServer(t)
			start := time.Now()
			res, err = Plan(ctx, parallelPlan(t, srv.url, 6, 2, "{ closed: { vus: 2, duration: 500ms } }", ""), Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, _, count, _ = srv.snapshot()
			if s := res.Summary; s.Iterations < 2 || s.Abandoned != 0 || s.Checks.Failed != 0 || count["/a1"] != count["/a6"] || int64(count["/a6"]) != s.Iterations || time.Since(start) > 10*time.Second {
				t.Errorf("time up mid-group: summary %+v, server %v, %v", s, count, time.Since(start))
			}
		})
	}
}

// TestParallelGroupHTTP2: over HTTP/2 (h2c) a group's requests are streams
// in flight at once, as many as max.
func TestParallelGroupHTTP2(t *testing.T) {
	s := &assetServer{count: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2", http.StatusHTTPVersionNotSupported)
			return
		}
		s.mu.Lock()
		s.count[r.URL.Path]++
		if s.first.IsZero() && strings.HasPrefix(r.URL.Path, "/a") {
			s.first = time.Now()
		}
		s.inflight++
		s.peak = max(s.peak, s.inflight)
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/a") {
			time.Sleep(100 * time.Millisecond)
		}
		s.mu.Lock()
		s.inflight--
		if strings.HasPrefix(r.URL.Path, "/a") {
			s.last = time.Now()
		}
		s.mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	p, err := plan.Parse("test.yaml", []byte(`
target: `+srv.URL+`
http: { version: 2 }
load: { closed: { vus: 1, iterations: 1 } }
steps:
  - get: /
    expect: { status: 200 }
  - parallel: { max: 4, steps: [ { get: /a1, expect: { status: 200 } }, { get: /a2 }, { get: /a3 }, { get: /a4 }, { get: /a5 }, { get: /a6 }, { get: /a7 }, { get: /a8 } ] }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Plan(ctx, p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	peak, span, count, _ := s.snapshot()
	t.Logf("h2c, max 4: 8 assets of 100 ms took %v, %d at once", span.Round(time.Millisecond), peak)
	if sm := res.Summary; sm.Iterations != 1 || sm.Checks.Failed != 0 || sm.Requests != 9 || sm.Protocol != "h2c" || peak != 4 || span < 195*time.Millisecond || span > 450*time.Millisecond || count["/a8"] != 1 {
		t.Errorf("summary %+v; server: %d at once over %v, %v", sm, peak, span, count)
	}
}
