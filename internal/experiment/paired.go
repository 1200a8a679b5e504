package experiment

import (
	"math"
	"slices"
	"sort"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/stats"
)

// The analyses a verdict can rest on (Pairing.Analysis).
const (
	// Unpaired compares each point's runs with its reference's as two
	// sets (Mann-Whitney U), whatever round they ran in.
	Unpaired = "unpaired"
	// Paired compares each point with its reference within each round
	// (the per-round ratio) and judges the ratios (Wilcoxon signed-rank,
	// the sign test under stats.SignTestBelow rounds; Hodges–Lehmann
	// estimate): a slow phase of the machine that hits a whole round
	// falls out of the ratio.
	Paired = "paired"
)

// Tests behind a Change.
const (
	TestMannWhitney = "mann_whitney"
	TestWilcoxon    = stats.MethodWilcoxon
	TestSign        = stats.MethodSign
)

// NotPositive: a paired change is a ratio, and some round's figure was 0
// (an error rate of 0, say) at the point or its reference.
const NotPositive UntestedReason = "not_positive"

// Why a verdict uses the analysis it does (Pairing.Why).
const (
	// PairedRounds: enough complete rounds for a paired test to reach
	// Alpha.
	PairedRounds = "rounds"
	// TooFewRounds: fewer complete rounds than stats.PairsToTest(Alpha),
	// 6, below which no paired test can reach 0.05, while the unpaired
	// test of 4 or 5 runs a point can.
	TooFewRounds = "too_few_rounds"
	// OnePoint: nothing to pair with.
	OnePoint = "one_point"
)

// Pairing says which analysis the verdict's changes are (paired or
// unpaired), why, and which rounds the pairing used and left out. Every
// row carries both analyses (FigureRow.Paired, FigureRow.Unpaired); the
// verdict's own (FigureRow.Change, the named comparisons, the sweeps'
// tests) is Analysis. The steps' and scenarios' own tables stay unpaired.
type Pairing struct {
	Analysis string `json:"analysis"`
	Why      string `json:"why"`
	// Rounds are the complete rounds, those whose every run was done,
	// from 1; the pairing uses these alone.
	Rounds []int `json:"rounds"`
	// Left are the rounds left out, each with the points whose run in it
	// was not done, or (Why WaitedRound) whose run waited for a CPU far
	// more than the point's other runs.
	Left []RoundLeft `json:"rounds_left_out,omitempty"`
	// Kept are rounds with such a run that were kept all the same: leaving
	// them out would have left fewer than Need rounds.
	Kept []RoundLeft `json:"rounds_kept_unlike,omitempty"`
	// Need is the fewest rounds a paired test can be significant with.
	Need int `json:"rounds_to_test"`
}

// RoundLeft is a round left out of the pairing and the points whose run in
// it was not done (failed, or not run yet), or waited (Why WaitedRound).
type RoundLeft struct {
	Round  int      `json:"round"`
	Points []string `json:"points"`
	// Why is "" for runs not done, WaitedRound for runs that waited.
	Why string `json:"why,omitempty"`
	// For WaitedRound, Points are the round's runs whose servers waited
	// the most and the least beyond their points' usual, WaitPct their CPU
	// waits (see runWait) and UsualPct their points' usual waits.
	WaitPct  []float64 `json:"cpu_wait_pct,omitempty"`
	UsualPct []float64 `json:"usual_cpu_wait_pct,omitempty"`
}

// WaitedRound: a round whose runs' servers waited for a CPU unlike: the
// excess of one run's wait (runWait) over its point's usual wait and that
// of another run of the round differ by WaitJump points or more. Pairing
// compares the runs of a round on the premise that the machine treated
// them alike; a neighbour that took the server's CPU during one run of a
// round, and not the other, breaks it. Measured with bench/noise.sh (a hog
// switching on and off in phases of 0.5 to 4 s, runs of 0.5 s), such
// rounds had B/A of 0.70 to 1.48 against 0.90 to 0.94 in the others, and
// four of them out of 16 moved Wilcoxon's p from 0.0005 to 0.23 (told
// apart there by the server's CPU share, before the wait was measured;
// TestWaitedRoundsLeftOut is a recording with the waits). A round hit
// alike (both runs' servers waiting 65 to 70%) stays: its ratio holds.
const WaitedRound = "cpu_wait"

