package chart

import (
	"math"
	"testing"
)

// TestAxesPadded: the Y axis ends on a labelled tick above the highest
// value, with room for its point; a sweep's X axis extends past its end
// points; an all-zero series gets an axis from 0, not -1 to 1 (issue 27).
func TestAxesPadded(t *testing.T) {
	t.Parallel()
	x := []float64{1, 2, 3, 4}
	for _, tt := range []struct {
		name   string
		chart  *Chart
		lo, hi float64 // the axis's Y range wanted
	}{
		{"throughput", &Chart{YUnit: PerSecond, YMin0: true, Series: []Series{{Name: "rps", X: x, Y: []float64{471, 912, 897, 900}}}}, 0, 1000},
		{"on a tick", &Chart{YMin0: true, Series: []Series{{Name: "n", X: x, Y: []float64{100, 200, 300, 400}}}}, 0, 500},
		{"all zero", &Chart{YMin0: true, Series: []Series{{Name: "errors", X: x, Y: []float64{0, 0, 0, 0}}}}, 0, 1},
		{"all zero, no YMin0", &Chart{Series: []Series{{Name: "errors", X: x, Y: []float64{0, 0, 0, 0}}}}, 0, 1},
		{"positive, no YMin0", &Chart{Series: []Series{{Name: "p50", X: x, Y: []float64{0.5, 0.6, 0.8, 15}}}}, 0, 17.5},
		{"constant", &Chart{YMin0: true, Series: []Series{{Name: "vus", X: x, Y: []float64{50, 50, 50, 50}}}}, 0, 60},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := tt.chart.build(432)
			if err != nil {
				t.Fatal(err)
			}
			p := f.plot
			if math.Abs(p.Y.Min-tt.lo) > 1e-9 || math.Abs(p.Y.Max-tt.hi) > 1e-9 {
				t.Errorf("Y axis %g to %g, want %g to %g", p.Y.Min, p.Y.Max, tt.lo, tt.hi)
			}
			ticks := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)
			if last := ticks[len(ticks)-1]; math.Abs(last.Value-p.Y.Max) > 1e-9 || last.Label == "" {
				t.Errorf("the last Y tick is %+v, want a labelled one at the axis's end %g", last, p.Y.Max)
			}
			if p.X.Min >= 1 || p.X.Max <= 4 {
				t.Errorf("X axis %g to %g: the end points 1 and 4 sit on its ends", p.X.Min, p.X.Max)
			}
		})
	}
}

// TestYTicksKeepTheDataScale: an axis padded from 912/s to 1000/s is
// labelled 200/s... 1000/s, in the scale of its data, not 0.2k/s.
func TestYTicksKeepTheDataScale(t *testing.T) {
	t.Parallel()
	texts := svgTexts(t, renderSVG(t, &Chart{YUnit: PerSecond, YMin0: true, Series: []Series{{Name: "rps", X: []float64{1, 2, 3}, Y: []float64{471, 912, 897}}}}))
	for _, want := range []string{"0/s", "200/s", "1000/s"} {
		if !contains(texts, want) {
			t.Errorf("no tick %q in %q", want, texts)
		}
	}
}
