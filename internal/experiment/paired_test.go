package experiment

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// unpaired is the same runs with their rounds taken away (each run its own
// round): the verdict can then only be unpaired.
func unpaired(order []Slot) []Slot {
	out := make([]Slot, len(order))
	for i, s := range order {
		s.Rep = 1000 + i
		out[i] = s
	}
	return out
}

// TestQuietPairedSameAnswer: on a quiet machine (each run within 1% of its
// point's level, no round-wide noise), a sweep of 6 rounds gets the same
// pick, knee, evidence and significant changes from the paired analysis as
// from the unpaired one: the new analysis changes no answer that the old
// one got right.
func TestQuietPairedSameAnswer(t *testing.T) {
	t.Parallel()
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { threads: 1..5 }
baseline: { threads: 5 }
repeat: 6
`)
	points := Points(p.Experiment)
	order := Order(len(points), 6, 3)
	curve := map[string][2]float64{"1": {100, 20}, "2": {190, 21}, "3": {260, 23}, "4": {300, 30}, "5": {305, 40}}
	rng := rand.New(rand.NewPCG(5, 6))
	results := make([]*result.Result, len(order))
	for i, s := range order {
		c := curve[points[s.Point].Labels["threads"]]
		j := 0.01 * (2*rng.Float64() - 1)
		results[i] = fake(c[0]*(1+j), c[1]*(1-j))
	}
	paired := Analyze(p.Experiment, points, order, results)
	plain := Analyze(p.Experiment, points, unpaired(order), results)
	if paired.Pairing.Analysis != Paired || plain.Pairing.Analysis != Unpaired {
		t.Fatalf("analyses %s and %s", paired.Pairing.Analysis, plain.Pairing.Analysis)
	}
	if len(paired.Sweeps) != 1 || len(plain.Sweeps) != 1 {
		t.Fatalf("sweeps %d and %d", len(paired.Sweeps), len(plain.Sweeps))
	}
	a, b := paired.Sweeps[0], plain.Sweeps[0]
	if a.Pick != b.Pick || !reflect.DeepEqual(a.Knee, b.Knee) || a.KneeWhy != b.KneeWhy {
		t.Errorf("paired pick %d knee %v (%s), unpaired %d %v (%s)", a.Pick, a.Knee, a.KneeWhy, b.Pick, b.Knee, b.KneeWhy)
	}
	if len(a.Evidence) != len(b.Evidence) {
		t.Fatalf("evidence %+v against %+v", a.Evidence, b.Evidence)
	}
	for k := range a.Evidence {
		ea, eb := a.Evidence[k], b.Evidence[k]
		if ea.Kind != eb.Kind || (ea.Test == nil) != (eb.Test == nil) || ea.Test != nil && ea.Test.Status != eb.Test.Status {
			t.Errorf("evidence %d: paired %+v, unpaired %+v", k, ea, eb)
		}
	}
	for fi, tab := range paired.Figures {
		for ri, r := range tab.Rows {
			u := plain.Figures[fi].Rows[ri]
			if (r.Change == nil) != (u.Change == nil) || r.Change != nil && r.Change.Status != u.Change.Status {
				t.Errorf("%s at %s: paired %+v, unpaired %+v", tab.ID, r.Point, r.Change, u.Change)
			}
			if r.Change != nil && (!r.Change.IsPaired() || r.Unpaired == nil || r.Paired != r.Change) {
				t.Errorf("%s at %s: the verdict's change is not the paired one of the two: %+v", tab.ID, r.Point, r)
			}
		}
	}
}

// TestPairedCancelsRoundNoise: a -7.4% change under a machine whose load
// comes and goes by round (a third of the speed in some rounds, for both
// points) is lost by the unpaired test and found by the paired one, with
// its estimate within a point of -7.4%; a failed run's round is left out
// and named.
func TestPairedCancelsRoundNoise(t *testing.T) {
	t.Parallel()
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { cpu: { base: 1ms, slower: 1.08ms } }
baseline: { cpu: base }
repeat: 9
`)
	points := Points(p.Experiment)
	order := Order(len(points), 9, 11)
	hog := []float64{1, 0.65, 1, 0.7, 0.6, 1, 0.95, 0.62, 1}
	rng := rand.New(rand.NewPCG(1, 2))
	results := make([]*result.Result, len(order))
	for i, s := range order {
		rps := 1000 * hog[s.Rep-1] * (1 + 0.01*rng.NormFloat64())
		if points[s.Point].Labels["cpu"] == "slower" {
			rps *= 1 - 0.074
		}
		if s.Rep == 4 && points[s.Point].Labels["cpu"] == "slower" {
			continue // failed
		}
		results[i] = fake(rps, 1000/rps)
	}
	v := Analyze(p.Experiment, points, order, results)
	if v.Pairing.Analysis != Paired || len(v.Pairing.Rounds) != 8 || len(v.Pairing.Left) != 1 || v.Pairing.Left[0].Round != 4 || v.Pairing.Left[0].Points[0] != "cpu=slower" {
		t.Fatalf("pairing %+v", v.Pairing)
	}
	r := v.Table(FigureThroughput).Rows[1]
	if r.Unpaired.Significant() {
		t.Errorf("unpaired %+v: the round noise should hide the change", r.Unpaired)
	}
	c := r.Paired
	if !c.Significant() || c.Test != TestWilcoxon || c.Rounds != 8 || math.Abs(c.Delta+0.074) > 0.01 || c.Interval == nil || !c.Interval.Bounded || !(c.Interval.Lo < -0.074 && c.Interval.Hi > -0.074) {
		t.Errorf("paired %+v %+v, want -7.4%% significant over 8 rounds", c, c.Interval)
	}
	if r.Change != r.Paired || !r.Significant {
		t.Errorf("the verdict uses %+v", r.Change)
	}
	if n := v.NoiseFloor; n == nil || n.Analysis != Paired || n.N != 8 || !n.Testable || n.Detectable <= 0 {
		t.Errorf("noise floor %+v", n)
	}
}