// WaitJump is how many points the excesses of a round's runs' CPU waits
// over their points' usual waits (the lower quartile of each point's runs:
// an unhit run's) may differ before the round is left out of the pairing.
// The runs of one setting wait alike (a server with more busy threads than
// CPUs waits for itself in every run, so the usual wait is its own); a
// neighbour on the same CPU adds tens of points (two busy loops sharing
// one CPU each waited 51% of the time they wanted it). The median would
// not do as the usual wait: with a hog on the servers' CPU half the time,
// half the runs were hit, the median was a hit run's, and rounds with one
// side hit by 20 points stayed in (an A/B of -7.4% by construction read
// -18.8%, p=0.031).
const WaitJump = 10.0

// runWait is the CPU wait of a run's server, in percent (the highest of
// the found servers'); ok false when the run measured none (an older
// result, outside Linux, or a server loadlab neither started nor found).
// loadlab's own wait is left out: it mostly sleeps, so each wake-up's wait
// behind what runs is a large share of its little CPU time (20 to 100% in
// bench/noise.sh's runs, hog or not), which says nothing of the server.
func runWait(r *result.Result) (float64, bool) {
	var w float64
	ok := false
	if sv := r.Server; sv != nil && !slices.Contains(sv.Unmeasured, "cpu_wait") {
		w, ok = max(w, sv.CPUWaitPct), true
	}
	if m := r.Machine; m != nil {
		if m.ServerFound != nil {
			w, ok = max(w, m.ServerFound.CPUWaitPct), true
		}
		for _, f := range m.ServersFound {
			w, ok = max(w, f.CPUWaitPct), true
		}
	}
	return w, ok
}

// Interval is a paired change's Hodges–Lehmann interval, as changes (-0.09
// is 9% lower), at Confidence; Bounded false with too few rounds for one,
// when Lo and Hi are the extremes.
type Interval struct {
	Lo         float64 `json:"low"`
	Hi         float64 `json:"high"`
	Bounded    bool    `json:"bounded"`
	Confidence float64 `json:"confidence"`
}

// rounds finds the complete rounds of the order and those left out.
func rounds(points []Point, order []Slot, results []*result.Result) ([]int, []RoundLeft, []RoundLeft) {
	done := map[int]map[int]bool{} // round: points done
	var all []int
	for _, s := range order {
		if done[s.Rep] == nil {
			done[s.Rep] = map[int]bool{}
			all = append(all, s.Rep)
		}
		if results[s.Index] != nil {
			done[s.Rep][s.Point] = true
		}
	}
	sort.Ints(all)
	var complete []int
	var left []RoundLeft
	for _, r := range all {
		var missing []string
		for i, p := range points {
			if !done[r][i] {
				missing = append(missing, p.Key)
			}
		}
		if len(missing) == 0 {
			complete = append(complete, r)
		} else {
			left = append(left, RoundLeft{Round: r, Points: missing})
		}
	}
	complete, waited, kept := waitedRounds(points, order, results, complete)
	left = append(left, waited...)
	sort.SliceStable(left, func(i, j int) bool { return left[i].Round < left[j].Round })
	return complete, left, kept
}

// waitedRounds takes out of complete the rounds whose runs' servers
// waited for a CPU unlike (see WaitedRound), unless that leaves fewer
// rounds than a paired test needs: then they stay, and are returned as
// kept.
func waitedRounds(points []Point, order []Slot, results []*result.Result, complete []int) (rest []int, waited, kept []RoundLeft) {
	if len(complete) < stats.PairsToTest(Alpha) {
		return complete, nil, nil // unpaired anyway
	}
	in := map[int]bool{}
	for _, r := range complete {
		in[r] = true
	}
	waits := make([][]float64, len(points))
	type run struct {
		point int
		wait  float64
	}
	byRound := map[int][]run{}
	for _, s := range order {
		r := results[s.Index]
		if !in[s.Rep] || r == nil {
			continue
		}
		w, ok := runWait(r)
		if !ok {
			continue
		}
		waits[s.Point] = append(waits[s.Point], w)
		byRound[s.Rep] = append(byRound[s.Rep], run{s.Point, w})
	}
	usual := make([]float64, len(points))
	for i, ws := range waits {
		usual[i] = stats.Quantile(ws, 0.25)
	}
	var out []int
	for _, r := range complete {
		runs := byRound[r]
		hi, lo := -1, -1
		for k, x := range runs {
			if len(waits[x.point]) < 3 {
				hi = -1
				break
			}
			e := x.wait - usual[x.point]
			if hi < 0 || e > runs[hi].wait-usual[runs[hi].point] {
				hi = k
			}
			if lo < 0 || e < runs[lo].wait-usual[runs[lo].point] {
				lo = k
			}
		}
		if hi < 0 || len(runs) < 2 || (runs[hi].wait-usual[runs[hi].point])-(runs[lo].wait-usual[runs[lo].point]) < WaitJump {
			out = append(out, r)
			continue
		}
		h, l := runs[hi], runs[lo]
		waited = append(waited, RoundLeft{Round: r, Why: WaitedRound,
			Points:  []string{points[h.point].Key, points[l.point].Key},
			WaitPct: []float64{h.wait, l.wait}, UsualPct: []float64{usual[h.point], usual[l.point]}})
	}
	if len(out) < stats.PairsToTest(Alpha) {
		return complete, nil, waited
	}
	return out, waited, nil
}

