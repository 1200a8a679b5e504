// Package chart draws the charts of loadlab's reports with gonum.org/v1/plot:
// SVG for the HTML report, which inlines it, and PNG for the markdown report,
// which links files written beside it.
//
// A Chart is plain data: what to draw, not how. The package owns the look:
//
//   - series take colors from the Okabe-Ito palette, which stays distinct for
//     colorblind readers, and, for sweeps, a different point shape each;
//   - a series of at most 50 points is a sweep, drawn as a line with a point
//     at each X; a longer one is a time series, drawn as a line alone, and
//     thinned to the smallest and largest value of each slice about 1.5 pt
//     wide, which keeps spikes and keeps the SVG small;
//   - Lo and Hi, when given, are drawn as error bars on a sweep and as a
//     shaded band around a time series;
//   - with XLabels the X axis names categories (X = 0, 1, 2...): points and
//     error bars are drawn without connecting lines, side by side when there
//     are several series;
//   - a legend sits to the right of the plot when there is more than one
//     series; grid lines follow the labelled ticks;
//   - the Y axis ends on a labelled tick with room above the highest point,
//     a sweep's X axis extends past its end points, and an all-zero series
//     is drawn on 0 to 1, so no point or tick sits on an edge;
//   - a mark's or a level's label goes where it covers no line, point or
//     other label, inside the data area (so never over the legend), with
//     room for a fallback font wider than Liberation Sans;
//   - ticks are labelled in the axis Unit (ms, MiB, req/s), never "1e+06".
//
// Values that are NaN or infinite are missing data: lines break around
// them. A chart without a single finite point is drawn empty with the note
// "no data". Series of unequal lengths, and non-positive X on a logarithmic
// axis, are errors. Text is untrusted: control characters are replaced, long
// names are shortened, and the SVG backend escapes the rest.
//
// SVG output starts at the <svg> element (no XML declaration, no comment), so
// it can be inlined in HTML or saved as a file. It references nothing
// outside itself: fonts are not embedded; text names Liberation Sans, whose
// metrics were used for layout, then the metric-compatible Arial and
// Helvetica, then the generic sans-serif. The same Chart always renders to
// the same bytes.
package chart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
	"unicode"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A Series is one line of a chart.
type Series struct {
	Name string
	X, Y []float64
	// Lo and Hi, when not nil, are the spread at each X, such as the minimum
	// and maximum of repeated runs or a confidence interval. They are
	// absolute values, not offsets from Y.
	Lo, Hi []float64
	Dashed bool
}

// A Mark is a vertical line at X, such as the knee of a sweep or the
// recommended setting.
type Mark struct {
	X     float64
	Label string
}

// A Level is a horizontal line at Y, such as a memory quota.
type Level struct {
	Y     float64
	Label string
}

// A Chart describes one chart. The zero value is an empty chart.
type Chart struct {
	Title, XLabel, YLabel string
	// XUnit and YUnit say how tick labels are printed.
	XUnit, YUnit Unit
	Series       []Series
	Marks        []Mark
	Levels       []Level
	// XLabels, when set, names the categories at X = 0, 1, 2...
	// (such as "glibc", "jemalloc") and makes the X axis categorical.
	XLabels []string
	// YMin0 makes the Y axis include zero.
	YMin0 bool
	// LogX makes the X axis logarithmic, for sweeps such as 1, 2, 4... 64.
	LogX bool
}

// Limits on what a chart may be asked to be, so that a bad argument cannot
// allocate gigabytes.
const (
	maxSVGSize = 10000 // points
	maxPNGSize = 8192  // pixels
	pngDPI     = 96    // so that a PNG of 800 pixels matches an SVG of 600 points
)

// SVG writes the chart as an SVG document of width by height points
// (1/72 inch; 600 by 360 suits a report).
func (c *Chart) SVG(w io.Writer, width, height float64) error {
	if !(width > 0 && width <= maxSVGSize && height > 0 && height <= maxSVGSize) {
		return fmt.Errorf("chart: SVG size %gx%g points: each must be above 0 and at most %d", width, height, maxSVGSize)
	}
	figure, err := c.build(width)
	if err != nil {
		return err
	}
	canvas := vgsvg.New(vg.Points(width), vg.Points(height))
	figure.draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return fmt.Errorf("chart: rendering SVG: %w", err)
	}
	out := buf.Bytes()
	// Drop the XML declaration and the generator comment: neither belongs
	// inside HTML, and a UTF-8 XML document needs no declaration.
	if i := bytes.Index(out, []byte("<svg")); i > 0 {
		out = out[i:]
	}
	out = bytes.ReplaceAll(out, []byte("font-family:"+fontFamily+";"), []byte("font-family:"+fontFallbacks+";"))
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("chart: writing SVG: %w", err)
	}
	return nil
}

