package chart

import (
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// TestGuideLabelsStayClear: a capacity chart's mark at its last X, whose
// label once ran into the legend, and a knee whose label crossed the
// throughput line keep their labels inside the data area, clear of every
// series segment, of the other guides' lines and of each other (issue 27).
func TestGuideLabelsStayClear(t *testing.T) {
	t.Parallel()
	x := []float64{20, 40, 60, 80, 100, 120, 160}
	for _, tt := range []struct {
		name  string
		chart *Chart
	}{
		{"capacity at the right end", &Chart{Title: "Throughput against load", XUnit: PerSecond, YUnit: PerSecond, YMin0: true,
			Series: []Series{{Name: "responses/s", X: x, Y: []float64{40, 80, 119, 143, 157, 155, 187}}, {Name: "offered", X: x, Y: x, Dashed: true}},
			Marks:  []Mark{{X: 160, Label: "capacity 187.5/s"}}, Levels: []Level{{Y: 150, Label: "p95(latency) < 200ms"}}}},
		{"knee on the line's top", &Chart{Title: "Requests per second by workers", YUnit: PerSecond, YMin0: true,
			Series: []Series{{Name: "requests/s", X: []float64{1, 2, 3, 4}, Y: []float64{471, 912, 897, 900}}},
			Marks:  []Mark{{X: 2, Label: "knee (<5%/step)"}, {X: 3, Label: "recommended"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := tt.chart.build(432)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder.Canvas{}
			c := draw.NewCanvas(rec, vg.Points(432), vg.Points(240))
			f.draw(c)
			// The data area as draw laid it out.
			m := vg.Points(canvasMargin)
			inner := draw.Crop(c, m, -m, m, -m)
			area := inner
			if f.legend != nil {
				area, _ = f.layout(inner)
			}
			data := f.plot.DataCanvas(area)
			trX, trY := f.plot.Transforms(&data)
			var segs []segment
			for _, o := range (&guides{obstacles: tt.chart.obstacles()}).obstacles {
				for k := 1; k < len(o); k++ {
					segs = append(segs, segment{vg.Point{X: trX(o[k-1].X), Y: trY(o[k-1].Y)}, vg.Point{X: trX(o[k].X), Y: trY(o[k].Y)}})
				}
			}
			wanted := map[string]bool{}
			for _, mk := range tt.chart.Marks {
				wanted[mk.Label] = true
			}
			for _, l := range tt.chart.Levels {
				wanted[l.Label] = true
			}
			style := f.plot.X.Tick.Label
			var boxes []vg.Rectangle
			for _, a := range rec.Actions {
				s, ok := a.(*recorder.FillString)
				if !ok || !wanted[s.String] {
					continue
				}
				size := style.Rectangle(s.String).Size()
				r := vg.Rectangle{Min: s.Point, Max: vg.Point{X: s.Point.X + size.X, Y: s.Point.Y + size.Y}}
				if r.Min.X < data.Min.X || r.Max.X > data.Max.X || r.Min.Y < data.Min.Y || r.Max.Y > data.Max.Y {
					t.Errorf("%q at %v leaves the data area %v", s.String, r, data.Rectangle)
				}
				for _, sg := range segs {
					if sg.crosses(r) {
						t.Errorf("%q at %v is crossed by the series segment %v", s.String, r, sg)
					}
				}
				for _, b := range boxes {
					if overlaps(r, b) {
						t.Errorf("%q at %v overlaps another label at %v", s.String, r, b)
					}
				}
				boxes = append(boxes, r)
			}
			if len(boxes) != len(wanted) {
				t.Errorf("%d of the %d guide labels drawn", len(boxes), len(wanted))
			}
		})
	}
}
