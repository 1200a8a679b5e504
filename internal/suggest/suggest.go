// Package suggest finds the word a user probably meant: the "did you mean"
// of every error about an unknown name (a plan key, a variable, a threshold
// metric). One rule everywhere, so that loadlab's hints agree.
package suggest

import (
	"math"
	"strings"
)

// Closest returns the candidate nearest to name, or "" when none is near
// enough: at most one slip in three characters (a prefix of three or more
// characters counts as one slip). Ties go to the earlier candidate.
func Closest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	best, bestDistance := "", math.MaxInt
	for _, c := range candidates {
		d := Distance(lower, strings.ToLower(c))
		if len(lower) >= 3 && strings.HasPrefix(strings.ToLower(c), lower) {
			d = min(d, 1)
		}
		if d < bestDistance {
			best, bestDistance = c, d
		}
	}
	if bestDistance <= max(1, len([]rune(name))/3) {
		return best
	}
	return ""
}

// Distance counts the insertions, deletions, substitutions and swaps of
// neighbouring characters that turn a into b (optimal string alignment), so
// "latnecy" is one slip from "latency".
func Distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// Three rows suffice: the swap looks two rows back.
	prev2, prev, cur := make([]int, len(t)+1), make([]int, len(t)+1), make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