// PNG writes the chart as a PNG image of width by height pixels, at 96
// pixels per inch.
func (c *Chart) PNG(w io.Writer, width, height int) error {
	if width <= 0 || width > maxPNGSize || height <= 0 || height > maxPNGSize {
		return fmt.Errorf("chart: PNG size %dx%d pixels: each must be 1 to %d", width, height, maxPNGSize)
	}
	figure, err := c.build(float64(width) * 72 / pngDPI)
	if err != nil {
		return err
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	canvas := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(pngDPI))
	figure.draw(draw.New(canvas))
	if err := png.Encode(w, canvas.Image()); err != nil {
		return fmt.Errorf("chart: writing PNG: %w", err)
	}
	return nil
}

// Fonts. fontFamily is the family name the SVG backend writes; SVG output
// replaces it with fontFallbacks.
const (
	fontFamily    = "Liberation Sans"
	fontFallbacks = "'Liberation Sans',Arial,Helvetica,sans-serif"
)

func sans(size float64, weight xfont.Weight) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans", Weight: weight}, font.Length(size))
}

// Look.
var (
	// palette is Okabe-Ito without its yellow, which is unreadable on white,
	// ordered so that the first colors differ most.
	palette = [...]color.NRGBA{
		{0x00, 0x72, 0xB2, 0xFF}, // blue
		{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
		{0x00, 0x9E, 0x73, 0xFF}, // bluish green
		{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
		{0xE6, 0x9F, 0x00, 0xFF}, // orange
		{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
		{0x00, 0x00, 0x00, 0xFF}, // black
	}
	shapes = [...]draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{},
		draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{},
	}
	gridColor  = color.Gray{0xE0}
	guideColor = color.Gray{0x40} // marks and levels
	labelVeil  = color.NRGBA{0xFF, 0xFF, 0xFF, 0xC0}
)

// Layout.
const (
	timeSeriesPoints = 50  // a series with more points is a time series
	thinningWidth    = 1.5 // points of canvas per kept min/max pair
	categoryDodge    = 0.12
	maxTitleRunes    = 120
	maxLabelRunes    = 80
	maxNameRunes     = 32 // legend entries and category names
	// legendFontSize is the legend's text in points: a size above the tick
	// labels', since a legend is read, not glanced at.
	legendFontSize = 10
	// legendGap is the space between the plot's data area and the legend,
	// so that lines ending at the right edge do not run into it.
	legendGap = 14
	legendPad = 8 // around the legend
	// legendSpacing is the space between legend entries: enough that the
	// entries' text boxes do not meet in DejaVu Sans, the usual fallback
	// when Liberation Sans is missing, whose lines are taller.
	legendSpacing = 4
	// canvasMargin is kept free on every side of the canvas.
	canvasMargin = 3
	// axisLabelPad is the space between an axis's tick labels and its label.
	axisLabelPad = 3
)

// figure is a chart ready to draw: the plot, and the legend drawn beside it.
type figure struct {
	plot   *plot.Plot
	legend *plot.Legend // nil when there is at most one series
}

// build turns the chart into a gonum plot for a canvas width points wide.
func (c *Chart) build(width float64) (*figure, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	p := plot.New()
	p.Title.Text = clean(c.Title, maxTitleRunes)
	p.Title.TextStyle.Font = sans(12, xfont.WeightBold)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = clean(c.XLabel, maxLabelRunes)
	p.Y.Label.Text = clean(c.YLabel, maxLabelRunes)
	for _, axis := range []*plot.Axis{&p.X, &p.Y} {
		axis.Label.TextStyle.Font = sans(10, xfont.WeightNormal)
		axis.Tick.Label.Font = sans(9, xfont.WeightNormal)
		axis.Tick.Length = vg.Points(4)
		axis.Padding = vg.Points(4)
		axis.Label.Padding = vg.Points(axisLabelPad)
	}

	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = gridColor
	if len(c.XLabels) > 0 {
		grid.Vertical.Color = nil // categories have no in-between
	}
	p.Add(grid)

	legend := plot.NewLegend()
	legend.TextStyle.Font = sans(legendFontSize, xfont.WeightNormal)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(legendSpacing)

	hasData := false
	for i, s := range c.Series {
		drawn, err := c.addSeries(p, &legend, i, s, width)
		if err != nil {
			return nil, err
		}
		hasData = hasData || drawn
	}
	p.Add(guides{marks: c.Marks, levels: c.Levels, obstacles: c.obstacles()})
	if !hasData {
		p.Add(note("no data"))
		p.X.Tick.Marker = plot.ConstantTicks{}
		p.Y.Tick.Marker = plot.ConstantTicks{}
		return &figure{plot: p}, nil
	}

	c.setAxes(p)
	f := &figure{plot: p}
	if len(c.Series) > 1 {
		f.legend = &legend
	}
	return f, nil
}

// validate reports structural errors in the chart: mismatched lengths, and
// values a logarithmic axis cannot show.
func (c *Chart) validate() error {
	for i, s := range c.Series {
		n := len(s.X)
		if len(s.Y) != n {
			return fmt.Errorf("chart: series %d (%q): %d X values but %d Y values", i, s.Name, n, len(s.Y))
		}
		if (s.Lo == nil) != (s.Hi == nil) {
			return fmt.Errorf("chart: series %d (%q): Lo and Hi must be given together", i, s.Name)
		}
		if s.Lo != nil && (len(s.Lo) != n || len(s.Hi) != n) {
			return fmt.Errorf("chart: series %d (%q): %d X values but %d Lo and %d Hi", i, s.Name, n, len(s.Lo), len(s.Hi))
		}
		if c.LogX {
			for _, x := range s.X {
				if x <= 0 && !math.IsInf(x, -1) { // -Inf is missing, like NaN
					return fmt.Errorf("chart: series %d (%q): X = %g cannot be shown on a logarithmic axis", i, s.Name, x)
				}
			}
		}
	}
	if c.LogX {
		for _, m := range c.Marks {
			if m.X <= 0 && !math.IsInf(m.X, -1) {
				return fmt.Errorf("chart: mark %q: X = %g cannot be shown on a logarithmic axis", m.Label, m.X)
			}
		}
	}
	return nil
}

// addSeries adds the plotters of series i and its legend entry. It reports
// whether the series had any finite point.
func (c *Chart) addSeries(p *plot.Plot, legend *plot.Legend, i int, s Series, width float64) (bool, error) {
	col := palette[i%len(palette)]
	line := draw.LineStyle{Color: col, Width: vg.Points(1.5)}
	if s.Dashed {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	glyph := draw.GlyphStyle{Color: col, Radius: vg.Points(2.5), Shape: shapes[i%len(shapes)]}
	categorical := len(c.XLabels) > 0
	timeSeries := len(s.X) > timeSeriesPoints && !categorical

	var offset float64
	if categorical && len(c.Series) > 1 {
		offset = (float64(i) - float64(len(c.Series)-1)/2) * categoryDodge
	}
	runs := finiteRuns(s, offset)
	if timeSeries {
		line.Width = vg.Points(1)
		// Runs between missing values share the width by their share of points.
		buckets := width / thinningWidth
		for j, run := range runs {
			runs[j] = thin(run, max(1, int(buckets*float64(len(run))/float64(len(s.X)))))
		}
	}

	for _, run := range runs {
		xys := make(plotter.XYs, len(run))
		for j, pt := range run {
			xys[j] = plotter.XY{X: pt.x, Y: pt.y}
		}
		if s.Lo != nil {
			if err := addSpread(p, run, col, timeSeries); err != nil {
				return false, fmt.Errorf("chart: series %d (%q): %w", i, s.Name, err)
			}
		}
		if !categorical {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return false, fmt.Errorf("chart: series %d (%q): %w", i, s.Name, err)
			}
			l.LineStyle = line
			p.Add(l)
		}
		// A time series shows a point only where it has no neighbour.
		if !timeSeries || len(run) == 1 {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return false, fmt.Errorf("chart: series %d (%q): %w", i, s.Name, err)
			}
			sc.GlyphStyle = glyph
			p.Add(sc)
		}
	}

	var thumbs []plot.Thumbnailer
	if !categorical {
		thumbs = append(thumbs, &plotter.Line{LineStyle: line})
	}
	if !timeSeries {
		thumbs = append(thumbs, &plotter.Scatter{GlyphStyle: glyph})
	}
	legend.Add(clean(s.Name, maxNameRunes), thumbs...)
	return len(runs) > 0, nil
}

// addSpread draws the spread of a run: error bars on a sweep, a band
// around a time series.
func addSpread(p *plot.Plot, run []point, col color.NRGBA, band bool) error {
	if band {
		var ring plotter.XYs
		flush := func(edge plotter.XYs) error {
			if len(edge) == 0 {
				return nil
			}
			for j := len(edge) - 1; j >= 0; j-- {
				ring = append(ring, plotter.XY{X: edge[j].X, Y: edge[j].Y})
			}
			poly, err := plotter.NewPolygon(ring)
			if err != nil {
				return err
			}
			poly.Color = color.NRGBA{col.R, col.G, col.B, 0x40}
			poly.LineStyle.Width = 0
			p.Add(poly)
			ring = nil
			return nil
		}
		// The band breaks where the spread is missing, like a line at NaN.
		var lower plotter.XYs
		for _, pt := range run {
			if !pt.hasSpread {
				if err := flush(lower); err != nil {
					return err
				}
				lower = nil
				continue
			}
			ring = append(ring, plotter.XY{X: pt.x, Y: pt.hi})
			lower = append(lower, plotter.XY{X: pt.x, Y: pt.lo})
		}
		return flush(lower)
	}

	var bars errorBars
	for _, pt := range run {
		if !pt.hasSpread {
			continue
		}
		// The bar spans Lo..Hi, stretched to reach Y if Y lies outside.
		lo, hi := math.Min(pt.lo, pt.y), math.Max(pt.hi, pt.y)
		bars.xys = append(bars.xys, plotter.XY{X: pt.x, Y: pt.y})
		bars.errs = append(bars.errs, struct{ Low, High float64 }{pt.y - lo, hi - pt.y})
	}
	if len(bars.xys) == 0 {
		return nil
	}
	eb, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return err
	}
	eb.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(1)}
	eb.CapWidth = vg.Points(6)
	p.Add(eb)
	return nil
}

