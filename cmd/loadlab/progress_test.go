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

	// An experiment in a CI log: a line every 10 s through every run, with
	// the time left for the whole experiment.
	var plain bytes.Buffer
	p = clocked(&plain, false, settings, 0)
	for run := 1; run <= 3; run++ {
		for i := 1; i <= 30; i++ {
			p.update(runner.Progress{Point: second(i), Run: run, Runs: 4, PointKey: "threads=4"})
		}
	}
	p.done()
	lines := strings.Split(strings.TrimSpace(plain.String()), "\n")
	if len(lines) != 8 || strings.Contains(plain.String(), "\r") {
		t.Fatalf("CI log, want 8 lines over 89 s:\n%s", plain.String())
	}
	if !strings.HasPrefix(lines[0], "run 1/4 ") || !strings.HasPrefix(lines[7], "run 3/4 ") {
		t.Errorf("CI log does not follow the runs:\n%s", plain.String())
	}
	// 2.7 runs in 81 s: 9 s of this one left and 30 s of the last.
	if !strings.Contains(lines[7], "  21s ") || !strings.Contains(lines[7], "ETA 39s") {
		t.Errorf("last line %q, want ETA 39s at 21 s", lines[7])
	}
}
