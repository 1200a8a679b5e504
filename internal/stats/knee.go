package stats

import "math"

// BestIndex returns the index of the highest y, the first one on ties, or
// -1 when y holds no finite value. For figures where lower is better
// (latency), pass the negated values.
func BestIndex(y []float64) int {
	best := -1
	for i, v := range y {
		if isFinite(v) && (best < 0 || v > y[best]) {
			best = i
		}
	}
	return best
}

// WithinOfBest returns the index of the smallest x whose y is at least
// best - fraction*|best| (for positive y, y >= (1-fraction)*max): the
// cheapest setting that gives up no more than fraction of the best result.
// Points with a non-finite x or y are ignored. It returns -1 when the
// lengths differ, no point is finite, or fraction is not in [0, 1].
func WithinOfBest(x, y []float64, fraction float64) int {
	if len(x) != len(y) || !(fraction >= 0 && fraction <= 1) {
		return -1
	}
	best := math.Inf(-1)
	for i := range y {
		if isFinite(x[i]) && isFinite(y[i]) {
			best = math.Max(best, y[i])
		}
	}
	if math.IsInf(best, -1) {
		return -1
	}
	threshold := best - fraction*math.Abs(best)
	found := -1
	for i := range y {
		if isFinite(x[i]) && isFinite(y[i]) && y[i] >= threshold && (found < 0 || x[i] < x[found]) {
			found = i
		}
	}
	return found
}

func isFinite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// DefaultKneeShare is the share of throughput a step must add to count as a
// gain, when the plan does not set its own (knee: 5%).
const DefaultKneeShare = 0.05

// KneeReason says why StepKnee placed no knee at one level.
type KneeReason string

const (
	// KneeTooFewLevels: fewer than three levels; a knee needs a rise and
	// a flattening.
	KneeTooFewLevels KneeReason = "too_few_levels"
	// KneeFlat: no step adds the share: throughput is flat (or falls)
	// from the first level on.
	KneeFlat KneeReason = "flat"
	// KneeStillRising: the last step still adds the share: the knee, if
	// any, lies beyond the levels measured.
	KneeStillRising KneeReason = "still_rising"
	// KneeUnplaced: some step adds the share by its medians, but its runs
	// overlap the previous level's, so it may be noise: the knee lies
	// somewhere from From to To (To the last level: perhaps beyond).
	KneeUnplaced KneeReason = "unplaced"
)

// StepKneeResult is where StepKnee puts the knee.
type StepKneeResult struct {
	Placed bool // Index is the knee
	Index  int
	// From and To bound the knee when it is not placed within one step
	// (Reason KneeUnplaced).
	From, To int
	Reason   KneeReason // why no knee was placed; empty when Placed
}

// StepKnee finds the knee of a rising curve as a user reads it: the
// smallest level after which each further step adds less than share of
// throughput (0.05: 5%). Levels are given in increasing order by the
// median, lowest and highest run of each (one run: all three equal).
//
// A step from level j-1 to j adds the share when its medians do
// (median[j] >= (1+share)*median[j-1]) and it is more than noise: the
// lowest run of level j is above the highest run of level j-1, or
// significant(j) says a test finds the step significant (nil: no test).
// The ranges decide with few runs, where no test can (with three runs a
// side a Mann–Whitney test cannot reach p < 0.05); the test decides where
// a stray run makes the ranges overlap. A step whose medians add the share
// while neither says it is more than noise may be noise: the knee then lies
// between the last step sure to add the share and the last that may, and
// Reason is KneeUnplaced.
func StepKnee(median, lo, hi []float64, share float64, significant func(j int) bool) StepKneeResult {
	n := len(median)
	if n < 3 || len(lo) != n || len(hi) != n {
		return StepKneeResult{Reason: KneeTooFewLevels}
	}
	lastSure, lastMaybe := 0, 0
	for j := 1; j < n; j++ {
		if !(median[j] >= (1+share)*median[j-1]) || median[j] <= 0 {
			continue
		}
		lastMaybe = j
		if lo[j] > hi[j-1] || (significant != nil && significant(j)) {
			lastSure = j
		}
	}
	switch {
	case lastMaybe == 0:
		return StepKneeResult{Reason: KneeFlat}
	case lastSure == n-1:
		return StepKneeResult{Reason: KneeStillRising}
	case lastSure == lastMaybe:
		return StepKneeResult{Placed: true, Index: lastSure}
	}
	return StepKneeResult{From: lastSure, To: lastMaybe, Reason: KneeUnplaced}
}