// byRound is a figure's value at each point in each complete round: NaN
// where the run has none.
func byRound(f figure, points []Point, order []Slot, results []*result.Result, complete []int) [][]float64 {
	at := map[int]int{}
	for k, r := range complete {
		at[r] = k
	}
	out := make([][]float64, len(points))
	for i := range out {
		out[i] = make([]float64, len(complete))
		for k := range out[i] {
			out[i][k] = math.NaN()
		}
	}
	for _, s := range order {
		k, ok := at[s.Rep]
		r := results[s.Index]
		if !ok || r == nil {
			continue
		}
		if x, ok := f.get(r); ok {
			out[s.Point][k] = x
		}
	}
	return out
}

// comparePaired compares a point's figure with its reference's round by
// round (base and test aligned by round, NaN where a run has none).
func comparePaired(base, test []float64) Change {
	var b, t []float64
	for k := range base {
		if !math.IsNaN(base[k]) && !math.IsNaN(test[k]) {
			b, t = append(b, base[k]), append(t, test[k])
		}
	}
	p := stats.ComparePaired(b, t, Alpha)
	c := Change{Test: p.Method, P: p.P, MinP: p.MinP, Alpha: p.Alpha, N1: len(b), N2: len(t), Rounds: len(b)}
	switch {
	case len(b) > 0 && allEqual(b, t):
		c.Status, c.Reason, c.Delta, c.DeltaDefined = Untested, EqualSamples, 0, true
		return c
	case !p.Positive:
		c.Status, c.Reason = Untested, NotPositive
		return c
	}
	c.Delta, c.DeltaDefined = p.Ratio-1, true
	c.Interval = &Interval{Lo: p.Lo - 1, Hi: p.Hi - 1, Bounded: p.Bounded, Confidence: p.Confidence}
	switch {
	case p.Testable && p.P <= p.Alpha:
		c.Status = Significant
	case !p.Testable:
		c.Status, c.Reason = Untested, TooFewRuns
	default:
		c.Status = NotSignificant
	}
	return c
}

// comparer compares a figure between two points with the verdict's
// analysis.
type comparer struct {
	paired bool
	rounds map[FigureID][][]float64
}

func (c comparer) between(t *FigureTable, ref, i int) Change {
	if c.paired {
		if r := c.rounds[t.ID]; r != nil {
			return comparePaired(r[ref], r[i])
		}
	}
	return compareRuns(t.Rows[ref].Samples, t.Rows[i].Samples)
}

// primaryFigure is the figure an experiment is mostly about: a capacity
// search's answer when the runs have one, throughput otherwise.
func primaryFigure(v *Verdict) *FigureTable {
	if t := v.Table(FigureCapacity); t != nil {
		return t
	}
	return v.Table(FigureThroughput)
}

// MachineDrift is a trend of the rounds' level across all points: each
// complete round's geometric mean, over the points, of the primary figure
// against the point's own median. A point's own Drift needs it to move
// run after run; a machine that slows down (or warms up) under the whole
// experiment moves every point a little, which only their mean shows. The
// shuffled order spreads it over the points, but it widens every
// comparison, and says the machine changed.
type MachineDrift struct {
	Figure FigureID  `json:"figure"`
	Rounds []int     `json:"rounds"`
	Levels []float64 `json:"levels"` // 1.0 is the points' medians
	// Change is Sen's slope over the rounds, times the rounds less one:
	// the trend from the first round to the last, 0.17 rose by 17%.
	Change float64 `json:"change"`
	// P is the two-sided Mann-Kendall p-value of the trend.
	P float64 `json:"p"`
}

// MachineDriftShare is the least change from the first round to the last
// that a machine-wide drift is flagged for (with P <= Alpha).
const MachineDriftShare = 0.05

