package segment

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Segment
		bad  bool
	}{
		{in: "1/1", want: Segment{1, 1}},
		{in: "3/8", want: Segment{3, 8}},
		{in: " 4/4 ", want: Segment{4, 4}},
		{in: "0/4", bad: true},
		{in: "5/4", bad: true},
		{in: "1/0", bad: true},
		{in: "-1/4", bad: true},
		{in: "2", bad: true},
		{in: "a/4", bad: true},
		{in: "1/b", bad: true},
	} {
		got, err := Parse(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestCountTable(t *testing.T) {
	for _, c := range []struct {
		seg   Segment
		total int64
		want  int64
	}{
		{Segment{}, 10, 10},
		{Segment{1, 1}, 7, 7},
		{Segment{1, 4}, 10, 3}, // 0 4 8
		{Segment{2, 4}, 10, 3}, // 1 5 9
		{Segment{3, 4}, 10, 2}, // 2 6
		{Segment{4, 4}, 10, 2}, // 3 7
		{Segment{3, 4}, 2, 0},
		{Segment{1, 4}, 0, 0},
		{Segment{2, 3}, 1, 0},
		{Segment{1, 3}, 1, 1},
	} {
		if got := c.seg.Count(c.total); got != c.want {
			t.Errorf("%v.Count(%d) = %d, want %d", c.seg, c.total, got, c.want)
		}
	}
}

// TestPartition is the whole property: for every N and length, the
// segments' global units are disjoint and together are 0 to total-1, each
// segment's local units map to global units it owns, and the counts sum.
func TestPartition(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for total := int64(0); total <= 40; total++ {
			var all []int64
			var sum int64
			for k := 1; k <= n; k++ {
				s := Segment{k, n}
				c := s.Count(total)
				sum += c
				for i := range c {
					j := s.Global(i)
					if !s.Owns(j) || j >= total {
						t.Fatalf("%v: local %d is global %d (total %d)", s, i, j, total)
					}
					all = append(all, j)
				}
				if j := s.Global(c); j < total {
					t.Fatalf("%v: Count(%d) = %d leaves out global %d", s, total, c, j)
				}
			}
			if sum != total {
				t.Fatalf("N=%d total=%d: counts sum to %d", n, total, sum)
			}
			slices.Sort(all)
			for i, j := range all {
				if j != int64(i) {
					t.Fatalf("N=%d total=%d: units %v", n, total, all)
				}
			}
		}
	}
}

// TestRampSums: a ramp's VU count T at any moment splits so that the
// segments' counts sum to T, and each segment's count never goes down
// when T goes up (so a segment never stops a VU the plan keeps).
func TestRampSums(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for T := 0; T <= 30; T++ {
			sum := 0
			for k := 1; k <= n; k++ {
				s := Segment{k, n}
				sum += s.CountInt(T)
				if s.CountInt(T+1) < s.CountInt(T) {
					t.Fatalf("%v: count falls from T=%d to %d", s, T, T+1)
				}
			}
			if sum != T {
				t.Fatalf("N=%d T=%d: sum %d", n, T, sum)
			}
		}
	}
}