// errorBars feeds plotter.NewYErrorBars.
type errorBars struct {
	xys  plotter.XYs
	errs plotter.YErrors
}

func (e errorBars) Len() int                         { return len(e.xys) }
func (e errorBars) XY(i int) (x, y float64)          { return e.xys.XY(i) }
func (e errorBars) YError(i int) (low, high float64) { return e.errs.YError(i) }

// setAxes sets ranges and tickers once the data is known.
func (c *Chart) setAxes(p *plot.Plot) {
	if c.YMin0 {
		p.Y.Min = math.Min(p.Y.Min, 0)
		p.Y.Max = math.Max(p.Y.Max, 0)
	}
	var yTicks []float64
	magnitude := math.Max(math.Abs(p.Y.Min), math.Abs(p.Y.Max))
	p.Y.Min, p.Y.Max, yTicks = padRange(p.Y.Min, p.Y.Max, c.YUnit, c.YMin0)
	p.Y.Tick.Marker = linearTicks{unit: c.YUnit, at: yTicks, magnitude: magnitude}
	x := c.distinctX()
	// A sweep's end points get room beside them, as the top ones get above,
	// so that no point is drawn half outside the axes; a time series runs
	// from edge to edge.
	sweep := len(c.XLabels) == 0 && !c.timeSeries()

	switch {
	case len(c.XLabels) > 0:
		ticks := make(plot.ConstantTicks, len(c.XLabels))
		for i, name := range c.XLabels {
			ticks[i] = plot.Tick{Value: float64(i), Label: clean(name, maxNameRunes)}
		}
		p.X.Tick.Marker = ticks
		p.X.Min = math.Min(p.X.Min, 0) - 0.5
		p.X.Max = math.Max(p.X.Max, float64(len(c.XLabels)-1)) + 0.5
	case c.LogX:
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{unit: c.XUnit, at: x}
		if p.X.Min == p.X.Max { // gonum would widen it by ±1, past zero
			p.X.Min /= 2
			p.X.Max *= 2
		} else if sweep {
			f := math.Pow(p.X.Max/p.X.Min, xPadShare)
			p.X.Min, p.X.Max = p.X.Min/f, p.X.Max*f
		}
	default:
		p.X.Tick.Marker = linearTicks{unit: c.XUnit, at: x}
		if p.X.Min == p.X.Max {
			d := math.Max(math.Abs(p.X.Min)/2, 1)
			p.X.Min, p.X.Max = p.X.Min-d, p.X.Max+d
		} else if sweep {
			d := (p.X.Max - p.X.Min) * xPadShare
			p.X.Min, p.X.Max = p.X.Min-d, p.X.Max+d
		}
	}
}

