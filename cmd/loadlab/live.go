package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/loadlab/loadlab/internal/dashboard"
	"github.com/loadlab/loadlab/internal/drive"
	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/telemetry"
)

// liveOutputs are a command's --metrics-addr and --push receivers; nil
// when it has neither.
type liveOutputs struct {
	ctx     context.Context // the command's: an interrupt skips --metrics-linger
	io      *stdio
	live    *telemetry.Live
	srv     *telemetry.Server
	pushers []*telemetry.Pusher
	linger  time.Duration
	// json: the summary is JSON on stdout, so the pushes' counts go to stderr.
	json bool

	mu        sync.Mutex
	lastRun   int
	runs      int    // an experiment's runs in all
	lastPoint string // the point of run lastRun

	// board is --dashboard's; end is what its page says at the end.
	board       *dashboard.Board
	end         dashboard.End
	boardLinger time.Duration
}

// pushWait is how long the end of a command waits for the last pushes.
const pushWait = 5 * time.Second

// startLive starts serving and pushing before any load, so that a busy
// port or a bad URL is an error before a request is sent.
func startLive(ctx context.Context, io *stdio, f *quickFlags) (*liveOutputs, error) {
	return startLiveAs(ctx, io, f, "run")
}

// startLiveAs is startLive for the command named cmd (its errors' prefix).
func startLiveAs(ctx context.Context, io *stdio, f *quickFlags, cmd string) (*liveOutputs, error) {
	if f.open && f.dashboard == "" {
		f.dashboard = dashboard.DefaultAddr
	}
	if f.metricsAddr == "" && len(f.outputs) == 0 && f.dashboard == "" {
		return nil, nil
	}
	outs := make([]telemetry.Output, 0, len(f.outputs))
	for _, s := range f.outputs {
		o, err := telemetry.ParseOutput(s)
		if err != nil {
			return nil, usageError(fmt.Errorf("%s: --push %w", cmd, err))
		}
		outs = append(outs, o)
	}
	l := &liveOutputs{ctx: ctx, io: io, live: telemetry.New(), linger: f.metricsLinger, json: f.json}
	if f.metricsAddr != "" {
		srv, err := telemetry.Serve(f.metricsAddr, l.live, os.Getenv(telemetry.TokenEnv))
		if err != nil {
			return nil, usageError(fmt.Errorf("%s: --metrics-addr %s: %w", cmd, f.metricsAddr, err))
		}
		l.srv = srv
		if srv.Loopback {
			_, port, _ := net.SplitHostPort(srv.Addr)
			fmt.Fprintf(io.err, "loadlab: metrics at http://%s/metrics, on loopback only (--metrics-addr 0.0.0.0:%s serves other machines)\n", srv.Addr, port)
		} else {
			fmt.Fprintf(io.err, "loadlab: metrics at http://%s/metrics, open to other machines; a scrape needs the token %s (authorization: { credentials: %s } in Prometheus's scrape config, or ?token=)\n", srv.Addr, srv.Token, srv.Token)
		}
	}
	if f.dashboard != "" {
		b, err := dashboard.Start(dashboard.Options{Addr: f.dashboard, Live: l.live, ReportDir: f.out, Token: os.Getenv("LOADLAB_DASHBOARD_TOKEN")})
		if err != nil {
			l.close()
			return nil, usageError(fmt.Errorf("%s: --dashboard %s: %w", cmd, f.dashboard, err))
		}
		l.board, l.boardLinger = b, f.dashboardLinger
		if b.Loopback {
			fmt.Fprintf(io.err, "loadlab: dashboard at %s, on loopback only\n", b.URL())
		} else {
			fmt.Fprintf(io.err, "loadlab: dashboard at %s, open to other machines; the page asks for the token %s (or open %s#token=%s)\n", b.URL(), b.Token, b.URL(), b.Token)
		}
		if f.open {
			u := b.URL()
			if b.Token != "" {
				u += "#token=" + b.Token
			}
			if err := dashboard.Open(u); err != nil {
				fmt.Fprintf(io.err, "loadlab: warning: --open could not open a browser (open %s yourself): %v\n", b.URL(), err)
			}
		}
	}
	for _, o := range outs {
		p, err := telemetry.StartPush(o, l.live, telemetry.DefaultPushInterval)
		if err != nil {
			l.close()
			return nil, usageError(fmt.Errorf("%s: %w", cmd, err))
		}
		l.pushers = append(l.pushers, p)
	}
	return l, nil
}

// setReportDir gives the dashboard the directory whose report.html the page
// links at the end.
func (l *liveOutputs) setReportDir(dir string) {
	if l != nil && l.board != nil {
		l.board.SetReportDir(dir)
	}
}

// setQuota gives the dashboard the server's memory_quota (bytes).
func (l *liveOutputs) setQuota(q int64) {
	if l != nil && l.board != nil {
		l.board.SetQuota(q)
	}
}

// result gives the dashboard's last word: the run's validity warnings, or
// that it was interrupted. res may be nil.
func (l *liveOutputs) result(res *result.Result, err error) {
	if l == nil {
		return
	}
	l.end = dashboard.End{}
	if err != nil {
		l.end.Error = err.Error()
	}
	if res != nil {
		l.end.Interrupted = res.Summary.Interrupted
		for _, w := range res.Validity {
			l.end.Warnings = append(l.end.Warnings, w.Message)
		}
	}
}

