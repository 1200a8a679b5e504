package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestMergeEqualsTheWhole is issue 17's must-hold test: for a closed, an
// open, a ramping and a per-scenario plan, four `loadlab run --segment
// K/4` runs against one loopback loadlab target with a fixed 5 ms delay,
// merged, measure what one run of the whole plan does: the same requests,
// iterations and arrivals for fixed work, percentiles within the
// histogram's precision of the target's delay; merging merges equals
// merging all; every report format renders the merge and compare takes
// it.
func TestMergeEqualsTheWhole(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("twenty runs of about a second against a server")
	}
	const delay = 5 * time.Millisecond
	url := targettest.Start(t, target.Options{Delay: delay})
	for _, c := range []struct {
		name, load string
		fixed      bool // a fixed count of work: totals exact
	}{
		{"closed", "load: { closed: { vus: 6, iterations: 10 } }\nsteps: [ { get: /, expect: { status: 200, headers: { Content-Type: text/plain } } } ]", true},
		{"open", "load: { open: { rate: 200/s, max_vus: 40, duration: 1s } }\nsteps: [ { get: / } ]", true},
		{"ramping", "load: { stages: [ { vus: 0 }, { ramp: 8, over: 600ms }, { hold: 400ms } ] }\nsteps: [ { get: / } ]", false},
		{"per-scenario", `scenarios:
  signup:
    load: { open: { rate: 100/s, max_vus: 20, duration: 1s } }
    steps: [ { post: /users, name: sign up } ]
  browse:
    load: { closed: { vus: 5, iterations: 8 } }
    steps: [ { get: /, name: home } ]`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plan.yaml")
			os.WriteFile(path, []byte("name: "+c.name+"\ntarget: "+url+"\nthresholds: [ p50(latency) < 2s ]\n"+c.load+"\n"), 0o644)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			must := func(args ...string) string {
				t.Helper()
				stdout, stderr, code := cli(ctx, t, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s\n%s", args, code, stderr, stdout)
				}
				return stdout
			}
			whole := filepath.Join(dir, "whole")
			must("run", path, "--out", whole, "--no-history")
			var parts []string
			startAt := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
			for k := 1; k <= 4; k++ {
				p := filepath.Join(dir, fmt.Sprintf("part%d", k))
				// One after the other here, so only the first starts at
				// --start-at; the others are late, and say so.
				args := []string{"run", path, "--segment", fmt.Sprintf("%d/4", k), "--out", p, "--no-history"}
				if k == 1 {
					args = append(args, "--start-at", startAt)
				}
				must(args...)
				parts = append(parts, p)
			}
			merged := filepath.Join(dir, "merged")
			must(append(append([]string{"merge"}, parts...), "--out", merged)...)
			w, err := store.ReadResult(whole)
			if err != nil {
				t.Fatal(err)
			}
			m, err := store.ReadResult(merged)
			if err != nil {
				t.Fatal(err)
			}
			if m.Part == nil || fmt.Sprint(m.Part.Segments) != "[1 2 3 4]" || m.Part.N != 4 || len(m.Part.Parts) != 4 {
				t.Fatalf("merged part %+v", m.Part)
			}
			ws, ms := w.Summary, m.Summary
			if c.fixed {
				if ms.Requests != ws.Requests || ms.Iterations != ws.Iterations || ms.Responses != ws.Responses {
					t.Errorf("merged %d requests, %d iterations; whole %d, %d", ms.Requests, ms.Iterations, ws.Requests, ws.Iterations)
				}
				if ms.Dropped+ms.Unsent != 0 || ws.Dropped+ws.Unsent != 0 {
					t.Errorf("dropped/unsent: merged %d/%d, whole %d/%d", ms.Dropped, ms.Unsent, ws.Dropped, ws.Unsent)
				}
			}
			for i, st := range m.Steps {
				if c.fixed && fmt.Sprint(st.ChecksByName) != fmt.Sprint(w.Steps[i].ChecksByName) {
					t.Errorf("step %d: merged checks by name %v, whole %v", i, st.ChecksByName, w.Steps[i].ChecksByName)
				}
				if st.Summary.Requests != sumSteps(t, parts, i) {
					t.Errorf("step %d: merged %d requests, the parts %d", i, st.Summary.Requests, sumSteps(t, parts, i))
				}
			}
			// The merge's percentiles are exactly those of the parts'
			// histograms merged here, whatever the machine's timing.
			if want := partsP50(t, parts); ms.Latency.P50 != want {
				t.Errorf("merged p50 %.3f ms; the parts' histograms merged give %.3f ms", ms.Latency.P50, want)
			}
			// The fixed delay is a floor no response beats (less the
			// histogram's 3 significant digits). The ceiling only catches a
			// hang: CI's busy machine measured a whole run's p50 at 10.8 ms.
			lo, hi := delay.Seconds()*1000*0.999, 100.0
			if ms.Latency.P50 < lo || ms.Latency.P50 > hi || ws.Latency.P50 < lo || ws.Latency.P50 > hi {
				t.Errorf("p50 latency: merged %.3f ms, whole %.3f ms; want both in [%.0f, %.0f]", ms.Latency.P50, ws.Latency.P50, lo, hi)
			}
			if ms.Latency.Count != ms.Responses {
				t.Errorf("merged latency count %d, %d responses", ms.Latency.Count, ms.Responses)
			}
			if len(m.Thresholds) != len(w.Thresholds) || len(m.Thresholds) == 0 || slices.ContainsFunc(m.Thresholds, func(t result.ThresholdResult) bool { return !t.Pass }) {
				t.Errorf("thresholds on the merge: %+v", m.Thresholds)
			}
			var series int64
			for _, p := range m.Series {
				series += p.Responses
			}
			if series != ms.Responses {
				t.Errorf("the merged series has %d responses, the summary %d", series, ms.Responses)
			}
			// Segments keep each second's histogram, so the merged seconds'
			// percentiles are exact (and carry the merged histogram on).
			for _, p := range m.Series {
				if p.Responses > 0 && p.Hist == "" {
					t.Errorf("merged second t=%.2f with %d responses has no histogram", p.T, p.Responses)
				}
			}
			if w.Series[0].Hist != "" {
				t.Errorf("a whole run's series keeps histograms")
			}
			for _, p := range m.Part.Parts[1:] {
				if len(p.Validity) == 0 {
					continue
				}
				for _, v := range m.Validity {
					if strings.HasPrefix(v.Message, fmt.Sprintf("segment %d of 4: ", p.Segments[0])) {
						goto named
					}
				}
				t.Errorf("segment %d's warnings %v are not in the merge's %v", p.Segments[0], p.Validity, m.Validity)
			named:
			}

			// Associative: (1+2) + (3+4) = 1+2+3+4.
			a, b, ab := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "ab")
			must("merge", parts[0], parts[1], "--out", a, "--partial")
			must("merge", parts[2], parts[3], "--out", b, "--partial")
			must("merge", a, b, "--out", ab)
			if x, y := resultJSON(t, merged), resultJSON(t, ab); !bytes.Equal(x, y) {
				t.Errorf("merging merges differs from merging all: %s", firstDiff(x, y))
			}

			for _, f := range formats {
				must("report", merged, "--format", f)
			}
			must("compare", whole, merged)
		})
	}
}