// Axis padding: the share of the data's span left free above the highest
// value (before rounding up to a tick) and beside a sweep's end points.
const (
	yPadShare = 0.06
	xPadShare = 0.04
)

// padRange widens a Y range so that the highest point is drawn clear of the
// axis's end, and ends it on a labelled tick: 0 to 912/s becomes 0 to
// 1000/s with ticks every 200/s. A range that includes zero from YMin0
// keeps 0 as its bottom, and one of a single value (an all-zero series) is
// widened from 0 rather than around it. ticks are the labelled values, from
// bottom to top (nil: let linearTicks choose).
func padRange(lo, hi float64, unit Unit, min0 bool) (bottom, top float64, ticks []float64) {
	if !isFinite(lo) || !isFinite(hi) || lo > hi {
		return lo, hi, nil
	}
	if lo == hi {
		switch {
		case lo == 0:
			return 0, 1, []float64{0, 0.5, 1}
		case min0 && lo > 0:
			lo = 0
		case min0:
			hi = 0
		default:
			d := math.Abs(lo) / 10
			lo, hi = lo-d, hi+d
		}
	}
	span := hi - lo
	top, bottom = hi+yPadShare*span, lo
	if !(min0 && lo == 0) {
		bottom = lo - yPadShare*span
		if lo >= 0 && bottom < 0 {
			bottom = 0 // positive data never gets a negative axis
		}
	}
	s := unit.scale(math.Max(math.Abs(lo), math.Abs(hi)))
	values := roundTicks(bottom/s.factor, top/s.factor, tickCount)
	if len(values) < 2 {
		return bottom, top, nil
	}
	step := values[1] - values[0]
	first, last := math.Ceil(bottom/s.factor/step-1e-9), math.Ceil(top/s.factor/step-1e-9)
	if !(min0 && lo == 0) {
		first = math.Floor(bottom/s.factor/step + 1e-9)
		bottom = first * step * s.factor
	}
	top = last * step * s.factor
	for k := first; k <= last && len(ticks) < maxSweepTicks; k++ {
		ticks = append(ticks, k*step*s.factor)
	}
	return bottom, top, ticks
}

