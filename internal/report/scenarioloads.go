package report

import "github.com/loadlab/loadlab/internal/result"

// scenarioLoad is one scenario's own load and what it did: a plan whose
// scenarios have loads of their own runs them all at once.
type scenarioLoad struct {
	Name, Load                 string // the scenario, its load's kind
	Throughput                 float64
	VUs, Peak                  int
	Iterations                 int64
	Dropped, Late, Unsent      int64
	Latency                    result.Percentiles
	Errors                     int64
	ErrorRate                  float64
	ChecksPassed, ChecksFailed int64
}

// scenarioLoads are the scenarios' own loads of a run whose scenarios had
// them; nil otherwise.
func scenarioLoads(r *result.Result) []scenarioLoad {
	var out []scenarioLoad
	for _, sc := range r.Scenarios {
		if sc.Load == "" {
			continue
		}
		s := &sc.Summary
		out = append(out, scenarioLoad{Name: sc.Scenario, Load: sc.Load, Throughput: s.ThroughputRPS,
			VUs: s.VUs, Peak: s.VUsPeak, Iterations: s.Iterations, Dropped: s.Dropped, Late: s.Late.Count, Unsent: s.Unsent,
			Latency: s.Latency, Errors: s.Errors.Total, ErrorRate: s.ErrorRate, ChecksPassed: s.Checks.Passed, ChecksFailed: s.Checks.Failed})
	}
	return out
}

// scenarioLoadsText writes the scenarios' loads as a table.
func scenarioLoadsText(ew *errWriter, loads []scenarioLoad) {
	if len(loads) == 0 {
		return
	}
	ew.printf("%-20s %-22s %10s %11s %10s %8s %7s %7s %8s\n", "scenario load", "", "req/s", "VUs busy", "journeys", "dropped", "late", "unsent", "p95 ms")
	for _, l := range loads {
		p95 := "-"
		if l.Latency.Count > 0 {
			p95 = ms(l.Latency.P95)
		}
		ew.printf("%-20s %-22s %10s %11s %10s %8s %7s %7s %8s\n", clip(l.Name, 20), clip(l.Load, 22), rate(l.Throughput),
			count(int64(l.Peak))+" of "+count(int64(l.VUs)), count(l.Iterations), count(l.Dropped), count(l.Late), count(l.Unsent), p95)
	}
	ew.printf("\n")
}
