package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// noiseInput is an experiment's runs as testdata/noise/*.json holds them
// (make-inputs.py wrote them; real-cpu-ab.json from a real experiment): its
// params and each run's figures, in the order they ran.
type noiseInput struct {
	About  string             `json:"about"`
	Params []experiment.Param `json:"params"`
	Vary   string             `json:"vary"`
	Repeat int                `json:"repeat"`
	Seed   uint64             `json:"seed"`
	Runs   []struct {
		Point, Status, Error string
		Rep                  int
		Throughput, P50, P95 float64
		P99, CPU             float64
		RSSPeak              float64  `json:"rss_peak"`
		RSSAvg               float64  `json:"rss_avg"`
		PSSPeak              float64  `json:"pss_peak"`
		PSSAvg               float64  `json:"pss_avg"`
		Validity             []string `json:"validity"`
	} `json:"runs"`
}

// outcome analyses the input's runs as loadlab would its experiment.
func (in noiseInput) outcome(t *testing.T) *experiment.Outcome {
	e := &plan.Experiment{Vary: plan.Vary(in.Vary), Repeat: in.Repeat, Baseline: map[string]int{}}
	for _, op := range in.Params {
		prm := plan.Param{Name: op.Name, Numeric: op.Numeric}
		for i, label := range op.Values {
			prm.Values = append(prm.Values, plan.ParamValue{Label: label})
			if label == op.Baseline {
				e.Baseline[op.Name] = i
			}
		}
		e.Params = append(e.Params, prm)
	}
	points := experiment.Points(e)
	index := map[string]int{}
	for i, p := range points {
		index[p.Key] = i
	}
	o := &experiment.Outcome{Name: "noise", Vary: in.Vary, Repeat: in.Repeat, Seed: in.Seed, Params: in.Params, Points: points}
	var order []experiment.Slot
	var results []*result.Result
	for i, r := range in.Runs {
		pi, ok := index[r.Point]
		if !ok {
			t.Fatalf("run %d: no point %q", i+1, r.Point)
		}
		order = append(order, experiment.Slot{Index: i, Point: pi, Rep: r.Rep})
		o.Runs = append(o.Runs, experiment.RunInfo{Index: i + 1, Point: r.Point, Rep: r.Rep, Status: r.Status, Error: r.Error})
		if r.Status != "done" {
			results = append(results, nil)
			continue
		}
		res := &result.Result{
			Summary: result.Summary{ThroughputRPS: r.Throughput, Latency: result.Percentiles{Count: 1000, P50: r.P50, P95: r.P95, P99: r.P99}},
			Server: &result.Server{CPUAvg: r.CPU, RSSPeak: int64(r.RSSPeak * (1 << 20)), RSSAvg: int64(r.RSSAvg * (1 << 20)),
				PSSPeak: int64(r.PSSPeak * (1 << 20)), PSSAvg: int64(r.PSSAvg * (1 << 20))},
		}
		for _, code := range r.Validity {
			res.Validity = append(res.Validity, result.Warning{Code: code, Message: code + " (recorded)"})
		}
		results = append(results, res)
	}
	o.Verdict = experiment.Analyze(e, points, order, results)
	return o
}

// TestNoiseVerdicts renders the verdicts of testdata/noise's experiments
// (paired and unpaired, trusted or not for which figures, a machine-wide
// drift, a round left out) with each row's two analyses, against golden
// files (go test -update rewrites them); and each paired p-value against
// scipy's, which testdata/noise/reference.py wrote (it need not run here).
func TestNoiseVerdicts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/noise/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	// scipy.json is reference.py's: scipy's paired p-value of each figure
	// at each point.
	var reference map[string]map[string]map[string]struct {
		P      float64
		Method string
	}
	if data, err := os.ReadFile("testdata/noise/scipy.json"); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &reference); err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if name == "scipy" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var in noiseInput
			if err := json.Unmarshal(data, &in); err != nil {
				t.Fatal(err)
			}
			o := in.outcome(t)
			var b bytes.Buffer
			fmt.Fprintf(&b, "%s\n\n", in.About)
			if err := Verdict(&b, o); err != nil {
				t.Fatal(err)
			}
			v := o.Verdict
			checked := 0
			for _, tab := range v.Figures {
				for _, r := range tab.Rows {
					c := r.Paired
					if c == nil || c.Reason == experiment.EqualSamples || c.Reason == experiment.NotPositive {
						continue
					}
					want, ok := reference[name][string(tab.ID)][r.Point]
					if !ok {
						t.Errorf("%s at %s: paired p=%v, and scipy.json has none", tab.ID, r.Point, c.P)
						continue
					}
					checked++
					if math.Abs(c.P-want.P) > 1e-9*math.Max(1, want.P) || !strings.HasPrefix(want.Method, c.Test) {
						t.Errorf("%s at %s: paired %s p=%v, scipy %s p=%v", tab.ID, r.Point, c.Test, c.P, want.Method, want.P)
					}
				}
			}
			if checked == 0 {
				t.Error("no paired p-value checked against scipy")
			}
			fmt.Fprintf(&b, "\nanalysis %s (%s), rounds %v\n", v.Pairing.Analysis, v.Pairing.Why, v.Pairing.Rounds)
			for _, tab := range v.Figures {
				for _, r := range tab.Rows {
					if r.Unpaired == nil {
						continue
					}
					fmt.Fprintf(&b, "%s at %s: unpaired %s p=%.4f %+.2f%%", tab.ID, r.Point, r.Unpaired.Status, r.Unpaired.P, 100*r.Unpaired.Delta)
					if c := r.Paired; c != nil {
						fmt.Fprintf(&b, "; paired %s %s p=%.4f %+.2f%%", c.Test, c.Status, c.P, 100*c.Delta)
						if c.Interval != nil {
							fmt.Fprintf(&b, " [%+.2f%%, %+.2f%%]", 100*c.Interval.Lo, 100*c.Interval.Hi)
						}
					}
					fmt.Fprintf(&b, "\n")
				}
			}
			golden(t, "noise/"+name+".txt", b.Bytes())
			// The compact form, which leads with the answer, says the
			// analysis and the noise floor too.
			b.Reset()
			if err := CompactVerdict(&b, o, "results/"+name); err != nil {
				t.Fatal(err)
			}
			golden(t, "noise/"+name+"-compact.txt", b.Bytes())
		})
	}
}
