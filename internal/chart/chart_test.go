package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"testing"
)

// Report-sized canvases: an SVG of 600x360 points, a PNG of 800x480 pixels.
const (
	svgWidth, svgHeight = 600, 360
	pngWidth, pngHeight = 800, 480
	maxSVGBytes         = 60 << 10
)

// threads is a sweep of Puma threads 1..10 with the spread of three runs.
func threads() *Chart {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	rps := []float64{120, 230, 330, 410, 470, 480, 485, 470, 430, 400}
	lo, hi := make([]float64, len(x)), make([]float64, len(x))
	for i, v := range rps {
		lo[i], hi[i] = v*0.95, v*1.04
	}
	return &Chart{
		Title: "Requests/s against Puma threads", XLabel: "threads", YLabel: "throughput",
		YUnit: PerSecond, YMin0: true,
		Series: []Series{
			{Name: "req/s", X: x, Y: rps, Lo: lo, Hi: hi},
			{Name: "previous build", X: x, Y: []float64{110, 220, 310, 380, 430, 440, 440, 420, 400, 380}, Dashed: true},
		},
		Marks: []Mark{{X: 5, Label: "knee"}},
	}
}

// memory is a time series of one hour, one sample a second, with a band.
func memory(band bool) *Chart {
	const n = 3600
	x, y := make([]float64, n), make([]float64, n)
	var lo, hi []float64
	for i := range n {
		x[i] = float64(i)
		y[i] = 2e9 + 4e8*math.Sin(float64(i)/300) + float64(i*7919%1000)*1e5
		if band {
			lo, hi = append(lo, y[i]*0.97), append(hi, y[i]*1.03)
		}
	}
	return &Chart{
		Title: "RSS over time", XLabel: "elapsed", YLabel: "memory",
		XUnit: Seconds, YUnit: Bytes, YMin0: true,
		Series: []Series{{Name: "RSS", X: x, Y: y, Lo: lo, Hi: hi}},
		Levels: []Level{{Y: 2560 << 20, Label: "quota 2,560 MiB"}},
	}
}

// allocators compares two builds by category, against a quota.
func allocators() *Chart {
	return &Chart{
		Title: "Memory by allocator", YLabel: "memory", YUnit: Bytes, YMin0: true,
		XLabels: []string{"glibc", "jemalloc"},
		Series: []Series{
			{Name: "average", X: []float64{0, 1}, Y: []float64{2100 << 20, 1500 << 20},
				Lo: []float64{2000 << 20, 1400 << 20}, Hi: []float64{2200 << 20, 1600 << 20}},
			{Name: "peak", X: []float64{0, 1}, Y: []float64{2900 << 20, 2000 << 20}},
		},
		Levels: []Level{{Y: 2560 << 20, Label: "quota"}},
	}
}

// connections is a doubling sweep on a logarithmic axis.
func connections() *Chart {
	return &Chart{
		Title: "p50 against connections", XLabel: "connections", YLabel: "latency",
		YUnit: Milliseconds, LogX: true,
		Series: []Series{{Name: "p50", X: []float64{1, 2, 4, 8, 16, 32, 64}, Y: []float64{0.5, 0.6, 0.8, 1.5, 3, 7, 15}}},
		Marks:  []Mark{{X: 16, Label: "recommended"}},
	}
}

