package threshold_test

import (
	"fmt"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/threshold"
)

func ExampleParse() {
	t, err := threshold.Parse("p999(latency, step=login) <= 2000ms")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t)
	fmt.Println(t.Metric, t.Quantile, t.Filters.Step, t.Op, t.Value, t.Metric.Unit())

	_, err = threshold.Parse("p95(latncy) < 500ms")
	fmt.Println(err)
	// Output:
	// p99.9(latency, step=login) <= 2s
	// latency 99.9 login <= 2000 ms
	// column 5: unknown metric "latncy"; did you mean "latency"?
}

func ExampleEvaluate() {
	r := &result.Result{Summary: result.Summary{
		Requests: 2000, Responses: 1990, DurationS: 10,
		Errors: result.Errors{Total: 30, Status5xx: 20, Timeout: 10},
	}}
	server := threshold.ServerMap{threshold.ServerRSSPeak: 2 << 30}
	for _, text := range []string{"error_rate < 1%", "rate > 100/s", "server.rss.peak < 2560MiB", "p95(latency, step=login) < 2s"} {
		t, err := threshold.Parse(text)
		if err != nil {
			fmt.Println(err)
			return
		}
		o := threshold.Evaluate(t, r, threshold.Stored(r), server)
		fmt.Printf("%-30s pass=%-5v %s\n", t, o.Pass, o.Detail)
	}
	// Output:
	// error_rate < 1%                pass=false error rate: 1.5% (30 errors in 2000 requests)
	// rate > 100/s                   pass=true  rate: 199/s (1990 responses in 10 s)
	// server.rss.peak < 2560MiB      pass=true  server.rss.peak: 2 GiB
	// p95(latency, step=login) < 2s  pass=false p95 latency of step login: the result has no steps
}
