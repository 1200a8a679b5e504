package schedule

import (
	"slices"
	"testing"
	"time"

	execseg "github.com/loadlab/loadlab/internal/segment"
)

// TestSegmentsUnionIsTheSchedule: the due times of segments 1/N to N/N of
// an open schedule, together, are the schedule's own, each exactly once:
// for a constant rate (exact integer due times) and for ramping stages.
func TestSegmentsUnionIsTheSchedule(t *testing.T) {
	constant, err := Constant(Rate{Count: 700, Per: time.Second}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	staged, err := Stages(Rate{Count: 10, Per: time.Second}, []Stage{
		{Target: Rate{Count: 400, Per: time.Second}, Over: 2 * time.Second},
		{Target: Rate{Count: 400, Per: time.Second}, Over: time.Second},
		{Target: Rate{Count: 3, Per: time.Second}, Over: 1500 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]*Open{"constant": constant, "stages": staged} {
		var whole []time.Duration
		for i := range o.Total() {
			d, _ := o.Due(i)
			whole = append(whole, d)
		}
		for n := 1; n <= 8; n++ {
			var union []time.Duration
			var total int64
			for k := 1; k <= n; k++ {
				s := o.Segment(execseg.Segment{K: k, N: n})
				if s.Duration() != o.Duration() {
					t.Fatalf("%s %d/%d: duration %v, want %v", name, k, n, s.Duration(), o.Duration())
				}
				total += s.Total()
				prev := time.Duration(-1)
				for i := range s.Total() {
					d, ok := s.Due(i)
					if !ok || d < prev {
						t.Fatalf("%s %d/%d: Due(%d) = %v, %v after %v", name, k, n, i, d, ok, prev)
					}
					if w, _ := o.Due(int64(k-1) + int64(n)*i); w != d {
						t.Fatalf("%s %d/%d: Due(%d) = %v, want the whole's arrival %d at %v", name, k, n, i, d, int64(k-1)+int64(n)*i, w)
					}
					prev = d
					union = append(union, d)
				}
				if _, ok := s.Due(s.Total()); ok {
					t.Fatalf("%s %d/%d: an arrival past its end", name, k, n)
				}
			}
			if total != o.Total() {
				t.Fatalf("%s N=%d: totals sum to %d, want %d", name, n, total, o.Total())
			}
			slices.Sort(union)
			if !slices.Equal(union, whole) {
				t.Fatalf("%s N=%d: the union of the segments' due times is not the schedule", name, n)
			}
		}
	}
}

// TestRampSegmentsSum: at every moment, the segments of a ramp want VUs
// that sum to what the whole ramp wants.
func TestRampSegmentsSum(t *testing.T) {
	r, err := NewRamp(1, []VUStage{{Target: 23, Over: 2 * time.Second}, {Target: 23, Over: time.Second}, {Target: 0, Over: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 7; n++ {
		maxSum := 0
		for k := 1; k <= n; k++ {
			maxSum += r.Segment(execseg.Segment{K: k, N: n}).Max()
		}
		if maxSum != r.Max() {
			t.Fatalf("N=%d: the segments' Max sum to %d, want %d", n, maxSum, r.Max())
		}
		for t0 := time.Duration(0); t0 <= r.Duration()+time.Second; t0 += 37 * time.Millisecond {
			sum := 0
			for k := 1; k <= n; k++ {
				sum += r.Segment(execseg.Segment{K: k, N: n}).VUs(t0)
			}
			if sum != r.VUs(t0) {
				t.Fatalf("N=%d at %v: segments want %d VUs, the whole %d", n, t0, sum, r.VUs(t0))
			}
		}
	}
}