func TestSVG(t *testing.T) {
	tests := []struct {
		name     string
		chart    *Chart
		wantText []string // among the text elements
	}{
		{"sweep with spread and mark", threads(), []string{
			"Requests/s against Puma threads", "threads", "throughput", "knee", "req/s", "previous build",
			"1", "10", "0/s", "500/s"}},
		{"time series", memory(false), []string{"RSS over time", "0 s", "20 min", "0 B", "2.0 GiB", "quota 2,560 MiB"}},
		{"time series with band", memory(true), []string{"RSS over time", "50 min", "2.5 GiB"}},
		{"categorical", allocators(), []string{"glibc", "jemalloc", "average", "peak", "quota", "2.5 GiB"}},
		{"log sweep", connections(), []string{"1", "2", "4", "8", "16", "32", "64", "recommended", "10.0 ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := renderSVG(t, tt.chart)
			texts := svgTexts(t, svg)
			for _, want := range tt.wantText {
				if !contains(texts, want) {
					t.Errorf("no text %q in %q", want, texts)
				}
			}
			checkSelfContained(t, svg)
			if len(svg) > maxSVGBytes {
				t.Errorf("SVG is %d bytes, want at most %d", len(svg), maxSVGBytes)
			}
			for _, text := range texts {
				if strings.Contains(text, "e+") {
					t.Errorf("tick label %q in exponent notation", text)
				}
			}
		})
	}
}

// TestSVGSize records the sizes asked about in review: a 3600-point time
// series and a 10-point sweep.
func TestSVGSize(t *testing.T) {
	tests := []struct {
		name  string
		chart *Chart
	}{
		{"3600-point time series", memory(false)},
		{"3600-point time series with band", memory(true)},
		{"10-point sweep, 2 series, spread", threads()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(renderSVG(t, tt.chart))
			t.Logf("%s: %d bytes", tt.name, n)
			if n > maxSVGBytes {
				t.Errorf("SVG is %d bytes, want at most %d", n, maxSVGBytes)
			}
		})
	}
}

func TestEscaping(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	tests := []struct {
		name  string
		chart *Chart
		want  string // the text as it should read once parsed
	}{
		{"title", &Chart{Title: evil, Series: threads().Series}, evil},
		{"axis labels", &Chart{XLabel: evil, YLabel: `"quoted" & 'single'`, Series: threads().Series}, `"quoted" & 'single'`},
		{"series name", &Chart{Series: []Series{{Name: evil, X: []float64{1, 2}, Y: []float64{1, 2}}, {Name: "b", X: []float64{1}, Y: []float64{3}}}}, evil},
		{"mark and level", &Chart{Series: threads().Series, Marks: []Mark{{X: 3, Label: evil}}, Levels: []Level{{Y: 100, Label: "]]> &amp;"}}}, "]]> &amp;"},
		{"category", &Chart{XLabels: []string{evil, "b"}, Series: []Series{{X: []float64{0, 1}, Y: []float64{1, 2}}}}, evil},
		{"control characters and bad UTF-8", &Chart{Title: "a\x00b\x1b[31mc\xffd\ufffee\nf", Series: threads().Series}, "a\ufffdb\ufffd[31mc\ufffdd\ufffde f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := renderSVG(t, tt.chart)
			texts := svgTexts(t, svg) // fails unless the SVG is well-formed XML
			if bytes.Contains(svg, []byte("<script")) {
				t.Errorf("raw <script in SVG")
			}
			if !contains(texts, tt.want) {
				t.Errorf("no text %q in %q", tt.want, texts)
			}
		})
	}
}

func TestLongTextShortened(t *testing.T) {
	long := strings.Repeat("é", 500)
	c := &Chart{Title: long, XLabel: long, Series: []Series{{Name: long, X: []float64{1}, Y: []float64{1}}, {Name: "b", X: []float64{2}, Y: []float64{2}}}}
	// Each kind of text is cut to its own limit, with an ellipsis: the
	// title, the axis label and the legend entry all appear, shortened.
	found := map[int]bool{}
	for _, text := range svgTexts(t, renderSVG(t, c)) {
		n := len([]rune(text))
		if n > maxTitleRunes+1 {
			t.Errorf("text of %d runes, want at most %d", n, maxTitleRunes+1)
		}
		if strings.HasSuffix(text, "…") {
			found[n] = true
		}
	}
	for _, want := range []int{maxTitleRunes + 1, maxLabelRunes + 1, maxNameRunes + 1} {
		if !found[want] {
			t.Errorf("no shortened text of %d runes (title %d, label %d, legend %d): found %v", want, maxTitleRunes+1, maxLabelRunes+1, maxNameRunes+1, found)
		}
	}
}

