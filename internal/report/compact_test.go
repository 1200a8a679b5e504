package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/store"
)

// TestCompactGoldens pins the compact summaries of recorded searches and
// comparisons (no load): a quick run's (testdata/quick-run.json: loadlab
// run http://127.0.0.1:18377/ -c 2 -d 2s against loadlab target, the plan
// run's is run.txt of TestGolden), the capacity search of testdata/capacity, as
// loadlab capacity prints it, and the A/B of testdata/ab/paired.json (a
// copy of cmd/loadlab's: loadlab target --cpu 1ms against --cpu 1.08ms,
// -c 2 -d 2s, 6 rounds), as loadlab ab and compare print it. go test
// -update rewrites them.
func TestCompactGoldens(t *testing.T) {
	t.Parallel()
	c, err := ReadCapacity("testdata/capacity")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/ab/paired.json")
	if err != nil {
		t.Fatal(err)
	}
	var ab experiment.Outcome
	if err := json.Unmarshal(data, &ab); err != nil {
		t.Fatal(err)
	}
	quick, err := store.ReadResult("testdata/quick-run.json")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := experiment.LoadOutcome("testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	// The demo's summary fits a screen: 45 lines at 100 columns at most,
	// its recommendation within the first 10 (TestDemo checks the same of
	// a live run, whose validity lines vary with the machine).
	demoText := render(t, func(w io.Writer) error { return CompactVerdict(w, demo, "results") })
	lines := strings.Split(strings.TrimRight(string(demoText), "\n"), "\n")
	shown := 0
	for _, line := range lines {
		shown += max(1, (len([]rune(line))+99)/100)
	}
	if shown > 45 || !slices.ContainsFunc(lines[:min(10, len(lines))], func(l string) bool { return strings.HasPrefix(l, "recommendation: ") }) {
		t.Errorf("the recorded demo's summary takes %d lines at 100 columns (want 45 at most), with the recommendation in the first 10:\n%s", shown, demoText)
	}
	for _, tt := range []struct {
		name string
		f    func(w io.Writer) error
	}{
		{"quick-run.txt", func(w io.Writer) error { return Text(w, quick) }},
		{"capacity-compact.txt", c.Doc.WriteText},
		{"ab-compact.txt", func(w io.Writer) error { return CompactVerdict(w, &ab, "results/ab") }},
		{"demo-compact.txt", func(w io.Writer) error { return CompactVerdict(w, demo, "results") }},
	} {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, render(t, tt.f)) })
	}
}

// TestPickNamesItsTradeOff: the runs of testdata/experiment (workers 1 to
// 4, a recorded sweep) with workers=1 as the baseline: the pick, workers=2,
// is told with what it costs against workers=1 in latency and memory, not
// only its throughput.
func TestPickNamesItsTradeOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/experiment")); err != nil {
		t.Fatal(err)
	}
	path := dir + "/experiment.json"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	o["params"].([]any)[0].(map[string]any)["baseline"] = "1"
	for _, p := range o["points"].([]any) {
		p.(map[string]any)["baseline"] = p.(map[string]any)["key"] == "workers=1"
	}
	delete(o, "verdict")
	if data, err = json.Marshal(o); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := experiment.LoadOutcome(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := render(t, func(w io.Writer) error { return CompactVerdict(w, out, "results/workers-sweep") })
	if !bytes.Contains(got, []byte("its trade-off against the baseline workers=1: p50 -61% (13.10 ms against 33.66) (untested: n=2), p95 +36%")) {
		t.Errorf("the pick does not name its trade-off:\n%s", got)
	}
	golden(t, "experiment-tradeoff.txt", got)
}

// TestCompareGolden pins the compact form of a compare of two result sets,
// N runs a side as benchstat reads them: the recorded demo's five runs of
// workers=1 against its five of workers=4, each side a comma list.
func TestCompareGolden(t *testing.T) {
	t.Parallel()
	o, err := experiment.LoadOutcome("testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	side := func(point string) experiment.Side {
		t.Helper()
		var paths []string
		for _, r := range o.Runs {
			if r.Point == point && r.Dir != "" {
				paths = append(paths, filepath.Join("testdata/demo", r.Dir, store.ResultFile))
			}
		}
		s, err := experiment.LoadSide(strings.Join(paths, ","), "")
		if err != nil || len(s.Results) != 5 {
			t.Fatalf("%s: %d runs, %v", point, len(s.Results), err)
		}
		s.Label = "workers=" + strings.TrimPrefix(point, "workers=")
		return s
	}
	c := experiment.Compare(side("workers=1"), side("workers=4"))
	golden(t, "compare-compact.txt", render(t, func(w io.Writer) error { return Comparison(w, c) }))
}
