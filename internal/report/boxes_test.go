package report

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// TestWhichBoxEverywhere: a param of boxes gives "which box" in the text
// verdict, markdown, HTML and experiment.json: each box's rate and cost
// per million requests, the cheapest way to serve target_rate, where the
// cheapest kind changes, and what that assumes.
func TestWhichBoxEverywhere(t *testing.T) {
	p, err := plan.Parse("plan.yaml", []byte(`
name: size-the-box
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
server: { run: "true" }
params:
  box: { "1x": { cpus: 1, memory: 512MiB, price_per_hour: 0.05 }, "2x": { cpus: 2, memory: 1GiB, price_per_hour: 0.10 } }
repeat: 3
target_rate: 500
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const seed = 3
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 3, seed)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		rps := map[string]float64{"1x": 150, "2x": 340}[points[s.Point].Labels["box"]]
		results[i] = &result.Result{Summary: result.Summary{Requests: int64(rps), Responses: int64(rps), DurationS: 1, Latency: result.Percentiles{Count: 10, P50: 5, P95: 10, P99: 20}}}
	}
	o := experiment.Assemble(p.Head(), p.Experiment, seed, results)
	var text, markdown, page bytes.Buffer
	if err := Verdict(&text, o); err != nil {
		t.Fatal(err)
	}
	if err := ExperimentMarkdown(&markdown, "", o); err != nil {
		t.Fatal(err)
	}
	if err := ExperimentHTML(&page, o); err != nil {
		t.Fatal(err)
	}
	const crossover = "3 × 1x at $0.15/h beat 1 × 2x at $0.10/h only above 340 req/s"
	for _, want := range []string{
		"\nwhich box (box, by price)\n",
		"  1x served 150 req/s (box=1x) at $0.05/h: $0.0926 per million requests\n",
		"  cheapest for 500 req/s: 2 × 2x at $0.20/h, holding 680 req/s",
		"  " + crossover,
		"not capacities under an SLO",
		"the load balancer, its price and its limits are not included",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text verdict lacks %q:\n%s", want, text.String())
		}
	}
	// The compact summary's one line is the answer: the cheapest way to
	// serve target_rate, or without one the cheapest box per million
	// requests (2x here, though the plan names 1x first).
	var compact bytes.Buffer
	if err := CompactVerdict(&compact, o, ""); err != nil {
		t.Fatal(err)
	}
	if want := "\nwhich box (box): cheapest for 500 req/s: 2 × 2x at $0.20/h, holding 680 req/s\n"; !strings.Contains(compact.String(), want) {
		t.Errorf("the compact summary lacks %q:\n%s", want, compact.String())
	}
	noTarget := *o.Verdict.Boxes
	noTarget.TargetRate, noTarget.Options = 0, nil
	if got, want := boxAnswer(&noTarget), "cheapest per million requests of the 2 priced: 2x served 340 req/s (box=2x) at $0.10/h: $0.0817 per million requests"; got != want {
		t.Errorf("without target_rate:\ngot  %q\nwant %q", got, want)
	}
	for _, want := range []string{
		"**Which box** (box, by price; rate is throughput):",
		"| 2x | box=2x | 340 | $0.10 | $0.0817 |",
		"- " + md(crossover),
	} {
		if !strings.Contains(markdown.String(), want) {
			t.Errorf("the markdown lacks %q:\n%s", want, markdown.String())
		}
	}
	for _, want := range []string{
		"<h3>Which box (box, by price)</h3>",
		"<td>1x</td><td>box=1x</td><td>150</td><td>$0.05</td><td>$0.0926</td>",
		"<li>" + html.EscapeString(crossover),
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"boxes":{"param":"box","basis":"throughput"`, `"per_million":`, `"crossovers":[`, `"target_rate":500`, `"price_per_hour":0.05`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("experiment.json lacks %s", key)
		}
	}
}