// runEnded gives the dashboard an experiment's run that has ended (its
// result written): the run now going, by the progress it reported.
func (l *liveOutputs) runEnded(r *result.Result) {
	if l == nil || l.board == nil || r == nil {
		return
	}
	l.mu.Lock()
	run, runs, point := l.lastRun, l.runs, l.lastPoint
	l.mu.Unlock()
	s := r.Summary
	dr := dashboard.Run{Run: run, Runs: runs, Point: point, RPS: s.ThroughputRPS,
		P: [3]float64{s.Latency.P50, s.Latency.P95, s.Latency.P99}, ErrorRate: s.ErrorRate, Interrupted: s.Interrupted}
	if c := r.Capacity; c != nil {
		dr.Capacity, dr.CapacityBy = c.Answer(), c.By
	}
	l.board.RunEnded(dr)
}

// schedule gives the dashboard an experiment's planned order, before its
// first run: the runs a resume found done with their figures.
func (l *liveOutputs) schedule(order []drive.Planned) {
	if l == nil || l.board == nil {
		return
	}
	s := dashboard.Schedule{Runs: make([]dashboard.Slot, len(order))}
	for i, o := range order {
		sl := dashboard.Slot{Run: o.Run, Point: o.Point, Rep: o.Rep}
		if r := o.Before; r != nil {
			sum := r.Summary
			sl.Done, sl.RPS, sl.ErrorRate = true, sum.ThroughputRPS, sum.ErrorRate
			sl.P = [3]float64{sum.Latency.P50, sum.Latency.P95, sum.Latency.P99}
		}
		s.Runs[i] = sl
	}
	l.board.Scheduled(s)
}

// runStarted marks a run (quick mode, a plan) as going.
func (l *liveOutputs) runStarted() {
	if l != nil {
		l.live.RunStarted()
	}
}

// progress passes the server's figures on to the live metrics, and counts
// an experiment's runs, before next hears pr.
func (l *liveOutputs) progress(next func(runner.Progress)) func(runner.Progress) {
	if l == nil {
		return next
	}
	return func(pr runner.Progress) {
		l.mu.Lock()
		if pr.Run != 0 && pr.Run != l.lastRun {
			l.lastRun = pr.Run
			l.live.RunStarted()
			if l.board != nil {
				l.board.RunStarted(dashboard.RunStart{Run: pr.Run, Runs: pr.Runs, Point: pr.PointKey})
			}
		}
		if pr.Run != 0 {
			l.runs, l.lastPoint = pr.Runs, pr.PointKey
		}
		l.mu.Unlock()
		if pr.Server {
			l.live.Server(pr.ServerCPU, pr.ServerRSS)
		}
		next(pr)
	}
}

// onInterval is the runner's OnInterval: nil without live outputs, so the
// engine keeps no figures per step.
func (l *liveOutputs) onInterval() func([]engine.StepInfo, *metrics.Interval) {
	if l == nil {
		return nil
	}
	if l.board == nil {
		return l.live.Interval
	}
	return func(steps []engine.StepInfo, iv *metrics.Interval) {
		l.live.Interval(steps, iv)
		l.board.Interval()
	}
}

// close ends the live outputs once the command's load is over: /metrics
// waits for one more scrape (at most --metrics-linger), the pushers send
// the final figures (at most 5 s, all outputs at once), and their counts end the summary (on
// stderr when the summary is --json).
func (l *liveOutputs) close() {
	if l == nil {
		return
	}
	l.live.RunEnded()
	l.live.Finish()
	if l.board != nil {
		l.board.End(l.end)
		if l.boardLinger > 0 && l.ctx.Err() == nil {
			fmt.Fprintf(l.io.err, "loadlab: the dashboard stays up for %s (--dashboard-linger; Ctrl-C ends it)\n", l.boardLinger)
			t := time.NewTimer(l.boardLinger)
			select {
			case <-t.C:
			case <-l.ctx.Done():
			}
			t.Stop()
		}
		l.board.Close()
	}
	if l.srv != nil {
		if l.linger > 0 && l.ctx.Err() == nil && !l.srv.WaitScraped(l.linger) {
			fmt.Fprintf(l.io.err, "loadlab: /metrics was not scraped within --metrics-linger %s of the end\n", l.linger)
		}
		l.srv.Close()
	}
	// All at once: a stuck receiver's wait is not added to the next one's.
	stats := make([]telemetry.PushStats, len(l.pushers))
	var closing sync.WaitGroup
	for i, p := range l.pushers {
		closing.Go(func() { stats[i] = p.Close(pushWait) })
	}
	closing.Wait()
	for i, st := range stats {
		switch {
		case l.json:
			fmt.Fprintf(l.io.err, "loadlab: output %s\n", st)
		default:
			// A block at the end of the summary, as its thresholds.
			if i == 0 {
				fmt.Fprintf(l.io.out, "\noutputs\n")
			}
			fmt.Fprintf(l.io.out, "  %s\n", st)
		}
	}
}
