package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/limits"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/server"
)

// serverFigures are the server's figures over the measured window, from
// its samples; dir is where its log was kept (empty: a temporary file).
func serverFigures(proc *server.Process, start, from, to time.Time, dir string) *result.Server {
	s := proc.Summary(from, to)
	out := &result.Server{
		Command:       proc.Command(),
		PID:           proc.PID(),
		CPUAvg:        s.CPUAverage,
		CPUPeak:       s.CPUPeak,
		MachineAvg:    s.MachineAverage,
		MachinePeak:   s.MachinePeak,
		Cores:         s.Capacity,
		CPUUser:       s.User.Seconds(),
		CPUSystem:     s.System.Seconds(),
		RSSAvg:        s.RSSAverage,
		RSSPeak:       s.RSSPeak,
		PSSAvg:        s.PSSAverage,
		PSSPeak:       s.PSSPeak,
		SwapPeak:      s.SwapPeak,
		MajorFaults:   s.MajorFaults,
		ThreadsPeak:   s.ThreadsPeak,
		FDsPeak:       s.FDsPeak,
		ProcessesPeak: s.ProcessesPeak,
		CPUWaitPct:    100 * s.WaitShare(),
		Unmeasured:    s.Unmeasured.Names(),
	}
	if dir != "" {
		out.Log = "server.log"
	} else {
		out.Log = proc.LogPath()
	}
	if q := s.Quota; q.Quota > 0 {
		out.Quota = &result.Quota{Bytes: q.Quota, Peak: q.Peak, Average: q.Average, PeakExceeded: q.PeakExceeded, PeakOver: q.PeakOver, AverageExceeded: q.AverageExceeded, AverageOver: q.AverageOver}
	}
	out.Series = serverSeries(proc.Samples(), start)
	out.Limits = limitFigures(proc)
	return out
}

// limitFigures are server.limits as set, in force and measured; nil
// without limits.
func limitFigures(proc *server.Process) *result.Limits {
	set, in, st, ok := proc.Limits()
	if !ok {
		return nil
	}
	out := &result.Limits{
		Set: set.String(), Mechanism: in.Mechanism, CPUQuota: in.CPUQuota, Memory: in.Memory,
		MemoryPeak: st.MemoryPeak, MemoryFailcnt: st.MemoryFailcnt, OOMKills: st.OOMKills,
	}
	if len(in.CPUList) > 0 {
		out.CPUList = limits.FormatList(in.CPUList)
	}
	if in.Swap >= 0 {
		swap := in.Swap
		out.Swap = &swap
	}
	if slices.Contains(st.Measured, "cpu") {
		out.CPUThrottled = &result.Throttled{Seconds: st.ThrottledTime, Periods: st.CPUPeriods, ThrottledPeriods: st.Throttled}
	}
	var exit *server.ExitError
	if errors.As(proc.Err(), &exit) && exit.OOM != nil {
		out.OOM = exit.Reason()
	}
	return out
}

// serverSeries turns the samples into the series of result.json, at most
// MaxServerPoints points.
func serverSeries(samples []server.Sample, start time.Time) []result.ServerPoint {
	every := max((len(samples)+MaxServerPoints-1)/MaxServerPoints, 1) // samples a point
	out := make([]result.ServerPoint, 0, (len(samples)+every-1)/every)
	for i := 0; i < len(samples); i += every {
		out = append(out, serverPoint(samples[i:min(i+every, len(samples))], start))
	}
	return out
}

// MaxServerPoints bounds the server's time series in result.json: two hours
// of 250 ms samples. A longer run's points each cover several samples.
const MaxServerPoints = 28800

// serverPoint is one point of the server's series for consecutive samples:
// the highest CPU and memory among them (a coarse point never hides a
// peak), the counts of the last.
func serverPoint(group []server.Sample, start time.Time) result.ServerPoint {
	last := group[len(group)-1]
	p := result.ServerPoint{
		T: last.Time.Sub(start).Seconds(), MajorFaults: last.MajorFaults,
		Threads: last.Threads, FDs: last.FDs, Processes: last.Processes,
	}
	for _, smp := range group {
		p.CPU, p.RSS, p.PSS, p.Swap = max(p.CPU, smp.CPU), max(p.RSS, smp.RSS), max(p.PSS, smp.PSS), max(p.Swap, smp.Swap)
	}
	return p
}

// eachRun runs server.before_each_run or server.after_each_run, c (nil:
// none), with its output in DIR/before_each_run.log or after_each_run.log
// (no dir: a temporary file, which a failure names).
func eachRun(ctx context.Context, spec *server.Spec, c *plan.Command, timeout time.Duration, dir string) error {
	if spec == nil || c == nil {
		return nil
	}
	if dir != "" {
		spec.LogPath = filepath.Join(dir, strings.TrimPrefix(c.Key, "server.")+".log")
	}
	if err := server.Run(ctx, *spec, timeout); err != nil {
		return fmt.Errorf("%s failed: %w", c.Key, err)
	}
	return nil
}

// CheckLimits makes and removes the cgroups of p's server.limits for the
// given params, so that a limit that cannot be enforced is refused before
// any load. A plan without limits passes at once.
func CheckLimits(p *plan.Plan, params map[string]any) error {
	if p.Server == nil || p.Server.Limits == nil {
		return nil
	}
	spec, err := p.ServerSpec(params)
	if err != nil {
		return err
	}
	if spec.Limits.IsZero() {
		return nil
	}
	g, err := limits.Create(spec.Limits)
	if err != nil {
		return err
	}
	return g.Remove()
}
