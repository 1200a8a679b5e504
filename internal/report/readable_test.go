package report

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"testing"
)

// TestChartTextReadable: report.html draws its charts near the size the
// page shows them, so that in the narrowest column the page's grid allows
// (style.html's minmax), every chart text shows at 10 px or more and the
// legends at 11 px or more. Drawn at 720 points, as they were, the same
// column showed them at 6 px.
func TestChartTextReadable(t *testing.T) {
	legends := func(fs []figure) map[string]bool {
		out := map[string]bool{}
		for _, f := range fs {
			if len(f.Chart.Series) > 1 {
				for _, s := range f.Chart.Series {
					out[s.Name] = true
				}
			}
		}
		return out
	}
	o := fixtureExperiment(t)
	column := regexp.MustCompile(`grid-template-columns: repeat\(auto-fill, minmax\((\d+)px`)
	svgs := regexp.MustCompile(`(?s)<svg width="[\d.]+pt" height="[\d.]+pt" viewBox="0 0 ([\d.]+) [\d.]+".*?</svg>`)
	texts := regexp.MustCompile(`font-size:([\d.]+)px">([^<]*)</text>`)
	for _, page := range []struct {
		name    string
		render  func(w io.Writer) error
		legends map[string]bool
	}{
		{"run.html", func(w io.Writer) error { return HTML(w, fixture(t)) }, legends(runFigures(fixture(t)))},
		{"experiment.html", func(w io.Writer) error { return ExperimentHTML(w, o) }, legends(sweepFigures(o))},
	} {
		t.Run(page.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := page.render(&b); err != nil {
				t.Fatal(err)
			}
			m := column.FindSubmatch(b.Bytes())
			if m == nil {
				t.Fatal("no grid column width in the page's style")
			}
			columnPx, _ := strconv.ParseFloat(string(m[1]), 64)
			charts, legendTexts := 0, 0
			for _, svg := range svgs.FindAllSubmatch(b.Bytes(), -1) {
				charts++
				width, _ := strconv.ParseFloat(string(svg[1]), 64)
				scale := columnPx / width // px per point of the chart
				for _, text := range texts.FindAllSubmatch(svg[0], -1) {
					size, _ := strconv.ParseFloat(string(text[1]), 64)
					px, label := size*scale, string(text[2])
					want := 10.0
					if page.legends[label] {
						want = 11
						legendTexts++
					}
					if px < want {
						t.Errorf("%q shows at %.1f px in a %g px column (font %g in a chart %g wide), want %g px or more", label, px, columnPx, size, width, want)
					}
				}
			}
			if charts < 4 || legendTexts < 4 {
				t.Errorf("%d charts, %d legend entries: the page's charts were not found", charts, legendTexts)
			}
		})
	}
}
