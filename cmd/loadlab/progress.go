package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress shows how a run goes: on a terminal a line rewritten every second
// on stderr, cut to the terminal's width; elsewhere (CI logs) one line every
// 10 seconds of wall-clock time for a single run. An experiment in a CI log
// gets one line per finished run (the sweep writes it, with the run's
// figures), and from here only a line a minute while a run goes on longer,
// so that a stuck run still shows.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	width func() int // the terminal's columns, 0 when unknown
	now   func() time.Time
	total time.Duration // a run's expected length, zero when unknown

	started   time.Time // the first update
	lastPlain time.Time
	firstRun  int // the first experiment run seen (a resumed one starts late)
	lastRun   int // the run of the last update
	shown     bool
}

// plainEvery is how often a non-terminal gets a progress line of a single
// run; plainRunEvery, of an experiment's run that goes on.
const (
	plainEvery    = 10 * time.Second
	plainRunEvery = time.Minute
)

func newProgress(io *stdio, s result.Settings) *progress {
	p := &progress{w: io.err, live: io.isTerminal(io.err), now: time.Now, total: time.Duration(s.Duration)}
	p.width = func() int {
		if f, ok := io.err.(*os.File); ok {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil {
				return w
			}
		}
		return 0
	}
	return p
}

func (p *progress) point(pt result.Point) { p.update(runner.Progress{Point: pt}) }

// update shows the newest second: elapsed and ETA, rate, p95, errors,
// active VUs, the server's CPU and RSS, and the run of an experiment.
func (p *progress) update(pr runner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.started.IsZero() {
		p.started, p.lastPlain, p.firstRun = now, now, pr.Run
	}
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
	if eta, ok := p.eta(pr, at, now); ok {
		line += fmt.Sprintf("  ETA %s", eta.Round(time.Second))
	}
	if p.live {
		if w := p.width(); w > 1 && len([]rune(line)) >= w {
			line = string([]rune(line)[:w-1])
		}
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	every := plainEvery
	if pr.Runs > 0 {
		every = plainRunEvery
	}
	if pr.Run != p.lastRun {
		p.lastRun, p.lastPlain = pr.Run, now // a new run: its minute starts now
	}
	if now.Sub(p.lastPlain) >= every {
		p.lastPlain = now
		fmt.Fprintln(p.w, line)
	}
}

// eta is the time left: of the run when its length is known; of the whole
// experiment from the pace of the runs done since this command started.
func (p *progress) eta(pr runner.Progress, at time.Duration, now time.Time) (time.Duration, bool) {
	frac := 0.0 // of the current run
	if p.total > 0 {
		frac = min(1, float64(at)/float64(p.total))
	}
	if pr.Runs == 0 {
		return p.total - at, p.total > 0 && at < p.total
	}
	done := float64(pr.Run-p.firstRun) + frac
	if done <= 0 {
		return 0, false
	}
	left := float64(pr.Runs-pr.Run+1) - frac
	return time.Duration(float64(now.Sub(p.started)) * left / done), true
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
