package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Energy is the energy statistic of two samples (Székely and Rizzo): how far
// apart their distributions are, zero when they are the same. E is
// 2·E|X−Y| − E|X−X'| − E|Y−Y'|, each mean taken over all pairs (the
// V-statistic, as MongoDB's signal-processing-algorithms computes it); T is
// E scaled by n·m/(n+m), the statistic E-divisive splits on; H is E over
// 2·E|X−Y|, a share from 0 (same) to 1.
type Energy struct {
	E, T, H float64
}

// EnergyOf is the energy statistic of x and y; zero for an empty sample.
func EnergyOf(x, y []float64) Energy {
	n, m := float64(len(x)), float64(len(y))
	if n == 0 || m == 0 {
		return Energy{}
	}
	cross := 0.0
	for _, a := range x {
		for _, b := range y {
			cross += math.Abs(a - b)
		}
	}
	within := func(s []float64) float64 {
		w := 0.0
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				w += math.Abs(s[i] - s[j])
			}
		}
		return 2 * w / float64(len(s)*len(s))
	}
	a := cross / (n * m)
	e := 2*a - within(x) - within(y)
	h := 0.0
	if a > 0 {
		h = e / (2 * a)
	}
	return Energy{E: e, T: n * m / (n + m) * e, H: h}
}

// ChangePointOptions tune ChangePoints. The zero value is the defaults.
type ChangePointOptions struct {
	// MinSize is the fewest values on each side of a change (default 3).
	MinSize int
	// Alpha is the significance a change must reach (default 0.05).
	Alpha float64
	// Permutations is the permutation test's count (default 199).
	Permutations int
	// Seed makes the permutations, and so the answer, reproducible.
	Seed uint64
}

// ChangePoint is where a series' distribution shifted: values from Index on
// come from another distribution than those before, up to the next change.
type ChangePoint struct {
	Index int     `json:"index"`
	Q     float64 `json:"q"` // the split's statistic, T of the segments either side
	P     float64 `json:"p"` // the permutation test's p-value
	// Before and After are the medians of the segments either side.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
}

// ChangePoints finds the points where the distribution of xs shifted, by
// E-divisive means (Matteson and James, "A Nonparametric Approach for
// Multiple Change Point Analysis of Multivariate Data", JASA 2014), the
// method of MongoDB's and Apache Otava's performance CI. It splits the series
// hierarchically: in each segment between the changes found so far it takes
// the split with the largest energy statistic T (see Energy), keeps the best
// split of all segments if a permutation test finds it significant (its T
// beats that of the segment shuffled, at Alpha), and stops at the first that
// is not. Like the published implementations, it splits a segment in two
// (the paper's κ is the segment's end). The changes come sorted by index.
//
// The method sees any change of distribution, not only of the mean, and
// assumes nothing of its shape; a single outlier does not make a change,
// as each side needs MinSize values.
func ChangePoints(xs []float64, o ChangePointOptions) []ChangePoint {
	if o.MinSize < 1 {
		o.MinSize = 3
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.Permutations <= 0 {
		o.Permutations = 199
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x10ad1ab))
	bounds := []int{0, len(xs)}
	buf := make([]float64, len(xs))
	var out []ChangePoint
	for {
		best, bestQ, bestSeg := -1, 0.0, 0
		for s := 0; s+1 < len(bounds); s++ {
			tau, q := bestSplit(xs[bounds[s]:bounds[s+1]], o.MinSize)
			if tau >= 0 && q > bestQ {
				best, bestQ, bestSeg = bounds[s]+tau, q, s
			}
		}
		if best < 0 {
			break
		}
		seg := xs[bounds[bestSeg]:bounds[bestSeg+1]]
		perm := buf[:len(seg)]
		copy(perm, seg)
		beats := 0
		for range o.Permutations {
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			if _, q := bestSplit(perm, o.MinSize); q >= bestQ {
				beats++
			}
		}
		p := float64(beats+1) / float64(o.Permutations+1)
		if p > o.Alpha {
			break
		}
		out = append(out, ChangePoint{Index: best, Q: bestQ, P: p})
		bounds = append(bounds, best)
		slices.Sort(bounds)
	}
	slices.SortFunc(out, func(a, b ChangePoint) int { return a.Index - b.Index })
	for i := range out {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = out[i-1].Index
		}
		if i+1 < len(out) {
			hi = out[i+1].Index
		}
		out[i].Before = Summarize(xs[lo:out[i].Index], 0).Center
		out[i].After = Summarize(xs[out[i].Index:hi], 0).Center
	}
	return out
}

// bestSplit is the split τ of z (z[:τ] against z[τ:], each side at least
// minSize long) with the largest T, and that T; τ is -1 when z is too short.
// Sums of distances are kept incrementally, so a scan costs O(n²).
func bestSplit(z []float64, minSize int) (int, float64) {
	n := len(z)
	if n < 2*minSize {
		return -1, 0
	}
	// left[t] is the sum over i<j<t of |z_i − z_j|; right[t] the same over
	// t ≤ i < j; total is the sum over all pairs.
	left := make([]float64, n+1)
	right := make([]float64, n+1)
	for t := 1; t <= n; t++ {
		row := 0.0
		for i := 0; i < t-1; i++ {
			row += math.Abs(z[i] - z[t-1])
		}
		left[t] = left[t-1] + row
	}
	for t := n - 1; t >= 0; t-- {
		row := 0.0
		for j := t + 1; j < n; j++ {
			row += math.Abs(z[t] - z[j])
		}
		right[t] = right[t+1] + row
	}
	total := left[n]
	best, bestQ := -1, math.Inf(-1)
	for t := minSize; t <= n-minSize; t++ {
		a, b := float64(t), float64(n-t)
		cross := total - left[t] - right[t]
		e := 2*cross/(a*b) - 2*left[t]/(a*a) - 2*right[t]/(b*b)
		if q := a * b / float64(n) * e; q > bestQ {
			best, bestQ = t, q
		}
	}
	return best, bestQ
}
