package report

import (
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
)

func TestDuetLine(t *testing.T) {
	t.Parallel()
	fig := func(ratio, p float64, testable, significant bool) *experiment.DuetFigure {
		return &experiment.DuetFigure{Figure: experiment.FigureThroughput, Ratio: ratio, Lo: ratio - 0.01, Hi: ratio + 0.01, Bounded: true,
			P: p, Testable: testable, Significant: significant, Detectable: 0.011}
	}
	for _, c := range []struct {
		v    experiment.DuetVerdict
		want string
	}{
		{experiment.DuetVerdict{Runs: 8, Alike: true, Throughput: fig(0.926, 0.0078125, true, true)},
			"B is 7.4% slower (duet, B/A 0.926 [0.916, 0.936], p=0.008, 8 runs; noise floor 1.1%)"},
		{experiment.DuetVerdict{Runs: 8, Alike: true, Throughput: fig(1.05, 0.0078125, true, true)},
			"B is 5.0% faster (duet, B/A 1.050 [1.040, 1.060], p=0.008, 8 runs; noise floor 1.1%)"},
		{experiment.DuetVerdict{Runs: 8, Alike: true, Throughput: fig(0.999, 0.945, true, false)},
			"B is not told from A: -0.1% (duet, B/A 0.999 [0.989, 1.009], p=0.945, 8 runs; noise floor 1.1%)"},
		{experiment.DuetVerdict{Runs: 4, Alike: true, Throughput: fig(0.9, 0.125, false, false)},
			"B against A: -10.0%, untested: a test takes 6 runs (duet, B/A 0.900 [0.890, 0.910], p=0.125, 4 runs)"},
		{experiment.DuetVerdict{Runs: 8, Alike: false, Throughput: fig(0.926, 0.0078125, true, true)},
			"B is 7.4% slower (duet, B/A 0.926 [0.916, 0.936], p=0.008, 8 runs; noise floor 1.1%); NOT ALIKE: the sides were not treated alike"},
		{experiment.DuetVerdict{}, "B against A: no verdict (no run measured both sides)"},
	} {
		if got := DuetLine(&c.v); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestDuetSides(t *testing.T) {
	t.Parallel()
	v := &experiment.DuetVerdict{
		Throughput: &experiment.DuetFigure{A: []float64{880, 870, 900}, B: []float64{810, 800, 830}},
		P95:        &experiment.DuetFigure{A: []float64{8.2, 8.4, 8.3}, B: []float64{9, 9.1, 8.8}},
	}
	got := DuetSides(v)
	want := []string{"  A: 880 req/s, p95 8.30 ms (medians of 3 runs)", "  B: 810 req/s, p95 9.00 ms (medians of 3 runs)"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if DuetSides(&experiment.DuetVerdict{}) != nil {
		t.Error("no figures: want no lines")
	}
}