// TestTrustPerFigure: CPU steal in a third of the runs heads a verdict on
// throughput NOT TRUSTED (unpaired), not one that rests on memory alone,
// and not a paired one; a saturated loadlab counts against all three. Late
// arrivals count against memory only when they were 100 ms late or more
// at the p99 (a jemalloc recipe's memory verdict came out NOT TRUSTED for
// arrivals 9 ms late at the p99).
func TestTrustPerFigure(t *testing.T) {
	t.Parallel()
	lateP99 := 0.0
	mk := func(repeat int, memoryOnly bool, code string) *Verdict {
		p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { allocator: { glibc: "", jemalloc: /lib/je.so } }
repeat: 5
`)
		p.Experiment.Repeat = repeat
		points := Points(p.Experiment)
		order := Order(len(points), repeat, 9)
		results := make([]*result.Result, len(order))
		for i, s := range order {
			rps := 100 + float64(s.Rep%3)
			if !memoryOnly && s.Point == 1 {
				rps *= 1.2
			}
			r := fake(rps, 50+float64(s.Rep%3))
			r.Server = &result.Server{RSSPeak: 3000 << 20, RSSAvg: 2000 << 20}
			if s.Point == 1 {
				r.Server.RSSPeak, r.Server.RSSAvg = (2000+int64(s.Rep))<<20, (1500+int64(s.Rep))<<20
			}
			if i%3 == 0 {
				r.Validity = []result.Warning{{Code: code}}
				r.Summary.Late.P99 = lateP99
			}
			results[i] = r
		}
		return Analyze(p.Experiment, points, order, results)
	}
	memory := mk(5, true, "cpu_steal")
	if tr := memory.Trust; tr == nil || tr.Untrusted || tr.Unmoved["cpu_steal"] == 0 || !memory.Suspect.Untrusted() {
		t.Errorf("memory verdict under steal: trust %+v", tr)
	}
	for _, id := range memory.Trust.RestsOn {
		if !MemoryFigure(id) {
			t.Errorf("rests on %s, want memory figures alone", id)
		}
	}
	timed := mk(5, false, "cpu_steal")
	if tr := timed.Trust; tr == nil || !tr.Untrusted || len(tr.Moved) == 0 || tr.Moved[0] != FigureThroughput {
		t.Errorf("throughput verdict under steal: trust %+v", tr)
	}
	for _, id := range timed.Trust.Moved {
		if MemoryFigure(id) {
			t.Errorf("steal said to move %s", id)
		}
	}
	paired := mk(6, false, "cpu_steal")
	if tr := paired.Trust; paired.Pairing.Analysis != Paired || tr == nil || tr.Untrusted || tr.Absorbed["cpu_steal"] == 0 {
		t.Errorf("paired verdict under steal: %s, trust %+v", paired.Pairing.Analysis, tr)
	}
	saturated := mk(6, true, "generator_saturated")
	if tr := saturated.Trust; tr == nil || !tr.Untrusted {
		t.Errorf("memory verdict with loadlab saturated: trust %+v", tr)
	}
	lateP99 = 8.95
	if tr := mk(6, true, "late").Trust; tr == nil || tr.Untrusted || tr.Unmoved["late"] == 0 {
		t.Errorf("memory verdict with arrivals 9 ms late at the p99: trust %+v", tr)
	}
	if tr := mk(6, false, "late").Trust; tr == nil || !tr.Untrusted || !slices.Contains(tr.Moved, FigureThroughput) {
		t.Errorf("throughput verdict with arrivals 9 ms late at the p99: trust %+v", tr)
	}
	lateP99 = LateMovesMemoryMS
	if tr := mk(6, true, "late").Trust; tr == nil || !tr.Untrusted {
		t.Errorf("memory verdict with arrivals 100 ms late at the p99: trust %+v", tr)
	}
}

// TestMachineDrift: the rounds' level rising 17% from first to last across
// all points, no point rising run after run alone, is flagged; the same
// noise without the trend is not.
func TestMachineDrift(t *testing.T) {
	t.Parallel()
	p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { server: [thin, puma, falcon] }
baseline: { server: thin }
repeat: 6
`)
	points := Points(p.Experiment)
	order := Order(len(points), 6, 4)
	level := map[string]float64{"thin": 500, "puma": 520, "falcon": 480}
	wobble := []float64{1, -1, 1, -1, 0, 1}
	build := func(trend float64) []*result.Result {
		results := make([]*result.Result, len(order))
		for i, s := range order {
			l := points[s.Point].Labels["server"]
			w := wobble[(s.Rep+s.Point)%len(wobble)] * 0.05
			results[i] = fake(level[l]*(1+trend*float64(s.Rep-1)/5)*(1+w), 10)
		}
		return results
	}
	v := Analyze(p.Experiment, points, order, build(0.17))
	if len(v.Drifts) != 0 {
		t.Errorf("point drifts %+v: no point rises run after run", v.Drifts)
	}
	d := v.MachineDrift
	if d == nil || d.Figure != FigureThroughput || len(d.Levels) != 6 || math.Abs(d.Change-0.17) > 0.05 || d.P > Alpha {
		t.Fatalf("machine drift %+v, want about +17%%", d)
	}
	if d := Analyze(p.Experiment, points, order, build(0)).MachineDrift; d != nil {
		t.Errorf("no trend, yet machine drift %+v", d)
	}
}

