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
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// TestSegmentBadInput: a segment or a start that cannot be is refused
// before any load, with exit 2 and a line that says why.
func TestSegmentBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.yaml")
	os.WriteFile(plain, []byte("target: http://127.0.0.1:1\nload: { closed: { vus: 2, iterations: 1 } }\nsteps: [ { get: / } ]\n"), 0o644)
	open := filepath.Join(dir, "open.yaml")
	os.WriteFile(open, []byte("target: http://127.0.0.1:1\nload: { open: { rate: 50/s, max_vus: 2, duration: 1s } }\nsteps: [ { get: / } ]\n"), 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte("target: http://127.0.0.1:1\nload: { closed: { vus: 2, iterations: 1 } }\nsteps: [ { get: / } ]\nrepeat: 3\n"), 0o644)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", plain, "--segment", "0/4"}, "K must be from 1 to N"},
		{[]string{"run", plain, "--segment", "5/4"}, "K must be from 1 to N"},
		{[]string{"run", plain, "--segment", "1/0"}, "N must be at least 1"},
		{[]string{"run", plain, "--segment", "two"}, "want K/N"},
		{[]string{"run", open, "--segment", "1/4"}, "max_vus 2"},
		{[]string{"run", exp, "--segment", "1/2"}, "is an experiment"},
		{[]string{"run", plain, "--start-at", past}, "is in the past"},
		{[]string{"run", plain, "--start-at", "+-5s"}, "is in the past"},
		{[]string{"run", plain, "--start-at", "tomorrow"}, "RFC 3339"},
		{[]string{"run", "--url", "http://127.0.0.1:1/", "--segment", "1/2"}, "give one"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, stderr, code := cli(ctx, t, c.args...)
		cancel()
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// rowServer is a loopback server that answers in delay and keeps the
// row= and vu= of every query.
func rowServer(t *testing.T, delay time.Duration) (string, func() (rows, vus map[string]int)) {
	var mu sync.Mutex
	rows, vus := map[string]int{}, map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		mu.Lock()
		if v := r.URL.Query().Get("row"); v != "" {
			rows[v]++
		}
		if v := r.URL.Query().Get("vu"); v != "" {
			vus[v]++
		}
		mu.Unlock()
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() (map[string]int, map[string]int) {
		mu.Lock()
		defer mu.Unlock()
		r, v := rows, vus
		rows, vus = map[string]int{}, map[string]int{}
		return r, v
	}
}

// writeRowsPlan writes a plan of a unique data source of n rows and load.
func writeRowsPlan(t *testing.T, dir, url string, rows int, load string) string {
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := range rows {
		fmt.Fprintf(&csv, "r%d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "users.csv"), []byte(csv.String()), 0o644)
	path := filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte(`
name: rows
target: `+url+`
data:
  users: { csv: users.csv, pick: unique }
`+load+`
steps:
  - get: "/?row={{ users.id }}&vu={{ vu }}"
`), 0o644)
	return path
}

// TestSegmentsRunTheWholePlan: three processes' worth of `loadlab run
// --segment K/3` (in-process CLI runs, one after the other) against one
// loopback server send what one run of the whole plan sends: the same
// requests and iterations, each row of a unique source once, each VU
// number in one segment only.
func TestSegmentsRunTheWholePlan(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("four runs against a server")
	}
	url, seen := rowServer(t, 2*time.Millisecond)
	for _, c := range []struct{ name, load string }{
		{"closed", "load: { closed: { vus: 8, iterations: 5 } }"},
		{"open", "load: { open: { rate: 100/s, max_vus: 24, duration: 400ms } }"},
		// Two scenarios of loads of their own read one source: their
		// units interleave (rows 2u and 2u+1), every row once when they
		// do as much work each.
		{"per-scenario", `scenarios:
  signup:
    load: { open: { rate: 50/s, max_vus: 12, duration: 400ms } }
    steps: [ { get: "/?row={{ users.id }}" } ]
  browse:
    load: { closed: { vus: 4, iterations: 5 } }
    steps: [ { get: "/?row={{ users.id }}" } ]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			segmentsRunTheWholePlan(t, url, seen, c.load, c.name == "closed", c.name == "per-scenario")
		})
	}
}

func segmentsRunTheWholePlan(t *testing.T, url string, seen func() (map[string]int, map[string]int), load string, closed, scenarios bool) {
	dir := t.TempDir()
	path := writeRowsPlan(t, dir, url, 40, load)
	if scenarios {
		b, _ := os.ReadFile(path)
		os.WriteFile(path, []byte(strings.Split(string(b), "\nsteps:\n")[0]+"\n"), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, stderr, code := cli(ctx, t, "run", path, "--out", filepath.Join(dir, "whole"), "--no-history"); code != 0 {
		t.Fatalf("whole: exit %d: %s", code, stderr)
	}
	wholeRows, wholeVUs := seen()
	var iterations, requests int64
	for k := 1; k <= 3; k++ {
		out := filepath.Join(dir, fmt.Sprintf("part%d", k))
		if _, stderr, code := cli(ctx, t, "run", path, "--segment", fmt.Sprintf("%d/3", k), "--out", out, "--no-history"); code != 0 {
			t.Fatalf("segment %d: exit %d: %s", k, code, stderr)
		}
		res, err := store.ReadResult(out)
		if err != nil {
			t.Fatal(err)
		}
		if res.Part == nil || len(res.Part.Segments) != 1 || res.Part.Segments[0] != k || res.Part.N != 3 || res.Part.ClockOffset != result.NoClockOffset {
			t.Errorf("segment %d: part %+v", k, res.Part)
		}
		iterations += res.Summary.Iterations
		requests += res.Summary.Requests
	}
	rows, vus := seen()
	if iterations != 40 || requests != 40 {
		t.Errorf("segments: %d iterations, %d requests; want 40 of each, as the whole", iterations, requests)
	}
	if len(rows) != 40 || len(wholeRows) != 40 {
		t.Errorf("rows used: %d by the segments, %d by the whole; want all 40", len(rows), len(wholeRows))
	}
	for r, n := range rows {
		if n != 1 {
			t.Errorf("row %s used %d times", r, n)
		}
	}
	if !closed {
		return // an open load's VU numbers are a pool's
	}
	if len(vus) != 8 || len(wholeVUs) != 8 {
		t.Errorf("VU numbers: segments %v, whole %v", vus, wholeVUs)
	}
	for v, n := range vus {
		if n != 5 || wholeVUs[v] != 5 {
			t.Errorf("VU %s: %d requests in the segments, %d in the whole; want 5", v, n, wholeVUs[v])
		}
	}
}

// TestStartAt: --start-at +1s holds the load until that instant, and the
// result says when it was asked to start, how late it began, and that no
// clock offset was estimated.
func TestStartAt(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a second")
	}
	url, _ := rowServer(t, 0)
	dir := t.TempDir()
	path := writeRowsPlan(t, dir, url, 10, "load: { closed: { vus: 2, iterations: 2 } }")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now()
	out := filepath.Join(dir, "out")
	if _, stderr, code := cli(ctx, t, "run", path, "--start-at", "+1s", "--out", out, "--no-history"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Part
	if p == nil || p.StartAt == nil {
		t.Fatalf("part %+v", p)
	}
	if d := p.StartAt.Sub(before); d < 900*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("start_at %v is %v after the command began; want about 1s", p.StartAt, d)
	}
	if !res.Started.Equal(*p.StartAt) {
		t.Errorf("started %v, start_at %v", res.Started, p.StartAt)
	}
	if p.StartLatenessMS < 0 || p.StartLatenessMS > 1000 || p.ClockOffset != result.NoClockOffset || p.N != 1 {
		t.Errorf("part %+v", p)
	}
	if res.Summary.Iterations != 4 {
		t.Errorf("%d iterations, want 4", res.Summary.Iterations)
	}
}