func TestDeterministic(t *testing.T) {
	charts := map[string]func() *Chart{
		"sweep": threads, "time series": func() *Chart { return memory(true) },
		"categorical": allocators, "log": connections, "empty": func() *Chart { return &Chart{} },
	}
	for name, chart := range charts {
		t.Run(name, func(t *testing.T) {
			if a, b := renderSVG(t, chart()), renderSVG(t, chart()); !bytes.Equal(a, b) {
				t.Errorf("two SVG renders differ")
			}
			if a, b := renderPNG(t, chart()), renderPNG(t, chart()); !bytes.Equal(a, b) {
				t.Errorf("two PNG renders differ")
			}
		})
	}
}

func TestDegenerate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		chart  *Chart
		noData bool // drawn empty, with the note
	}{
		{"zero chart", &Chart{}, true},
		{"empty series", &Chart{Series: []Series{{Name: "a"}}}, true},
		{"only NaN", &Chart{Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{nan, nan}}}}, true},
		{"only infinities", &Chart{Series: []Series{{X: []float64{inf, 1}, Y: []float64{1, -inf}}}}, true},
		{"no data but marks and levels", &Chart{Marks: []Mark{{X: 1, Label: "m"}}, Levels: []Level{{Y: 2, Label: "l"}}}, true},
		{"empty log chart", &Chart{LogX: true, Series: []Series{{X: []float64{nan}, Y: []float64{1}}}}, true},
		{"categories without series", &Chart{XLabels: []string{"a", "b"}}, true},
		{"one point", &Chart{Series: []Series{{X: []float64{3}, Y: []float64{7}}}}, false},
		{"one point on a log axis", &Chart{LogX: true, Series: []Series{{X: []float64{3}, Y: []float64{7}}}}, false},
		{"one category", &Chart{XLabels: []string{"only"}, Series: []Series{{X: []float64{0}, Y: []float64{7}}}}, false},
		{"all Y equal", &Chart{Series: []Series{{X: []float64{1, 2, 3}, Y: []float64{5, 5, 5}}}}, false},
		{"all Y zero with YMin0", &Chart{YMin0: true, Series: []Series{{X: []float64{1, 2}, Y: []float64{0, 0}}}}, false},
		{"negative Y with YMin0", &Chart{YMin0: true, Series: []Series{{X: []float64{1, 2}, Y: []float64{-5, -3}}}}, false},
		{"NaN in the middle", &Chart{Series: []Series{{X: []float64{1, 2, 3, 4}, Y: []float64{1, nan, 3, 4}}}}, false},
		{"NaN X", &Chart{Series: []Series{{X: []float64{1, nan, 3}, Y: []float64{1, 2, 3}}}}, false},
		{"NaN spread", &Chart{Series: []Series{{X: []float64{1, 2, 3}, Y: []float64{1, 2, 3}, Lo: []float64{nan, 1, 2}, Hi: []float64{2, nan, 4}}}}, false},
		{"spread not around Y", &Chart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}, Lo: []float64{3, 5}, Hi: []float64{0, 1}}}}, false},
		{"NaN band", &Chart{Series: []Series{nanBand()}}, false},
		{"huge values", &Chart{Series: []Series{{X: []float64{-1e300, 1e300}, Y: []float64{-1e300, 1e300}}}}, false},
		{"tiny values", &Chart{YUnit: Seconds, Series: []Series{{X: []float64{1e-300, 2e-300}, Y: []float64{1e-300, 3e-300}}}}, false},
		{"nearly equal values", &Chart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1e15, 1e15 + 1}}}}, false},
		{"NaN mark and level", &Chart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}}}, Marks: []Mark{{X: nan}}, Levels: []Level{{Y: inf}}}, false},
		{"more series than colors", &Chart{Series: manySeries(20)}, false},
		{"unknown unit", &Chart{YUnit: Unit(99), XUnit: Unit(-1), Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts := svgTexts(t, renderSVG(t, tt.chart))
			if got := contains(texts, "no data"); got != tt.noData {
				t.Errorf("note %q shown: %v, want %v (texts %q)", "no data", got, tt.noData, texts)
			}
			renderPNG(t, tt.chart)
		})
	}
}

