package stats

import (
	"math"
	"testing"
)

var oneToTen = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// pumaLike has the shape of the Puma threads study in DESIGN.md (job 1):
// requests/s against threads 1..10, gains flatten after 5 and throughput
// drops above 8. The numbers are made up; the shape is the published one.
var pumaLike = []float64{50, 100, 148, 190, 225, 230, 233, 235, 220, 200}

func TestBestIndex(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		y    []float64
		want int
	}{
		{"Puma-like", pumaLike, 7},
		{"first on ties", []float64{1, 5, 3, 5}, 1},
		{"negative values", []float64{-3, -1, -2}, 1},
		{"NaN ignored", []float64{nan, 2, 9, nan}, 2},
		{"infinity ignored", []float64{1, math.Inf(1), 3}, 2},
		{"only NaN", []float64{nan, nan}, -1},
		{"empty", nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BestIndex(tt.y); got != tt.want {
				t.Errorf("BestIndex(%v) = %d, want %d", tt.y, got, tt.want)
			}
		})
	}
}

func TestWithinOfBest(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		x, y     []float64
		fraction float64
		want     int
	}{
		// Best 235 at x = 8; 95% of it is 223.25, first reached at x = 5.
		{"Puma-like within 5%", oneToTen, pumaLike, 0.05, 4},
		{"Puma-like within 1%", oneToTen, pumaLike, 0.01, 6},
		{"Puma-like within 0", oneToTen, pumaLike, 0, 7},
		{"Puma-like within 100%", oneToTen, pumaLike, 1, 0},
		{"exactly at the threshold counts", []float64{1, 2, 3}, []float64{50, 90, 100}, 0.1, 1},
		{"x need not be sorted", []float64{8, 2, 4}, []float64{100, 96, 99}, 0.05, 1},
		{"negative values", []float64{1, 2, 3}, []float64{-20, -10.5, -10}, 0.1, 1},
		{"NaN point ignored", []float64{1, 2, 3, 4}, []float64{nan, 95, 100, 99}, 0.05, 1},
		{"NaN x ignored", []float64{nan, 2, 3}, []float64{100, 50, 99}, 0.05, 2},
		{"empty", nil, nil, 0.05, -1},
		{"only NaN", []float64{1, 2}, []float64{nan, nan}, 0.05, -1},
		{"lengths differ", []float64{1, 2}, []float64{1}, 0.05, -1},
		{"negative fraction", oneToTen, pumaLike, -0.1, -1},
		{"fraction above 1", oneToTen, pumaLike, 1.5, -1},
		{"NaN fraction", oneToTen, pumaLike, nan, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithinOfBest(tt.x, tt.y, tt.fraction); got != tt.want {
				t.Errorf("WithinOfBest = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestStepKnee: the knee is the smallest level after which each step adds
// less than the share, a step counting only when its runs do not overlap.
func TestStepKnee(t *testing.T) {
	same := func(y ...float64) []float64 { return y }
	tests := []struct {
		name           string
		median, lo, hi []float64
		want           StepKneeResult
	}{
		{"puma still rising", same(49, 54, 58, 61, 67), same(49, 54, 58, 61, 67), same(49, 54, 58, 61, 67), StepKneeResult{Reason: KneeStillRising}},
		{"flattens", same(100, 180, 240, 250, 255), same(99, 179, 239, 249, 254), same(101, 181, 241, 251, 256), StepKneeResult{Placed: true, Index: 2}},
		{"flat", same(100, 103, 101, 104), same(99, 102, 100, 103), same(101, 104, 102, 105), StepKneeResult{Reason: KneeFlat}},
		{"falls", same(100, 90, 80), same(100, 90, 80), same(100, 90, 80), StepKneeResult{Reason: KneeFlat}},
		{"overlap", same(100, 150, 159, 160), same(95, 142, 151, 152), same(105, 158, 167, 168), StepKneeResult{From: 1, To: 2, Reason: KneeUnplaced}},
		{"overlap at the end", same(100, 150, 159), same(95, 142, 151), same(105, 158, 167), StepKneeResult{From: 1, To: 2, Reason: KneeUnplaced}},
		{"two levels", same(100, 200), same(100, 200), same(100, 200), StepKneeResult{Reason: KneeTooFewLevels}},
	}
	for _, tt := range tests {
		if got := StepKnee(tt.median, tt.lo, tt.hi, DefaultKneeShare, nil); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestStepKneeTest: a step whose ranges overlap counts when the test says
// it is significant: the demo's (once in the README), 55.8, 105.1, 129.2, 137.8, 140.7 req/s
// where 4 to 6 workers adds 6.7% (p=0.032) with overlapping runs.
func TestStepKneeTest(t *testing.T) {
	median := []float64{55.81, 105.1, 129.2, 137.8, 140.7}
	lo := []float64{51.88, 104.1, 126.1, 133.2, 136.9}
	hi := []float64{56.59, 110.9, 136.1, 139.5, 145.3}
	if got := StepKnee(median, lo, hi, DefaultKneeShare, nil); got != (StepKneeResult{From: 2, To: 3, Reason: KneeUnplaced}) {
		t.Errorf("without a test: %+v, want unplaced between 2 and 3", got)
	}
	sig := func(j int) bool { return j == 3 }
	if got := StepKnee(median, lo, hi, DefaultKneeShare, sig); got != (StepKneeResult{Placed: true, Index: 3}) {
		t.Errorf("with the test: %+v, want the knee at 3", got)
	}
}