// timeSeries reports whether any series is long enough to be drawn as a
// time series.
func (c *Chart) timeSeries() bool {
	for _, s := range c.Series {
		if len(s.X) > timeSeriesPoints {
			return true
		}
	}
	return false
}

// obstacles are what a guide's label must not cover, in data coordinates:
// each run of each series as a polyline (a single point is a polyline of
// one), and each error bar as a vertical segment.
func (c *Chart) obstacles() [][]plotter.XY {
	var out [][]plotter.XY
	for i, s := range c.Series {
		var offset float64
		if len(c.XLabels) > 0 && len(c.Series) > 1 {
			offset = (float64(i) - float64(len(c.Series)-1)/2) * categoryDodge
		}
		for _, run := range finiteRuns(s, offset) {
			line := make([]plotter.XY, len(run))
			for j, pt := range run {
				line[j] = plotter.XY{X: pt.x, Y: pt.y}
				if pt.hasSpread {
					out = append(out, []plotter.XY{{X: pt.x, Y: math.Min(pt.lo, pt.y)}, {X: pt.x, Y: math.Max(pt.hi, pt.y)}})
				}
			}
			if len(c.XLabels) > 0 { // categories: points, no lines between them
				for _, xy := range line {
					out = append(out, []plotter.XY{xy})
				}
				continue
			}
			out = append(out, line)
		}
	}
	return out
}

