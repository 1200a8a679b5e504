package drive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/loadlab/loadlab/internal/capacity"
	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/threshold"
)

// count is n+1 when yes, else 0: how many judgements in a row said so.
func count(yes bool, n int) int {
	if yes {
		return n + 1
	}
	return 0
}

// Stepper makes the steps of a search: runs of an open-load plan at one
// rate each (or of a closed load at one VU count each, with VUs), with
// internal/runner.
type Stepper struct {
	Plan *plan.Plan // an open load: its rate is replaced at every step
	// VUs: the plan's load is closed, and a step's level is its VU count
	// (its iterations are dropped: every step lasts until it is judged).
	VUs bool
	// SLO replaces the plan's thresholds in every step's run.
	SLO        []*threshold.Threshold
	StepMax    time.Duration // capacity.DefaultStepMax when zero
	Steadiness capacity.Steadiness
	Workers    int
	Version    string
	// OnProgress hears about the step once a second.
	OnProgress func(runner.Progress)
	// OnInterval, if set, is every step's runner.Options.OnInterval: the
	// live outputs' feed (--dashboard, --metrics-addr).
	OnInterval func(steps []engine.StepInfo, iv *metrics.Interval)
}

// Step runs the plan at rate arrivals a second, in dir (server.log; the
// caller writes result.json), until its figures are steady, growing or
// failing, or StepMax. It holds when it is steady (or merely unsettled at
// StepMax) and every SLO clause holds on its result. Steady and growing
// must each show twice in a row, a second apart, to end a step early: one
// quiet or slow second on a busy machine says little. After the step it
// waits capacity.Cooldown. The error is capacity.ErrInterrupted
// when ctx ended the step; the result then is nil.
//
// With VUs, level is the closed load's VU count and the series is judged
// without an offered rate (capacity.Judge with rate 0): a closed load cannot fall
// behind its arrivals, so a step breaks on a latency or in-flight trend,
// on errors, or on an SLO clause.
func (s *Stepper) Step(ctx context.Context, level float64, phase capacity.Phase, dir string) (capacity.Outcome, *result.Result, capacity.StepReport, error) {
	out := capacity.Outcome{Rate: level, Phase: phase}
	rate := level
	q := *s.Plan
	if s.VUs {
		out.Rate, out.VUs, rate = 0, int(level), 0
		q.Load.VUs, q.Load.Iterations = int(level), 0
	} else {
		q.Load.Rate = quantity.Rate{Count: rate, Per: time.Second}
	}
	q.Load.Duration = s.StepMax
	if q.Load.Duration <= 0 {
		q.Load.Duration = capacity.DefaultStepMax
	}
	q.Thresholds = nil
	for _, t := range s.SLO {
		q.Thresholds = append(q.Thresholds, plan.Threshold{Text: t.Text, T: t})
	}
	st := s.Steadiness
	if st.PerJourney == 0 {
		st.PerJourney = RequestsPerJourney(s.Plan)
	}
	st = st.WithDefaults()

	var (
		mu      sync.Mutex
		points  []result.Point
		last    capacity.Judgement
		growing int
		steady  int
		stopped bool
	)
	stop := make(chan struct{})
	progress := func(p runner.Progress) {
		mu.Lock()
		points = append(points, p.Point)
		if !stopped {
			last = capacity.Judge(points, rate, st)
			growing, steady = count(last.State == capacity.Growing, growing), count(last.State == capacity.Steady, steady)
			if steady >= 2 || last.State == capacity.Failing || growing >= 2 {
				stopped = true
				close(stop)
			}
		}
		mu.Unlock()
		if s.OnProgress != nil {
			s.OnProgress(p)
		}
	}
	res, err := runner.Plan(ctx, &q, runner.Options{Dir: dir, Workers: s.Workers, Warmup: time.Duration(st.Skip) * time.Second, OnProgress: progress, OnInterval: s.OnInterval, Stop: stop, Version: s.Version})
	mu.Lock()
	report := capacity.StepReport{Judgement: last, Early: stopped}
	mu.Unlock()
	if res != nil && !res.Summary.Interrupted {
		select {
		case <-time.After(capacity.Cooldown(res.Series)):
		case <-ctx.Done():
		}
	}
	var serverErr *runner.ServerError
	switch {
	case res == nil && err != nil:
		if errors.As(err, &serverErr) {
			out.Stop, out.Clause = capacity.ServerCrashed, serverErr.Error()
			return out, nil, report, nil
		}
		return out, nil, report, err
	case res.Summary.Interrupted:
		return out, nil, report, capacity.ErrInterrupted
	case errors.As(err, &serverErr):
		out.Stop, out.Clause = capacity.ServerCrashed, serverErr.Error()
		return out, res, report, nil
	case err != nil:
		return out, res, report, err
	}
	if !report.Early {
		// At the cap: judge the whole series once more.
		report.Judgement = capacity.Judge(res.Series, rate, st)
	}
	for _, w := range res.Validity {
		if w.Code == "generator_saturated" {
			out.Stop = capacity.GeneratorSaturated
		}
	}
	switch j := report.Judgement; {
	case j.State == capacity.Growing || j.State == capacity.Failing:
		out.Clause = j.Reason
		return out, res, report, nil
	}
	for _, t := range res.Thresholds {
		if !t.Pass {
			out.Clause = fmt.Sprintf("%s (%s)", t.Text, t.Detail)
			return out, res, report, nil
		}
	}
	out.Holds = true
	return out, res, report, nil
}

// RequestsPerJourney is the requests a journey of p makes, on average over
// its scenarios by weight: its request steps, pauses left out. It is a
// lower bound where a journey makes more (redirects followed, a step's
// assets), so the throughput rule then fires later, never falsely: with
// this at 1 for a five-request journey, throughput in requests was judged
// against an offered rate in journeys, and "behind" never fired.
func RequestsPerJourney(p *plan.Plan) float64 {
	var sum, weights float64
	for _, sc := range p.Scenarios {
		w := float64(max(sc.Weight, 1))
		n := 0
		for _, st := range sc.Steps {
			if !st.IsThink {
				n++
			}
		}
		sum += w * float64(n)
		weights += w
	}
	if weights == 0 || sum < weights {
		return 1
	}
	return sum / weights
}