// TestWaitedRoundsLeftOut: recorded A/B and A/A rounds of bench/noise.sh
// (testdata/noise), a hog switching on and off beside the servers. The
// rounds whose runs' servers waited for their CPU unlike (10 points or
// more apart beyond each point's usual wait) are left out of the pairing,
// and the A/B's -7.4% (by construction) is then found, which the 16
// rounds together missed; the A/A's rounds find nothing either way.
func TestWaitedRoundsLeftOut(t *testing.T) {
	t.Parallel()
	type run struct {
		Round      int     `json:"round"`
		Point      string  `json:"point"`
		Throughput float64 `json:"throughput_rps"`
		Wait       float64 `json:"server_cpu_wait_pct"`
	}
	analyze := func(file string, waits bool) *Verdict {
		data, err := os.ReadFile(filepath.Join("testdata", "noise", file))
		if err != nil {
			t.Fatal(err)
		}
		var runs []run
		if err := json.Unmarshal(data, &runs); err != nil {
			t.Fatal(err)
		}
		p := load(t, `
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 4, duration: 1s } }
params: { side: { A: a, B: b } }
repeat: 16
`)
		points := Points(p.Experiment)
		order := Order(len(points), 16, 1)
		results := make([]*result.Result, len(order))
		for i, s := range order {
			for _, r := range runs {
				if r.Round == s.Rep && r.Point == points[s.Point].Key {
					res := fake(r.Throughput, 10)
					res.Machine = &result.Machine{CPUs: 2}
					if waits {
						res.Machine.ServerFound = &result.FoundServer{PID: 1, CPUWaitPct: r.Wait}
					}
					results[i] = res
				}
			}
			if results[i] == nil {
				t.Fatalf("%s: no run of %s in round %d", file, points[s.Point].Key, s.Rep)
			}
		}
		return Analyze(p.Experiment, points, order, results)
	}
	change := func(v *Verdict) Change {
		for _, r := range v.Table(FigureThroughput).Rows {
			if r.Point == "side=B" {
				return *r.Change
			}
		}
		t.Fatal("no row side=B")
		return Change{}
	}
	ab := analyze("ab.json", true)
	c := change(ab)
	if ab.Pairing.Analysis != Paired || !c.Significant() || c.Delta > -0.05 || c.Delta < -0.12 {
		t.Errorf("A/B with the waited rounds left out: %s, %+v; want about -7.4%%, significant", ab.Pairing.Analysis, c)
	}
	var left []int
	for _, l := range ab.Pairing.Left {
		if l.Why != WaitedRound || len(l.WaitPct) != 2 || (l.WaitPct[0]-l.UsualPct[0])-(l.WaitPct[1]-l.UsualPct[1]) < WaitJump {
			t.Errorf("round left out %+v", l)
		}
		left = append(left, l.Round)
	}
	if len(ab.Pairing.Rounds)+len(left) != 16 || len(ab.Pairing.Rounds) < ab.Pairing.Need {
		t.Errorf("rounds kept %v, left out %v", ab.Pairing.Rounds, left)
	}
	if c := change(analyze("ab.json", false)); c.Significant() {
		t.Errorf("A/B of all 16 rounds (no waits measured): %+v; the recording's rounds together did not tell -7.4%% from noise", c)
	}
	for _, waits := range []bool{true, false} {
		if c := change(analyze("aa.json", waits)); c.Significant() {
			t.Errorf("A/A (waits %v): %+v, want no change", waits, c)
		}
	}
	t.Logf("A/B: rounds %v kept, %v left out; %+.1f%% p=%.3f", ab.Pairing.Rounds, left, 100*c.Delta, c.P)
}
