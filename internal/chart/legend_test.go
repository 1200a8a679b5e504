package chart

import (
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// TestLegendBesideThePlot: the legend is drawn in its own column, clear of
// the data area by legendGap, so that lines ending at the right edge (a
// memory chart's RSS and PSS) do not run into its entries; and its text is
// larger than the tick labels'.
func TestLegendBesideThePlot(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5}
	c := &Chart{Title: "Server memory", XLabel: "time (s)", YLabel: "memory", YUnit: Bytes, YMin0: true,
		Series: []Series{{Name: "RSS", X: x, Y: []float64{1, 20, 25, 25, 25, 25}}, {Name: "PSS", X: x, Y: []float64{1, 12, 15, 15, 15, 15}, Dashed: true}},
		Levels: []Level{{Y: 10, Label: "quota"}}}
	for _, width := range []float64{432, 720} {
		f, err := c.build(width)
		if err != nil {
			t.Fatal(err)
		}
		canvas := draw.New(vgsvg.New(vg.Points(width), vg.Points(240)))
		plotArea, legendArea := f.layout(canvas)
		data := f.plot.DataCanvas(plotArea)
		legend := f.legend.Rectangle(legendArea)
		if gap := legend.Min.X - data.Max.X; gap < vg.Points(legendGap) {
			t.Errorf("width %g: the legend starts %.1f pt right of the data area, want %d pt or more", width, gap.Points(), legendGap)
		}
		if legend.Max.X > canvas.Max.X || legend.Max.Y > canvas.Max.Y || legend.Min.Y < canvas.Min.Y {
			t.Errorf("width %g: the legend %v leaves the canvas %v", width, legend, canvas.Rectangle)
		}
		if got, ticks := f.legend.TextStyle.Font.Size, f.plot.Y.Tick.Label.Font.Size; got <= ticks {
			t.Errorf("legend text %v pt, tick labels %v pt: want the legend larger", got.Points(), ticks.Points())
		}
	}
}
