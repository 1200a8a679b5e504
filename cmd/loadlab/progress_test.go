package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
)

// clocked makes a progress whose clock moves one second an update.
func clocked(w io.Writer, terminal bool, s result.Settings, width int) *progress {
	p := newProgress(&stdio{err: w, isTerminal: func(io.Writer) bool { return terminal }}, s)
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { t = t.Add(time.Second); return t }
	p.width = func() int { return width }
	return p
}

func TestProgress(t *testing.T) {
	t.Parallel()
	settings := result.Settings{Duration: result.Duration(30 * time.Second)}
	second := func(i int) result.Point {
		return result.Point{T: float64(i), RPS: 1234.5, P95: 12.3, Errors: 2, Active: 50}
	}

	// A single run on a terminal: rewritten every second, with the time
	// left, cleared before the summary.
	var live bytes.Buffer
	p := clocked(&live, true, settings, 0)
	for i := 1; i <= 25; i++ {
		p.update(runner.Progress{Point: second(i), Server: true, ServerCPU: 150, ServerRSS: 300 << 20})
	}
	p.done()
	out := live.String()
	if strings.Count(out, "\r\033[K") != 26 || !strings.Contains(out, "server CPU 150% RSS 300 MiB") || !strings.Contains(out, "ETA 5s") {
		t.Errorf("terminal:\n%q", out)
	}
	if !strings.HasSuffix(out, "\r\033[K") {
		t.Error("the live line is not cleared before the summary")
	}

	// A narrow terminal: the line is cut so that it never wraps.
	var narrow bytes.Buffer
	p = clocked(&narrow, true, settings, 40)
	p.update(runner.Progress{Point: second(1), Run: 2, Runs: 9, PointKey: "threads=4"})
	if line := strings.TrimPrefix(narrow.String(), "\r\033[K"); len([]rune(line)) != 39 || !strings.HasPrefix(line, "run 2/9 threads=4") {
		t.Errorf("40 columns: %q", line)
	}

	// A single run in a CI log: a line every 10 s.
	var single bytes.Buffer
	p = clocked(&single, false, settings, 0)
	for i := 1; i <= 25; i++ {
		p.update(runner.Progress{Point: second(i)})
	}
	p.done()
	if lines := strings.Split(strings.TrimSpace(single.String()), "\n"); len(lines) != 2 || strings.Contains(single.String(), "\r") {
		t.Errorf("single run in a CI log, want 2 lines over 25 s:\n%s", single.String())
	}

	// An experiment in a CI log: the sweep writes one line per finished
	// run, so runs shorter than a minute get none from here.
	var plain bytes.Buffer
	p = clocked(&plain, false, settings, 0)
	for run := 1; run <= 3; run++ {
		for i := 1; i <= 30; i++ {
			p.update(runner.Progress{Point: second(i), Run: run, Runs: 4, PointKey: "threads=4"})
		}
	}
	p.done()
	if plain.Len() != 0 {
		t.Errorf("CI log of 30 s runs, want no progress lines:\n%s", plain.String())
	}
	// A run that goes on longer: a line a minute, with the time left for
	// the whole experiment, so that a stuck run still shows.
	long := result.Settings{Duration: result.Duration(150 * time.Second)}
	var slow bytes.Buffer
	p = clocked(&slow, false, long, 0)
	for i := 1; i <= 150; i++ {
		p.update(runner.Progress{Point: second(i), Run: 1, Runs: 2, PointKey: "threads=4"})
	}
	p.done()
	lines := strings.Split(strings.TrimSpace(slow.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "run 1/2 ") {
		t.Fatalf("CI log of a 150 s run, want 2 lines:\n%s", slow.String())
	}
	// 61 s into the first of two 150 s runs, 60 s of wall clock since the
	// first update: 0.41 of 2 runs done, 1.59 left at that pace.
	if !strings.Contains(lines[0], "  61s ") || !strings.Contains(lines[0], "ETA 3m55s") {
		t.Errorf("first line %q, want ETA 3m55s at 61 s", lines[0])
	}
}
