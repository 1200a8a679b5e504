package experiment

import (
	"math"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/spec"
	"github.com/loadlab/loadlab/internal/stats"
)

// SpendingRule names the α-spending rule of repeat: auto.
const SpendingRule = "lan-demets-obrien-fleming"

// Spent is how much of alpha the Lan–DeMets spending function of
// O'Brien–Fleming type has spent at information fraction t (rounds done of
// the most, 0 < t <= 1): α(t) = 2 − 2Φ(z₁₋α/₂/√t) (Lan & DeMets,
// "Discrete sequential boundaries for clinical trials", Biometrika 70,
// 1983). It spends almost nothing early (at t = 0.3, 0.0003 of 0.05) and
// alpha at t = 1.
func Spent(t, alpha float64) float64 {
	if t <= 0 {
		return 0
	}
	t = math.Min(t, 1)
	z := math.Sqrt2 * math.Erfinv(1-alpha)
	return math.Erfc(z / math.Sqrt(t) / math.Sqrt2)
}

// Decisions of repeat: auto, for one comparison and for the experiment.
const (
	// Decided: the change is significant at the look's bound.
	Decided = "significant"
	// Within: the change's interval lies inside ±MinEffect: no change as
	// large as that.
	Within = "within_min_effect"
	// Undecided: neither, after the most rounds.
	Undecided = "undecided"
)

// Look is one look of repeat: auto at the rounds done: each look tests
// at the α it spends, Spent(k/K) − Spent(previous/K), so that the looks
// together never spend more than Alpha (a Bonferroni bound over the
// looks: conservative, as the looks are correlated, and exact boundaries
// by recursive integration would allow a little more). k is the rounds
// run; the test is over the rounds the pairing keeps (Rounds), which are
// fewer when rounds whose servers waited unlike are left out
// (WaitedRound). Spending by the rounds run keeps the schedule: the look at
// the last round spends all of Alpha that is left, however many rounds it
// kept. A look whose kept rounds did not grow is not taken (its α waits
// for the next), unless it is the last.
type Look struct {
	Rounds int `json:"rounds"`
	// RoundsRun is the rounds run at this look, when more than Rounds.
	RoundsRun int     `json:"rounds_run,omitempty"`
	Bound     float64 `json:"bound"` // the nominal level of this look
	Spent     float64 `json:"spent"` // α spent up to and with this look
	// Comparisons are each point's primary figure against its reference,
	// paired over the rounds so far.
	Comparisons []LookComparison `json:"comparisons"`
	Decided     bool             `json:"decided"` // every comparison decided
}

// LookComparison is one point's change at a look, and what it decided.
type LookComparison struct {
	Point    string  `json:"point"`
	P        float64 `json:"p"`
	Delta    float64 `json:"delta"`
	Lo       float64 `json:"ci_low"`
	Hi       float64 `json:"ci_high"`
	Bounded  bool    `json:"ci_bounded"`
	Decision string  `json:"decision"` // Decided, Within, or "" at this look
}

// Sequential is what repeat: auto did: its rule, the rounds it could run,
// each look, and what it found.
type Sequential struct {
	Rule      string   `json:"rule"`
	Figure    FigureID `json:"figure"`
	MaxRounds int      `json:"max_rounds"`
	MinEffect float64  `json:"min_effect,omitempty"`
	Alpha     float64  `json:"alpha"`
	Looks     []Look   `json:"looks"`
	// Decision is Decided when every comparison was significant or within
	// MinEffect (and one at least significant), Within when all were
	// within, Undecided otherwise; Rounds the rounds run (each look says how
	// many it kept).
	Decision string `json:"decision"`
	Rounds   int    `json:"rounds"`
}

// look judges pairs of the primary figure (one per comparison, aligned by
// round) at rounds k of most. decided reports whether each comparison was
// decided at this look or before (decidedBefore, by point).
func look(k, run, most int, alpha, minEffect, spentBefore float64, comparisons []pairedRounds, decidedBefore map[string]string) Look {
	spent := Spent(float64(min(run, most))/float64(most), alpha)
	l := Look{Rounds: k, Spent: spent, Bound: spent - spentBefore, Decided: true}
	if run > k {
		l.RoundsRun = run
	}
	for _, c := range comparisons {
		p := stats.ComparePaired(c.base, c.test, alpha)
		lc := LookComparison{Point: c.point, P: p.P, Delta: p.Ratio - 1, Lo: p.Lo - 1, Hi: p.Hi - 1, Bounded: p.Bounded}
		switch {
		case decidedBefore[c.point] != "":
			lc.Decision = decidedBefore[c.point]
		case !p.Positive:
		case p.P <= l.Bound:
			lc.Decision = Decided
		case minEffect > 0 && p.Bounded && lc.Lo > -minEffect && lc.Hi < minEffect:
			lc.Decision = Within
		}
		if lc.Decision == "" {
			l.Decided = false
		}
		l.Comparisons = append(l.Comparisons, lc)
	}
	return l
}

