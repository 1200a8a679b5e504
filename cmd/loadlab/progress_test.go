package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
)

func TestProgress(t *testing.T) {
	points := func(p *progress) {
		for i := 1; i <= 25; i++ {
			p.update(experiment.Progress{Point: result.Point{T: float64(i), RPS: 1234.5, P95: 12.3, Errors: 2, Active: 50}, Server: true, ServerCPU: 150, ServerRSS: 300 << 20, Run: 2, Runs: 9, PointKey: "threads=4"})
		}
		p.done()
	}
	settings := result.Settings{Duration: result.Duration(30 * time.Second)}

	var live bytes.Buffer
	points(newProgress(&stdio{err: &live, isTerminal: func(io.Writer) bool { return true }}, settings))
	out := live.String()
	if strings.Count(out, "\r\033[K") != 26 || !strings.Contains(out, "run 2/9 threads=4") || !strings.Contains(out, "server CPU 150% RSS 300 MiB") || !strings.Contains(out, "ETA 5s") {
		t.Errorf("terminal:\n%q", out)
	}
	if !strings.HasSuffix(out, "\r\033[K") {
		t.Error("the live line is not cleared before the summary")
	}

	var plain bytes.Buffer
	points(newProgress(&stdio{err: &plain, isTerminal: func(io.Writer) bool { return false }}, settings))
	lines := strings.Split(strings.TrimSpace(plain.String()), "\n")
	if len(lines) != 2 || strings.Contains(plain.String(), "\r") || !strings.Contains(lines[0], "  10s ") || !strings.Contains(lines[1], "  20s ") {
		t.Errorf("CI log: %q, want a line at 10 s and 20 s", plain.String())
	}
}