func nanBand() Series {
	s := Series{}
	for i := range 200 {
		v := float64(i % 17)
		lo, hi := v-1, v+1
		if i%50 == 7 {
			lo = math.NaN()
		}
		s.X, s.Y = append(s.X, float64(i)), append(s.Y, v)
		s.Lo, s.Hi = append(s.Lo, lo), append(s.Hi, hi)
	}
	return s
}

func manySeries(n int) []Series {
	var series []Series
	for i := range n {
		series = append(series, Series{Name: strings.Repeat("s", i+1), X: []float64{1, 2, 3}, Y: []float64{float64(i), float64(i + 1), float64(i)}})
	}
	return series
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name          string
		chart         *Chart
		width, height float64 // SVG points, and PNG pixels once truncated
	}{
		{"X and Y of different lengths", &Chart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1}}}}, svgWidth, svgHeight},
		{"Lo without Hi", &Chart{Series: []Series{{X: []float64{1}, Y: []float64{1}, Lo: []float64{1}}}}, svgWidth, svgHeight},
		{"Lo shorter than X", &Chart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}, Lo: []float64{1}, Hi: []float64{1, 2}}}}, svgWidth, svgHeight},
		{"zero X on a log axis", &Chart{LogX: true, Series: []Series{{X: []float64{0, 1}, Y: []float64{1, 2}}}}, svgWidth, svgHeight},
		{"negative mark on a log axis", &Chart{LogX: true, Series: []Series{{X: []float64{1}, Y: []float64{1}}}, Marks: []Mark{{X: -1}}}, svgWidth, svgHeight},
		{"zero width", threads(), 0, svgHeight},
		{"negative height", threads(), svgWidth, -1},
		{"huge size", threads(), 1e6, 1e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.chart.SVG(io.Discard, tt.width, tt.height); err == nil {
				t.Errorf("SVG: no error")
			}
			if err := tt.chart.PNG(io.Discard, int(tt.width), int(tt.height)); err == nil {
				t.Errorf("PNG: no error")
			}
		})
	}
	for _, size := range [][2]float64{{math.NaN(), 100}, {100, math.Inf(1)}} {
		if err := threads().SVG(io.Discard, size[0], size[1]); err == nil {
			t.Errorf("SVG(%v, %v): no error", size[0], size[1])
		}
	}
}

// TestConcurrent renders from several goroutines, as a report may; run it
// with -race.
func TestConcurrent(t *testing.T) {
	want := renderSVG(t, threads())
	done := make(chan []byte)
	for range 4 {
		go func() {
			var buf bytes.Buffer
			if err := threads().SVG(&buf, svgWidth, svgHeight); err != nil {
				t.Error(err)
			}
			if err := allocators().PNG(io.Discard, pngWidth, pngHeight); err != nil {
				t.Error(err)
			}
			done <- buf.Bytes()
		}()
	}
	for range 4 {
		if got := <-done; !bytes.Equal(got, want) {
			t.Errorf("concurrent render differs")
		}
	}
}

