package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress shows how a run goes: on a terminal a line rewritten every second
// on stderr; elsewhere (CI logs) one line every 10 seconds.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	live     bool
	total    time.Duration // expected length, zero when unknown
	lastLine time.Duration
	shown    bool
}

// plainEvery is how often a non-terminal gets a progress line.
const plainEvery = 10 * time.Second

func newProgress(io *stdio, s result.Settings) *progress {
	return &progress{w: io.err, live: io.isTerminal(io.err), total: time.Duration(s.Duration)}
}

func (p *progress) point(pt result.Point) { p.update(experiment.Progress{Point: pt}) }

// update shows the newest second: elapsed and ETA, rate, p95, errors,
// active VUs, the server's CPU and RSS, and the run of an experiment.
func (p *progress) update(pr experiment.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := pr.Point
	at := time.Duration(pt.T * float64(time.Second))
	line := ""
	if pr.Runs > 0 {
		line = fmt.Sprintf("run %d/%d %s · ", pr.Run, pr.Runs, pr.PointKey)
	}
	line += fmt.Sprintf("%4.0fs  %8.1f req/s  p95 %6s ms  errors %d  active %d", pt.T, pt.RPS, msText(pt.P95), pt.Errors, pt.Active)
	if pr.Server {
		line += fmt.Sprintf("  server CPU %.0f%% RSS %s", pr.ServerCPU, quantity.FormatBytes(pr.ServerRSS))
	}
	if p.total > 0 && at < p.total {
		line += fmt.Sprintf("  ETA %s", (p.total - at).Round(time.Second))
	}
	if p.live {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	if at-p.lastLine >= plainEvery {
		p.lastLine = at
		fmt.Fprintln(p.w, line)
	}
}

// clear removes the live line so that another line can be printed.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// done clears the live line before the summary.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func msText(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
