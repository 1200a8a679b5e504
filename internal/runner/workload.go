package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/schedule"
	execseg "github.com/loadlab/loadlab/internal/segment"
)

// Workload turns a plan's load into the engine's, and describes it. A
// plan whose scenarios have loads of their own has no load of its own: its
// workload is the zero Workload, ScenarioWorkloads gives theirs, and the
// settings describe them together (mode "open" when one is open; the
// connections and arrivals summed; the longest duration).
func Workload(p *plan.Plan) (engine.Workload, result.Settings, error) {
	st := result.Settings{Timeout: result.Duration(p.HTTP.Timeout), KeepAlive: p.HTTP.KeepAlive, Insecure: p.HTTP.Insecure, MaxBody: p.HTTP.MaxBody, MaxHeader: int(p.HTTP.MaxHeader)}
	st.Extra = map[string]string{"plan": p.File, "load": string(p.Load.Kind)}
	if !p.PerScenario() {
		wl, err := workloadOf(&p.Load, "load", &st)
		return wl, st, err
	}
	st.Extra["load"] = "per scenario"
	st.Mode = "closed"
	var arrivals int64
	for _, sc := range p.Scenarios {
		one := result.Settings{Extra: map[string]string{}}
		if _, err := workloadOf(sc.Load, "scenarios."+sc.Name+".load", &one); err != nil {
			return engine.Workload{}, st, err
		}
		st.Extra["load."+sc.Name] = string(sc.Load.Kind)
		if one.Mode == "open" {
			st.Mode = "open"
			var n int64
			fmt.Sscan(one.Extra["arrivals"], &n)
			arrivals += n
		}
		st.Connections += one.Connections
		st.Rate += one.Rate
		st.Duration = max(st.Duration, one.Duration)
	}
	if st.Mode == "open" {
		st.Extra["arrivals"] = fmt.Sprint(arrivals)
	}
	return engine.Workload{}, st, nil
}

// ScenarioWorkloads are the engine's workloads of a plan whose scenarios
// have loads of their own, in the scenarios' order (engine.Config.Scenarios);
// nil for a plan with one load.
func ScenarioWorkloads(p *plan.Plan) ([]engine.Workload, error) {
	if !p.PerScenario() {
		return nil, nil
	}
	var out []engine.Workload
	for _, sc := range p.Scenarios {
		wl, err := workloadOf(sc.Load, "scenarios."+sc.Name+".load", &result.Settings{Extra: map[string]string{}})
		if err != nil {
			return nil, err
		}
		out = append(out, wl)
	}
	return out, nil
}

// workloadOf turns one load (the plan's, or a scenario's, named where) into
// the engine's, and describes it in st.
func workloadOf(l *plan.Workload, where string, st *result.Settings) (engine.Workload, error) {
	switch l.Kind {
	case plan.LoadClosed:
		st.Mode, st.Connections, st.Duration = "closed", l.VUs, result.Duration(l.Duration)
		return engine.Workload{Kind: engine.Closed, VUs: l.VUs, IterationsPerVU: l.Iterations, Duration: l.Duration, Grace: l.Grace}, nil
	case plan.LoadOpen:
		arr, err := schedule.Constant(l.Rate, l.Duration)
		if err != nil {
			return engine.Workload{}, fmt.Errorf("%s: %s.open: %w", l.Pos, where, err)
		}
		st.Mode, st.Connections, st.Duration, st.Rate = "open", l.MaxVUs, result.Duration(l.Duration), l.Rate.PerSecond()
		st.Extra["arrivals"] = fmt.Sprint(arr.Total())
		return engine.Workload{Kind: engine.Open, Arrivals: arr, MaxVUs: l.MaxVUs, Grace: l.Grace}, nil
	case plan.LoadRampRate:
		var stages []schedule.Stage
		for _, s := range l.RateStages {
			stages = append(stages, schedule.Stage{Target: s.Target, Over: s.Over})
		}
		arr, err := schedule.Stages(l.StartRate, stages)
		if err != nil {
			return engine.Workload{}, fmt.Errorf("%s: %s.stages: %w", l.Pos, where, err)
		}
		st.Mode, st.Connections, st.Duration = "open", l.MaxVUs, result.Duration(arr.Duration())
		st.Extra["arrivals"] = fmt.Sprint(arr.Total())
		return engine.Workload{Kind: engine.Open, Arrivals: arr, MaxVUs: l.MaxVUs, Grace: l.Grace}, nil
	case plan.LoadRampVUs:
		var stages []schedule.VUStage
		for _, s := range l.VUStages {
			stages = append(stages, schedule.VUStage{Target: s.Target, Over: s.Over})
		}
		ramp, err := schedule.NewRamp(l.StartVUs, stages)
		if err != nil {
			return engine.Workload{}, fmt.Errorf("%s: %s.stages: %w", l.Pos, where, err)
		}
		st.Mode, st.Connections, st.Duration = "closed", ramp.Max(), result.Duration(ramp.Duration())
		return engine.Workload{Kind: engine.Ramp, Ramp: ramp, Grace: l.Grace}, nil
	}
	return engine.Workload{}, errors.New("the plan has no load")
}

// preflight connects once, so that a wrong address or port fails with one
// clear line before any load is sent.
func preflight(ctx context.Context, t *httpx.Origin, timeout time.Duration) error {
	d := net.Dialer{Timeout: min(timeout, 10*time.Second)}
	conn, err := t.Dial(ctx, &d)
	if err != nil {
		return fmt.Errorf("cannot connect to %s: %w", t.Host, unwrapOp(err))
	}
	defer conn.Close()
	if t.TLS == nil {
		return nil
	}
	cfg := t.TLS.Clone()
	cfg.ClientSessionCache = nil // the load's first handshake is a first visit's
	tc := tls.Client(conn, cfg)
	tc.SetDeadline(time.Now().Add(d.Timeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		hint := ""
		if !t.TLS.InsecureSkipVerify && strings.Contains(err.Error(), "certificate") {
			hint = " (give the server's CA: --tls-ca, or http.tls.ca in a plan; or use --insecure, or http.insecure, to skip certificate verification)"
		}
		return fmt.Errorf("TLS handshake with %s: %w%s", t.Host, err, hint)
	}
	return nil
}

// unwrapOp shortens "dial tcp 127.0.0.1:1: connect: connection refused".
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// SegmentsFit checks that the plan's loads split into seg's N segments,
// before any is run (loadlab k8s, and loadlab run --segment for its own).
func SegmentsFit(p *plan.Plan, seg execseg.Segment) error {
	wl, _, err := Workload(p)
	if err != nil {
		return err
	}
	scenarios, err := ScenarioWorkloads(p)
	if err != nil {
		return err
	}
	if scenarios == nil {
		if err := wl.SegmentFits(seg); err != nil {
			return fmt.Errorf("%s: %w", p.File, err)
		}
	}
	for i := range scenarios {
		if err := scenarios[i].SegmentFits(seg); err != nil {
			return fmt.Errorf("%s: scenario %s: %w", p.File, p.Scenarios[i].Name, err)
		}
	}
	return nil
}
