// Package segment is the arithmetic of execution segments: how `loadlab run
// --segment K/N` takes an exact, disjoint slice of a plan, so that N
// machines running segments 1/N to N/N together run the whole plan.
//
// Every kind of work is a sequence of units numbered from 0: VU numbers,
// the arrivals of an open schedule, shared iterations, data rows. Segment
// K of N owns the units j with j mod N = K-1, and numbers them locally
// 0, 1, 2, ...: local unit i is global unit K-1 + N·i. The N segments
// partition every sequence, whatever its length, so their union is the
// whole plan by construction; a ramp that wants T VUs at time t wants
// Count(T) of them in each segment, and the counts sum to T.
//
// The functions are pure: no clock, no state.
package segment

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Segment is segment K of N, K from 1 to N. The zero value is the whole
// plan (1/1).
type Segment struct {
	K, N int
}

// Parse reads "K/N". K must be from 1 to N.
func Parse(s string) (Segment, error) {
	ks, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Segment{}, fmt.Errorf("segment %q: want K/N, as 2/4", s)
	}
	k, err := strconv.Atoi(strings.TrimSpace(ks))
	if err != nil {
		return Segment{}, fmt.Errorf("segment %q: K: %w", s, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil {
		return Segment{}, fmt.Errorf("segment %q: N: %w", s, err)
	}
	seg := Segment{K: k, N: n}
	if err := seg.Check(); err != nil {
		return Segment{}, fmt.Errorf("segment %q: %w", s, err)
	}
	return seg, nil
}

// Check says whether K and N make a segment.
func (s Segment) Check() error {
	if s == (Segment{}) {
		return nil
	}
	if s.N < 1 {
		return errors.New("N must be at least 1")
	}
	if s.K < 1 || s.K > s.N {
		return fmt.Errorf("K must be from 1 to N (%d)", s.N)
	}
	return nil
}

// norm is s with the zero value made 1/1.
func (s Segment) norm() Segment {
	if s.N == 0 {
		return Segment{K: 1, N: 1}
	}
	return s
}

// Whole says whether s is the whole plan.
func (s Segment) Whole() bool { return s.norm().N == 1 }

// String is "K/N".
func (s Segment) String() string {
	s = s.norm()
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Offset is the global number of local unit 0 (K-1); Stride is N.
func (s Segment) Offset() int64 { return int64(s.norm().K - 1) }

// Stride is the distance between two units of the segment, N.
func (s Segment) Stride() int64 { return int64(s.norm().N) }

// Global is the global number of local unit i.
func (s Segment) Global(i int64) int64 { return s.Offset() + s.Stride()*i }

// Owns says whether global unit j belongs to the segment.
func (s Segment) Owns(j int64) bool { return j >= 0 && j%s.Stride() == s.Offset() }

// Count is how many of the global units 0 to total-1 the segment owns.
func (s Segment) Count(total int64) int64 {
	if total <= s.Offset() {
		return 0
	}
	return (total - s.Offset() + s.Stride() - 1) / s.Stride()
}

// CountInt is Count for an int.
func (s Segment) CountInt(total int) int { return int(s.Count(int64(total))) }
