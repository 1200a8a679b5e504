package experiment

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// matrixResults fakes every run of a matrix: throughput from rps at each
// point, plus the repeat, so that repeats differ a little.
func matrixResults(p *plan.Plan, rps func(Point) float64) ([]Point, []Slot, []*result.Result) {
	points := Points(p.Experiment)
	order := Order(len(points), p.Experiment.Repeat, 3)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		results[i] = fake(rps(points[s.Point])+float64(s.Rep), 10)
	}
	return points, order, results
}

// TestMatrixComparesItsFactor is the Thin-vs-Puma matrix: server
// listed first, c and per_vu (numbers) after, the baseline naming server.
// The verdict compares server, Puma against Thin at each c and per_vu,
// and never sweeps c or per_vu, which are conditions, not settings to
// recommend; before, it compared along per_vu and recommended a c.
func TestMatrixComparesItsFactor(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: "{{ c }}", iterations: "{{ per_vu }}" } }
params:
  server: { thin: thin start, puma: puma }
  c: [100, 200]
  per_vu: [5, 10, 50]
vary: matrix
baseline: { server: thin }
repeat: 5
`)
	points, order, results := matrixResults(p, func(pt Point) float64 {
		rps := 100 + float64(len(pt.Labels["c"]+pt.Labels["per_vu"])) // conditions change throughput a little
		if pt.Labels["server"] == "puma" {
			rps *= 1.12
		}
		return rps
	})
	v := Analyze(p.Experiment, points, order, results)
	if v.ComparedParam != "server" || v.ComparedValue != "thin" || v.ComparedWhy != "baseline" || strings.Join(v.Conditions, " ") != "c per_vu" {
		t.Errorf("compared along %s=%s (%s) at %v, want server=thin (baseline) at c, per_vu", v.ComparedParam, v.ComparedValue, v.ComparedWhy, v.Conditions)
	}
	if len(v.Sweeps) != 0 {
		t.Errorf("a condition was swept: %+v", v.Sweeps)
	}
	for _, r := range v.Figures[0].Rows {
		pt := strings.Fields(r.Point)
		if strings.HasSuffix(r.Point, "server=thin") || pt[0] == "server=thin" {
			if r.Change != nil {
				t.Errorf("%s (Thin) is a reference, compared with %s", r.Point, r.Reference)
			}
			continue
		}
		if want := strings.Replace(r.Point, "server=puma", "server=thin", 1); r.Reference != want || !r.Significant || r.Delta < 0.1 || r.Delta > 0.13 {
			t.Errorf("%s: compared with %s, %+.3f significant %v; want %s, about +12%%", r.Point, r.Reference, r.Delta, r.Significant, want)
		}
	}
	conditions := map[string]bool{}
	for _, n := range v.Named {
		if n.Param != "server" || n.Value != "puma" || n.Baseline != "thin" {
			t.Errorf("named comparison of %s=%s vs %s", n.Param, n.Value, n.Baseline)
		}
		conditions[strings.Join(n.At, " ")] = true
		if c := n.Figures[0].Change; n.Figures[0].ID != FigureThroughput || !c.Significant() || math.Abs(c.Delta-0.12) > 0.01 {
			t.Errorf("puma vs thin at %v: throughput %+v, want +12%%", n.At, c)
		}
	}
	if len(conditions) != 6 || !conditions["c=200 per_vu=50"] {
		t.Errorf("conditions compared: %v, want the 6 combinations of c and per_vu", conditions)
	}
}

// TestMatrixSweepsANumericFactorPerCondition: with compare: threads, a
// numeric factor, the sweep of threads is made at each condition (c=1,
// c=2), and c is never swept.
func TestMatrixSweepsANumericFactorPerCondition(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: "{{ c }}", duration: 1s } }
params:
  c: [1, 2]
  threads: [1, 2, 4, 8]
vary: matrix
compare: threads
repeat: 5
`)
	points, order, results := matrixResults(p, func(pt Point) float64 {
		threads := map[string]float64{"1": 1, "2": 2, "4": 4, "8": 4}[pt.Labels["threads"]]
		return 100 * threads * map[string]float64{"1": 1, "2": 1.5}[pt.Labels["c"]]
	})
	v := Analyze(p.Experiment, points, order, results)
	if v.ComparedParam != "threads" || v.ComparedWhy != "named" {
		t.Errorf("compared along %s (%s)", v.ComparedParam, v.ComparedWhy)
	}
	var at []string
	for _, s := range v.Sweeps {
		if s.Param != "threads" || len(s.X) != 4 || s.X[s.Pick] != 4 {
			t.Errorf("sweep of %s at %v: x %v, pick %d", s.Param, s.At, s.X, s.Pick)
		}
		at = append(at, strings.Join(s.At, " "))
	}
	if strings.Join(at, ", ") != "c=1, c=2" {
		t.Errorf("sweeps at %q, want c=1, c=2", at)
	}
}

// TestStoredFactor: experiment.json keeps the factor and how it was chosen,
// and loadlab report analyses it again along the same factor; a file
// written before compare: is analysed along its last param, as it was, and
// says so.
func TestStoredFactor(t *testing.T) {
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: "{{ c }}", duration: 1s } }
params:
  server: [thin, puma]
  c: [1, 2]
vary: matrix
compare: server
repeat: 3
`)
	_, order, results := matrixResults(p, func(pt Point) float64 { return 100 })
	o := Assemble(p.Head(), p.Experiment, 3, results)
	for _, stored := range []struct {
		name      string
		drop      bool
		factor    string
		why       string
		condition string
	}{{"with compare", false, "server", "named", "c"}, {"before compare", true, "c", "older", "server"}} {
		dir := t.TempDir()
		for i := range o.Runs {
			run := filepath.Join(dir, o.Runs[i].Dir)
			if err := os.MkdirAll(run, 0o755); err != nil {
				t.Fatal(err)
			}
			results[order[i].Index].Schema = result.SchemaResult
			if err := store.WriteResult(run, results[order[i].Index]); err != nil {
				t.Fatal(err)
			}
		}
		data, _ := json.Marshal(o)
		var raw map[string]any
		json.Unmarshal(data, &raw)
		if raw["compare"] != "server" || raw["compare_why"] != "named" {
			t.Fatalf("experiment.json compare %v (%v)", raw["compare"], raw["compare_why"])
		}
		if stored.drop {
			delete(raw, "compare")
			delete(raw, "compare_why")
		}
		data, _ = json.Marshal(raw)
		os.WriteFile(filepath.Join(dir, "experiment.json"), data, 0o644)
		back, err := LoadOutcome(dir)
		if err != nil {
			t.Fatal(err)
		}
		if v := back.Verdict; v.ComparedParam != stored.factor || v.ComparedWhy != stored.why || strings.Join(v.Conditions, " ") != stored.condition {
			t.Errorf("%s: read back along %s (%s) at %v, want %s (%s)", stored.name, v.ComparedParam, v.ComparedWhy, v.Conditions, stored.factor, stored.why)
		}
	}
}