// partsP50 merges the latency histograms of every step and class of the
// parts that count in latency, as result.json keeps them, and gives their p50 in milliseconds.
func partsP50(t *testing.T, parts []string) float64 {
	t.Helper()
	h := metrics.NewHistogram()
	for _, p := range parts {
		r, err := store.ReadResult(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range r.Steps {
			for class, enc := range st.Histograms.Latency {
				if class == "failed" { // not a latency: see metrics.Summarize
					continue
				}
				x, err := metrics.Decode(enc)
				if err != nil {
					t.Fatal(err)
				}
				h.Merge(x)
			}
		}
	}
	return metrics.Percentiles(h).P50
}

func sumSteps(t *testing.T, parts []string, i int) int64 {
	var n int64
	for _, p := range parts {
		r, err := store.ReadResult(p)
		if err != nil {
			t.Fatal(err)
		}
		n += r.Steps[i].Summary.Requests
	}
	return n
}

// resultJSON is the result in dir, without what differs between two
// merges of the same parts by nature: nothing.
func resultJSON(t *testing.T, dir string) []byte {
	b, err := os.ReadFile(filepath.Join(dir, store.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(r, "", " ")
	return out
}

// TestMergeRefuses: parts of different plans, overlapping or missing
// segments, a whole run, an experiment and one of its runs are refused with exit 2 and
// what is wrong.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("five runs against a server")
	}
	url, _ := rowServer(t, 0)
	dir := t.TempDir()
	plan := func(name string, vus int) string {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte(fmt.Sprintf("target: %s\nload: { closed: { vus: %d, iterations: 1 } }\nsteps: [ { get: / } ]\n", url, vus)), 0o644)
		return p
	}
	a, b := plan("a", 3), plan("b", 4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(path, seg, out string) string {
		args := []string{"run", path, "--out", filepath.Join(dir, out), "--no-history"}
		if seg != "" {
			args = append(args, "--segment", seg)
		}
		if _, stderr, code := cli(ctx, t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return filepath.Join(dir, out)
	}
	a1, a2, a3 := run(a, "1/3", "a1"), run(a, "2/3", "a2"), run(a, "3/3", "a3")
	b2 := run(b, "2/3", "b2")
	whole := run(a, "", "whole")
	exp := filepath.Join(dir, "exp")
	os.MkdirAll(exp, 0o755)
	os.WriteFile(filepath.Join(exp, "experiment.json"), []byte("{}"), 0o644)
	// A real experiment's run, given as a part: refused by what its
	// result says (the point it ran), not by where it lies.
	repeated := filepath.Join(dir, "repeated.yaml")
	os.WriteFile(repeated, []byte(fmt.Sprintf("target: %s\nload: { closed: { vus: 1, iterations: 1 } }\nsteps: [ { get: / } ]\nrepeat: 2\n", url)), 0o644)
	expRun := filepath.Join(run(repeated, "", "repeated"), "runs", "001")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{a1, b2, a3}, "different plans"},
		{[]string{a1, a2, a2, a3}, "segment 2 of 3 is in both"},
		{[]string{a1, a3}, "segments 2 of 3 are missing"},
		{[]string{a1, a2, whole}, "not a segment's result"},
		{[]string{a1, a2, a3, exp}, "is an experiment"},
		{[]string{a1, a2, expRun}, "is a run of an experiment (point baseline)"},
		{[]string{filepath.Join(expRun, "result.json"), a1}, "is a run of an experiment"},
		{[]string{a1, filepath.Join(dir, "nothing")}, "no such file"},
	} {
		_, stderr, code := cli(ctx, t, append([]string{"merge"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("merge %v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, stderr, code := cli(ctx, t, "merge", a3, a1, a2); code != 0 {
		t.Errorf("merge in any order: exit %d: %s", code, stderr)
	}
}

// firstDiff shows where two texts first differ, a few lines around.
func firstDiff(x, y []byte) string {
	xl, yl := strings.Split(string(x), "\n"), strings.Split(string(y), "\n")
	for i := 0; i < min(len(xl), len(yl)); i++ {
		if xl[i] != yl[i] {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n%s\n---\n%s", i+1, strings.Join(xl[lo:min(i+2, len(xl))], "\n"), strings.Join(yl[lo:min(i+2, len(yl))], "\n"))
		}
	}
	return fmt.Sprintf("%d lines against %d", len(xl), len(yl))
}