// distinctX returns the finite X values of all series, sorted, without
// repeats.
func (c *Chart) distinctX() []float64 {
	var xs []float64
	for _, s := range c.Series {
		for j, x := range s.X {
			if isFinite(x) && isFinite(s.Y[j]) {
				xs = append(xs, x)
			}
		}
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// draw draws the figure, with the legend, if any, to the right of the plot.
func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	// A margin, so that a browser's font of larger ascent than Liberation
	// Sans's (the title at the top, the rotated Y label at the left) is not
	// clipped at the canvas's edge.
	m := vg.Points(canvasMargin)
	c = draw.Crop(c, m, -m, m, -m)
	if f.legend == nil {
		f.plot.Draw(c)
		return
	}
	plotArea, legendArea := f.layout(c)
	f.plot.Draw(plotArea)
	f.legend.Draw(legendArea)
}

// layout splits the canvas between the plot and the legend beside it: the
// legend's column is as wide as its longest entry (at most half the canvas),
// starts legendGap right of the plot's canvas, and begins below the title.
func (f *figure) layout(c draw.Canvas) (plotArea, legendArea draw.Canvas) {
	pad := vg.Points(legendPad)
	// The entries' width as laid out, and room for a wider font's.
	width := f.legend.Rectangle(c).Size().X*(1+labelSlack) + vg.Points(legendGap) + pad
	if width > c.Size().X/2 { // too narrow a canvas: keep the plot
		width = c.Size().X / 2
	}
	top := pad
	if f.plot.Title.Text != "" {
		top += f.plot.Title.TextStyle.Rectangle(f.plot.Title.Text).Size().Y + f.plot.Title.Padding
	}
	return draw.Crop(c, 0, -width, 0, 0), draw.Crop(c, c.Size().X-width+vg.Points(legendGap), 0, 0, -top)
}

// A point is one finite (x, y), with its spread when it has one.
type point struct {
	x, y      float64
	lo, hi    float64
	hasSpread bool
}

// finiteRuns splits a series into runs of consecutive finite points, so that
// lines break at missing values. offset shifts X (categories side by side).
func finiteRuns(s Series, offset float64) [][]point {
	var runs [][]point
	var run []point
	for j, x := range s.X {
		y := s.Y[j]
		if !isFinite(x) || !isFinite(y) {
			if len(run) > 0 {
				runs = append(runs, run)
				run = nil
			}
			continue
		}
		pt := point{x: x + offset, y: y}
		if s.Lo != nil && isFinite(s.Lo[j]) && isFinite(s.Hi[j]) {
			pt.lo, pt.hi, pt.hasSpread = s.Lo[j], s.Hi[j], true
		}
		run = append(run, pt)
	}
	if len(run) > 0 {
		runs = append(runs, run)
	}
	return runs
}

// thin reduces a run to at most two points per bucket of consecutive points:
// the lowest and the highest, in their order. The spread of each is widened
// to the bucket's lowest Lo and highest Hi, so bands keep their extremes.
func thin(run []point, buckets int) []point {
	if len(run) <= 2*buckets {
		return run
	}
	out := make([]point, 0, 2*buckets)
	for b := range buckets {
		chunk := run[b*len(run)/buckets : (b+1)*len(run)/buckets]
		if len(chunk) == 0 {
			continue
		}
		lowest, highest := 0, 0
		spread := point{lo: math.Inf(1), hi: math.Inf(-1)}
		for j, pt := range chunk {
			if pt.y < chunk[lowest].y {
				lowest = j
			}
			if pt.y > chunk[highest].y {
				highest = j
			}
			if pt.hasSpread {
				spread.lo = math.Min(spread.lo, pt.lo)
				spread.hi = math.Max(spread.hi, pt.hi)
				spread.hasSpread = true
			}
		}
		first, second := min(lowest, highest), max(lowest, highest)
		for _, j := range []int{first, second} {
			pt := chunk[j]
			pt.lo, pt.hi, pt.hasSpread = spread.lo, spread.hi, spread.hasSpread
			out = append(out, pt)
			if first == second {
				break
			}
		}
	}
	return out
}

// guides draws marks and levels across the data area, with their labels.
// Each label goes where it covers no series (line, point or error bar), no
// other guide's line and no other label: the first free place of a few
// tried, top first; only when none is free, the one that covers least.
// Labels stay inside the data area, so they never reach the legend, the
// title or the tick labels.
type guides struct {
	marks     []Mark
	levels    []Level
	obstacles [][]plotter.XY // see Chart.obstacles
}

// labelSlack widens a label's box, when testing what it covers, for a
// browser's font of wider metrics than Liberation Sans's (DejaVu Sans is
// about 10% wider).
const labelSlack = 0.15

func (g guides) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	line := draw.LineStyle{Color: guideColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
	style := p.X.Tick.Label
	style.Color = guideColor
	pad := vg.Points(3)

	// What labels must not cover, in canvas coordinates.
	var segs []segment
	var dots []vg.Point
	for _, o := range g.obstacles {
		for k, xy := range o {
			pt := vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
			if len(o) == 1 {
				dots = append(dots, pt)
			}
			if k > 0 {
				segs = append(segs, segment{vg.Point{X: trX(o[k-1].X), Y: trY(o[k-1].Y)}, pt})
			}
		}
		if len(o) > 1 && len(o) <= timeSeriesPoints {
			for _, xy := range o {
				dots = append(dots, vg.Point{X: trX(xy.X), Y: trY(xy.Y)})
			}
		}
	}
	type drawnMark struct {
		x     vg.Length
		label string
	}
	var marks []drawnMark
	for _, m := range g.marks {
		if !isFinite(m.X) || m.X < p.X.Min || m.X > p.X.Max {
			continue
		}
		x, label := trX(m.X), clean(m.Label, maxLabelRunes)
		// Marks at one X (a knee that is also the pick) share a line and a label.
		if k := slices.IndexFunc(marks, func(d drawnMark) bool { return math.Abs(float64(d.x-x)) < 0.5 }); k >= 0 {
			if label != "" {
				marks[k].label = strings.TrimPrefix(marks[k].label+", "+label, ", ")
			}
			continue
		}
		marks = append(marks, drawnMark{x, label})
	}
	type drawnLevel struct {
		y     vg.Length
		label string
	}
	var levels []drawnLevel
	for _, l := range g.levels {
		if isFinite(l.Y) && l.Y >= p.Y.Min && l.Y <= p.Y.Max {
			levels = append(levels, drawnLevel{trY(l.Y), clean(l.Label, maxLabelRunes)})
		}
	}
	// Guides' lines are obstacles too, but for a label's own.
	guideSegs := func(skipMark, skipLevel int) []segment {
		var out []segment
		for i, m := range marks {
			if i != skipMark {
				out = append(out, segment{vg.Point{X: m.x, Y: c.Min.Y}, vg.Point{X: m.x, Y: c.Max.Y}})
			}
		}
		for i, l := range levels {
			if i != skipLevel {
				out = append(out, segment{vg.Point{X: c.Min.X, Y: l.y}, vg.Point{X: c.Max.X, Y: l.y}})
			}
		}
		return out
	}
	var placed []vg.Rectangle
	dot := vg.Points(3) // a point's glyph, and a little room
	cost := func(r vg.Rectangle, lines []segment) int {
		if r.Min.X < c.Min.X || r.Max.X > c.Max.X || r.Min.Y < c.Min.Y || r.Max.Y > c.Max.Y {
			return 1 << 20
		}
		// Text is placed from its left end: a wider font grows rightwards.
		r.Max.X += (r.Max.X - r.Min.X) * labelSlack
		if r.Max.X > c.Max.X {
			return 1 << 20
		}
		r.Min.X, r.Max.X = r.Min.X-1, r.Max.X+1
		r.Min.Y, r.Max.Y = r.Min.Y-1, r.Max.Y+1
		n := 0
		for _, q := range placed {
			if overlaps(r, q) {
				n += 1000
			}
		}
		for _, l := range lines {
			if l.crosses(r) {
				n += 100
			}
		}
		for _, s := range segs {
			if s.crosses(r) {
				n++
			}
		}
		for _, d := range dots {
			if overlaps(r, vg.Rectangle{Min: vg.Point{X: d.X - dot, Y: d.Y - dot}, Max: vg.Point{X: d.X + dot, Y: d.Y + dot}}) {
				n++
			}
		}
		return n
	}
	// place tries the candidates in order and returns the first free one,
	// or the one that covers least.
	place := func(candidates []vg.Rectangle, lines []segment) int {
		best, bestCost := 0, math.MaxInt
		for i, r := range candidates {
			if k := cost(r, lines); k < bestCost {
				best, bestCost = i, k
				if k == 0 {
					break
				}
			}
		}
		return best
	}
	veil := func(r vg.Rectangle) {
		// A veil behind a label keeps it readable where a grid line passes
		// under it.
		c.SetColor(labelVeil)
		c.Fill(r.Path())
	}
	step := vg.Points(2)

	for i, m := range marks {
		c.StrokeLine2(line, m.x, c.Min.Y, m.x, c.Max.Y)
		size := style.Rectangle(m.label).Size()
		var candidates []vg.Rectangle
		for y := c.Max.Y - pad; y-size.Y >= c.Min.Y; y -= step {
			for _, left := range []bool{false, true} {
				x := m.x + pad
				if left {
					x = m.x - pad - size.X*(1+labelSlack)
				}
				candidates = append(candidates, vg.Rectangle{Min: vg.Point{X: x, Y: y - size.Y}, Max: vg.Point{X: x + size.X, Y: y}})
			}
		}
		if len(candidates) == 0 {
			continue
		}
		r := candidates[place(candidates, guideSegs(i, -1))]
		placed = append(placed, r)
		veil(r)
		s := style
		s.XAlign, s.YAlign = draw.XLeft, draw.YBottom
		c.FillText(s, r.Min, m.label)
	}
	line.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	for i, l := range levels {
		c.StrokeLine2(line, c.Min.X, l.y, c.Max.X, l.y)
		size := style.Rectangle(l.label).Size()
		var candidates []vg.Rectangle
		for x := c.Max.X - pad - size.X*labelSlack; x-size.X >= c.Min.X; x -= step {
			for _, below := range []bool{false, true} {
				y := l.y + pad/2
				if below {
					y = l.y - pad/2 - size.Y
				}
				candidates = append(candidates, vg.Rectangle{Min: vg.Point{X: x - size.X, Y: y}, Max: vg.Point{X: x, Y: y + size.Y}})
			}
		}
		if len(candidates) == 0 {
			continue
		}
		r := candidates[place(candidates, guideSegs(-1, i))]
		placed = append(placed, r)
		veil(r)
		s := style
		s.XAlign, s.YAlign = draw.XLeft, draw.YBottom
		c.FillText(s, r.Min, l.label)
	}
}

// A segment is a straight piece of a line on the canvas.
type segment struct{ a, b vg.Point }

// crosses reports whether the segment passes through the rectangle
// (Liang-Barsky clipping).
func (s segment) crosses(r vg.Rectangle) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := float64(s.b.X-s.a.X), float64(s.b.Y-s.a.Y)
	for _, e := range [4][2]float64{
		{-dx, float64(s.a.X - r.Min.X)}, {dx, float64(r.Max.X - s.a.X)},
		{-dy, float64(s.a.Y - r.Min.Y)}, {dy, float64(r.Max.Y - s.a.Y)},
	} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// DataRange widens the axes to show every mark and level.
func (g guides) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, m := range g.marks {
		if isFinite(m.X) {
			xmin, xmax = math.Min(xmin, m.X), math.Max(xmax, m.X)
		}
	}
	for _, l := range g.levels {
		if isFinite(l.Y) {
			ymin, ymax = math.Min(ymin, l.Y), math.Max(ymax, l.Y)
		}
	}
	return xmin, xmax, ymin, ymax
}

// note writes a line of text in the middle of the data area.
type note string

func (n note) Plot(c draw.Canvas, p *plot.Plot) {
	style := p.Y.Label.TextStyle
	style.Color = guideColor
	style.XAlign, style.YAlign = draw.XCenter, draw.YCenter
	c.FillText(style, c.Center(), string(n))
}

// clean makes untrusted text safe to lay out: one line, valid UTF-8, no
// control or non-character code points (which XML forbids), and at most
// limit runes. Escaping for SVG is the backend's job.
func clean(text string, limit int) string {
	if text == "" {
		return ""
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	var b strings.Builder
	n := 0
	for _, r := range text {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case unicode.IsControl(r) || r == 0xFFFE || r == 0xFFFF:
			r = '\uFFFD'
		}
		if n == limit {
			b.WriteRune('…')
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Compile-time checks of the gonum interfaces the package relies on.
var (
	_ plot.Plotter    = guides{}
	_ plot.DataRanger = guides{}
	_ plot.Plotter    = note("")
	_ plot.Ticker     = linearTicks{}
	_ plot.Ticker     = logTicks{}
)