// pairedRounds is one comparison's primary figure, round by round.
type pairedRounds struct {
	figure     FigureID
	point      string
	base, test []float64
}

// SequentialTest holds the looks of repeat: auto as rounds come in.
type SequentialTest struct {
	s       Sequential
	decided map[string]string
}

// NewSequentialTest starts the looks of an experiment of at most
// maxRounds rounds.
func NewSequentialTest(figure FigureID, maxRounds int, minEffect float64) *SequentialTest {
	return &SequentialTest{s: Sequential{Rule: SpendingRule, Figure: figure, MaxRounds: maxRounds, MinEffect: minEffect, Alpha: Alpha, Decision: Undecided},
		decided: map[string]string{}}
}

// Look takes the rounds done so far (each comparison's figure, aligned by
// round) and reports whether the experiment may stop. The first look is
// at stats.PairsToTest rounds, the fewest that can be significant.
func (q *SequentialTest) Look(comparisons []pairedRounds) bool { return q.lookAt(comparisons, 0) }

// lookAt is Look with run rounds run, of which the comparisons keep theirs
// (see Look the type).
func (q *SequentialTest) lookAt(comparisons []pairedRounds, run int) bool {
	if len(comparisons) == 0 {
		return false
	}
	k := len(comparisons[0].base)
	run = max(run, k)
	if k < stats.PairsToTest(Alpha) {
		return false
	}
	before := 0.0
	if n := len(q.s.Looks); n > 0 {
		before = q.s.Looks[n-1].Spent
		if q.s.Looks[n-1].Rounds >= k && run < q.s.MaxRounds {
			return false // nothing new to test: its α waits for the next look
		}
	}
	q.s.Figure = comparisons[0].figure
	l := look(k, run, q.s.MaxRounds, Alpha, q.s.MinEffect, before, comparisons, q.decided)
	q.s.Looks = append(q.s.Looks, l)
	q.s.Rounds = run // the rounds run; each look says how many it kept
	for _, c := range l.Comparisons {
		if c.Decision != "" {
			q.decided[c.Point] = c.Decision
		}
	}
	if l.Decided {
		q.s.Decision = Within
		for _, c := range l.Comparisons {
			if c.Decision == Decided {
				q.s.Decision = Decided
			}
		}
	}
	return l.Decided
}

// Result is the looks so far.
func (q *SequentialTest) Result() *Sequential {
	s := q.s
	return &s
}

// LookAtRounds looks at the primary figure of the rounds done so far
// (order[:n] with their results, by run index): Look on autoComparisons.
func (t *SequentialTest) LookAtRounds(e *spec.Experiment, points []Point, order []Slot, results []*result.Result) bool {
	comparisons, run := autoComparisons(e, points, order, results)
	return t.lookAt(comparisons, run)
}

// autoComparisons are the primary figure (throughput, or capacity) of each
// point and its reference over the complete rounds of order, for repeat:
// auto's look.
func autoComparisons(e *spec.Experiment, points []Point, order []Slot, results []*result.Result) ([]pairedRounds, int) {
	base := -1
	for i, p := range points {
		if p.Baseline {
			base = i
		}
	}
	factor, _ := Factor(e)
	refs := references(e, points, base, factor)
	complete, left, _ := rounds(points, order, results)
	run := len(complete) // the rounds run: complete ones, kept or left out for waits
	for _, l := range left {
		if l.Why == WaitedRound {
			run++
		}
	}
	// The primary figure: a capacity search's answer when the runs have
	// one, throughput otherwise.
	id := FigureThroughput
	if withCapacity(results) {
		id = FigureCapacity
	}
	var primary figure
	for _, f := range figures {
		if f.id == id {
			primary = f
		}
	}
	values := byRound(primary, points, order, results, complete)
	var out []pairedRounds
	for i, ref := range refs {
		if ref < 0 || ref == i {
			continue
		}
		out = append(out, pairedRounds{figure: id, point: points[i].Key, base: values[ref], test: values[i]})
	}
	return out, run
}

// judge returns a paired change of the primary figure at point as the
// looks judged it: significant when a look decided it so; otherwise tested
// at the last look's bound rather than Alpha (its Alpha says which).
func (q *Sequential) judge(c Change, point string) Change {
	if len(q.Looks) == 0 || c.Status == Untested {
		return c
	}
	last := q.Looks[len(q.Looks)-1]
	for _, lc := range last.Comparisons {
		if lc.Point != point {
			continue
		}
		if lc.Decision == Decided {
			c.Status = Significant
			return c
		}
		c.Alpha = last.Bound
		if c.P <= c.Alpha {
			c.Status = Significant
		} else {
			c.Status = NotSignificant
		}
	}
	return c
}