// machineDrift finds a machine-wide drift of the rounds' level; nil when
// there is none (or fewer than DriftMinRuns rounds, or one point).
func machineDrift(v *Verdict, perRound map[FigureID][][]float64, complete []int) *MachineDrift {
	t := primaryFigure(v)
	if t == nil || len(complete) < DriftMinRuns || len(t.Rows) < 2 {
		return nil
	}
	vals := perRound[t.ID]
	levels := make([]float64, len(complete))
	for k := range complete {
		sum, n := 0.0, 0
		for i, row := range vals {
			if x := row[k]; x > 0 && t.Rows[i].Median > 0 {
				sum += math.Log(x / t.Rows[i].Median)
				n++
			}
		}
		if n == 0 {
			return nil
		}
		levels[k] = math.Exp(sum / float64(n))
	}
	up := stats.MannKendall(levels)
	down := stats.MannKendall(negated(levels))
	d := &MachineDrift{Figure: t.ID, Rounds: slices.Clone(complete), Levels: levels, Change: up.Slope * float64(len(levels)-1), P: math.Min(1, 2*math.Min(up.PUp, down.PUp))}
	if d.P <= Alpha && math.Abs(d.Change) >= MachineDriftShare {
		return d
	}
	return nil
}

func negated(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = -v
	}
	return out
}

// NoiseFloor is the smallest change of the primary figure that this
// experiment's n can tell from noise on this machine: at level Alpha with
// stats.Power, for N runs a point from the baseline's run-to-run spread
// (stats.RelativeSpread, stats.DetectableChange); for N rounds, paired,
// from the spread of the per-round ratios to the reference
// (RatioSpread, stats.DetectablePairedChange), which the machine's
// round-wide slow phases do not widen as they widen the baseline's.
type NoiseFloor struct {
	Figure FigureID `json:"figure"`
	Point  string   `json:"point"` // the baseline
	Runs   int      `json:"runs"`  // the baseline's runs the spread is from
	// Spread is the baseline's run-to-run spread, a fraction: 0.021 is
	// 2.1% (1.4826 × the median absolute deviation of ln x).
	Spread float64 `json:"spread"`
	// RatioSpread is, paired, the robust spread of the points' log ratios
	// to their reference over the rounds (the median over the points
	// compared), a fraction.
	RatioSpread float64 `json:"ratio_spread,omitempty"`
	Analysis    string  `json:"analysis"`
	N           int     `json:"n"`
	// Testable is false when N is too few for any test to reach Alpha;
	// Detectable is then 0.
	Testable   bool    `json:"testable"`
	Detectable float64 `json:"detectable"`
	Power      float64 `json:"power"`
	Alpha      float64 `json:"alpha"`
}

// noiseFloor computes the verdict's noise floor; nil without a baseline
// of at least two runs.
func noiseFloor(v *Verdict, base int, refs []int, perRound map[FigureID][][]float64) *NoiseFloor {
	t := primaryFigure(v)
	if t == nil || base < 0 || len(t.Rows) < 2 || len(t.Rows[base].Samples) < 2 {
		return nil
	}
	nf := &NoiseFloor{Figure: t.ID, Point: t.Rows[base].Point, Runs: len(t.Rows[base].Samples), Spread: stats.RelativeSpread(t.Rows[base].Samples),
		Analysis: v.Pairing.Analysis, Power: stats.Power, Alpha: Alpha}
	if nf.Analysis == Paired {
		nf.N = len(v.Pairing.Rounds)
		nf.Testable = nf.N >= v.Pairing.Need
	} else {
		nf.N = v.Sampling.RunsMin
		nf.Testable = stats.Testable(nf.N, nf.N, Alpha)
	}
	if nf.Analysis == Paired {
		var spreads []float64
		for i, ref := range refs {
			if ref < 0 || ref == i || perRound[t.ID] == nil {
				continue
			}
			var b, x []float64
			for k, y := range perRound[t.ID][i] {
				if r := perRound[t.ID][ref][k]; !math.IsNaN(r) && !math.IsNaN(y) {
					b, x = append(b, r), append(x, y)
				}
			}
			if d, ok := stats.LogRatios(b, x); ok && len(d) >= 2 {
				spreads = append(spreads, stats.SpreadOf(d))
			}
		}
		if len(spreads) == 0 {
			nf.Analysis, nf.N = Unpaired, v.Sampling.RunsMin
			nf.Testable = stats.Testable(nf.N, nf.N, Alpha)
		} else {
			slices.Sort(spreads)
			nf.RatioSpread = spreads[len(spreads)/2]
		}
	}
	switch {
	case !nf.Testable:
	case nf.Analysis == Paired:
		nf.Detectable = stats.DetectablePairedChange(nf.RatioSpread, nf.N, Alpha)
	default:
		nf.Detectable = stats.DetectableChange(nf.Spread, nf.N, Alpha)
	}
	return nf
}