func TestWriteError(t *testing.T) {
	broken := errors.New("disk full")
	if err := threads().SVG(failingWriter{broken}, svgWidth, svgHeight); !errors.Is(err, broken) {
		t.Errorf("SVG error = %v, want %v", err, broken)
	}
	if err := threads().PNG(failingWriter{broken}, pngWidth, pngHeight); !errors.Is(err, broken) {
		t.Errorf("PNG error = %v, want %v", err, broken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestPNG(t *testing.T) {
	charts := map[string]*Chart{"sweep": threads(), "time series": memory(true), "categorical": allocators()}
	for name, chart := range charts {
		t.Run(name, func(t *testing.T) {
			img, err := png.Decode(bytes.NewReader(renderPNG(t, chart)))
			if err != nil {
				t.Fatalf("decoding PNG: %v", err)
			}
			if got := img.Bounds().Size(); got != (image.Point{X: pngWidth, Y: pngHeight}) {
				t.Errorf("size %v, want %dx%d", got, pngWidth, pngHeight)
			}
			colors, ink := inkAndColors(img)
			if colors < 10 {
				t.Errorf("%d distinct colors, want a drawing", colors)
			}
			if ink < 0.01 || ink > 0.5 {
				t.Errorf("%.1f%% of pixels not white, want a chart on a white background", 100*ink)
			}
			// The first series' blue must be there.
			if !hasColor(img, color.RGBA{0x00, 0x72, 0xB2, 0xFF}) {
				t.Errorf("no pixel of the first series' color")
			}
		})
	}
}

func inkAndColors(img image.Image) (colors int, ink float64) {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	notWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			seen[c] = true
			if c != (color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}) {
				notWhite++
			}
		}
	}
	return len(seen), float64(notWhite) / float64(b.Dx()*b.Dy())
}

func hasColor(img image.Image, want color.RGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == want {
				return true
			}
		}
	}
	return false
}

func TestThin(t *testing.T) {
	run := make([]point, 3600)
	for i := range run {
		run[i] = point{x: float64(i), y: float64(i * 7919 % 1000), lo: -float64(i), hi: float64(i), hasSpread: true}
	}
	run[1234].y = 5000 // a spike
	run[2345].y = -5000
	got := thin(run, 400)
	if len(got) > 800 {
		t.Errorf("%d points, want at most 800", len(got))
	}
	var lowest, highest, lo, hi float64
	for i, pt := range got {
		if i > 0 && pt.x <= got[i-1].x {
			t.Fatalf("X out of order at %d: %v after %v", i, pt.x, got[i-1].x)
		}
		lowest, highest = math.Min(lowest, pt.y), math.Max(highest, pt.y)
		lo, hi = math.Min(lo, pt.lo), math.Max(hi, pt.hi)
	}
	if lowest != -5000 || highest != 5000 {
		t.Errorf("thinned range %v..%v, want the spikes -5000..5000", lowest, highest)
	}
	if lo != -3599 || hi != 3599 {
		t.Errorf("thinned spread %v..%v, want -3599..3599", lo, hi)
	}
	if short := run[:100]; len(thin(short, 400)) != 100 {
		t.Errorf("a short run was thinned")
	}
}

func renderSVG(t *testing.T, c *Chart) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.SVG(&buf, svgWidth, svgHeight); err != nil {
		t.Fatalf("SVG: %v", err)
	}
	return buf.Bytes()
}

func renderPNG(t *testing.T, c *Chart) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.PNG(&buf, pngWidth, pngHeight); err != nil {
		t.Fatalf("PNG: %v", err)
	}
	return buf.Bytes()
}

// svgTexts parses svg as XML, failing the test if it is not well-formed, and
// returns the content of its text elements.
func svgTexts(t *testing.T, svg []byte) []string {
	t.Helper()
	if !bytes.HasPrefix(svg, []byte("<svg ")) {
		t.Errorf("SVG starts with %q, want <svg", svg[:min(20, len(svg))])
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	inText, root := false, ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
			if inText {
				texts = append(texts, "")
			}
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(tok)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	return texts
}

// checkSelfContained fails if the SVG could fetch anything: links, images,
// CSS imports or fonts, scripts.
func checkSelfContained(t *testing.T, svg []byte) {
	t.Helper()
	for _, bad := range []string{"href", "url(", "@import", "@font-face", "<image", "<script", "<style", "<!DOCTYPE", "<?xml", " id="} {
		if bytes.Contains(svg, []byte(bad)) {
			t.Errorf("SVG contains %q", bad)
		}
	}
	if !bytes.Contains(svg, []byte("sans-serif")) {
		t.Errorf("SVG names no generic font family")
	}
}

func contains(texts []string, want string) bool {
	for _, text := range texts {
		if text == want {
			return true
		}
	}
	return false
}
