package report

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/browsertest"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/store"
)

// chartLayoutScript opens each page given as an argument in Chromium and,
// for every chart (inline <svg>) on it, reads what the browser laid out:
//
//   - every <text>'s box (getBoundingClientRect, as drawn, in the font the
//     browser picked), which must lie inside its chart and meet no other;
//   - the plot area, the rectangle spanned by the X and Y axis lines (the
//     longest black horizontal and vertical paths);
//   - the points: small square-ish paths in a series' colour, but for the
//     legend's (a glyph with a text just right of it), each of which must
//     lie wholly inside the plot area;
//   - the lines: the series' polylines and the guides' dashed lines, from
//     their path data, which no guide label (the grey texts in the plot
//     area) may cross, and whose vertices must lie inside the plot area.
//
// It prints one JSON object: per page, the count of charts, texts, points
// and labels checked, and every problem found.
const chartLayoutScript = `
const {chromium} = require('playwright-core');
(async () => {
  const browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: JSON.parse(process.env.CHROMIUM_ARGS)});
  const out = {};
  for (const file of process.argv.slice(1)) {
    const page = await browser.newPage({viewport: {width: 1280, height: 1000}});
    await page.goto('file://' + file);
    out[file] = await page.evaluate(() => {
      const palette = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9'].map(s => s.toLowerCase());
      const guide = '#404040';
      const res = {charts: 0, texts: 0, points: 0, labels: 0, problems: []};
      const style = (e, prop) => { const m = (e.getAttribute('style') || '').match(new RegExp('(?:^|;)' + prop + ':([^;]+)')); return m ? m[1].trim().toLowerCase() : ''; };
      const meets = (a, b, tol) => a.left + tol < b.right && b.left + tol < a.right && a.top + tol < b.bottom && b.top + tol < a.bottom;
      const inside = (a, b, tol) => a.left >= b.left - tol && a.right <= b.right + tol && a.top >= b.top - tol && a.bottom <= b.bottom + tol;
      const fmt = r => '[' + [r.left, r.top, r.right, r.bottom].map(v => v.toFixed(1)).join(' ') + ']';
      // A path's vertices on the screen.
      const vertices = p => {
        const m = p.getScreenCTM(), svg = p.ownerSVGElement, out = [];
        const re = /[ML]\s*([-\d.e]+)[ ,]([-\d.e]+)/g;
        let g;
        while ((g = re.exec(p.getAttribute('d') || '')) !== null) {
          const pt = svg.createSVGPoint(); pt.x = +g[1]; pt.y = +g[2];
          const q = pt.matrixTransform(m); out.push({x: q.x, y: q.y});
        }
        return out;
      };
      // Liang-Barsky: does segment a-b pass through rectangle r?
      const crosses = (a, b, r) => {
        let t0 = 0, t1 = 1; const dx = b.x - a.x, dy = b.y - a.y;
        for (const [p, q] of [[-dx, a.x - r.left], [dx, r.right - a.x], [-dy, a.y - r.top], [dy, r.bottom - a.y]]) {
          if (p === 0) { if (q < 0) return false; continue; }
          const t = q / p;
          if (p < 0) t0 = Math.max(t0, t); else t1 = Math.min(t1, t);
          if (t0 > t1) return false;
        }
        return true;
      };
      document.querySelectorAll('svg').forEach((svg, n) => {
        const title = (svg.querySelector('text') || {}).textContent || ('chart ' + n);
        const bad = msg => res.problems.push(title + ': ' + msg);
        res.charts++;
        const frame = svg.getBoundingClientRect();
        const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() !== '').map(t => ({t: t.textContent, r: t.getBoundingClientRect(), fill: style(t, 'fill')}));
        res.texts += texts.length;
        for (let i = 0; i < texts.length; i++) {
          if (!inside(texts[i].r, frame, 0.5)) bad('text "' + texts[i].t + '" ' + fmt(texts[i].r) + ' is clipped by the chart ' + fmt(frame));
          for (let j = i + 1; j < texts.length; j++)
            if (meets(texts[i].r, texts[j].r, 0.5)) bad('texts "' + texts[i].t + '" ' + fmt(texts[i].r) + ' and "' + texts[j].t + '" ' + fmt(texts[j].r) + ' overlap');
        }
        const paths = [...svg.querySelectorAll('path')].map(p => ({p, stroke: style(p, 'stroke'), fill: style(p, 'fill'), dash: style(p, 'stroke-dasharray'), r: p.getBoundingClientRect(), b: p.getBBox()}));
        const black = paths.filter(p => p.stroke === '#000000' && (p.fill === 'none' || p.fill === ''));
        const xAxis = black.filter(p => p.r.height < 0.5).sort((a, b) => b.r.width - a.r.width)[0];
        const yAxis = black.filter(p => p.r.width < 0.5).sort((a, b) => b.r.height - a.r.height)[0];
        if (!xAxis || !yAxis) { if (!svg.textContent.includes('no data')) bad('no axis lines found'); return; }
        const area = {left: yAxis.r.left, right: xAxis.r.right, top: yAxis.r.top, bottom: xAxis.r.bottom};
        const coloured = p => palette.includes(p.fill) || palette.includes(p.stroke);
        const glyphs = paths.filter(p => coloured(p) && p.b.width >= 2.5 && p.b.width <= 8 && p.b.height >= 2.5 && p.b.height <= 8 && Math.abs(p.b.width - p.b.height) < 3);
        for (const g of glyphs) {
          const cy = (g.r.top + g.r.bottom) / 2;
          const legend = texts.some(t => t.r.left >= g.r.right - 1 && t.r.left - g.r.right < 24 && t.r.top <= cy && cy <= t.r.bottom);
          if (legend) continue;
          res.points++;
          if (!inside(g.r, area, 0.5)) bad('a point ' + fmt(g.r) + ' is not inside the plot area ' + fmt(area));
        }
        const lines = [];
        for (const p of paths) {
          if (p.fill !== 'none' || !(palette.includes(p.stroke) || p.stroke === guide)) continue;
          const v = vertices(p.p);
          for (let k = 1; k < v.length; k++) lines.push([v[k - 1], v[k]]);
          // A series' line (the legend's samples have two vertices) keeps
          // its points inside the plot area too.
          if (palette.includes(p.stroke) && v.length > 2) {
            res.points += v.length;
            const out = v.find(q => q.x < area.left - 0.5 || q.x > area.right + 0.5 || q.y < area.top - 0.5 || q.y > area.bottom + 0.5);
            if (out) bad('a line\'s point ' + out.x.toFixed(1) + ',' + out.y.toFixed(1) + ' is not inside the plot area ' + fmt(area));
          }
        }
        for (const t of texts) {
          if (t.fill !== guide) continue;
          res.labels++;
          const r = {left: t.r.left + 1, right: t.r.right - 1, top: t.r.top + 1, bottom: t.r.bottom - 1};
          const hit = lines.find(([a, b]) => crosses(a, b, r));
          if (hit) bad('the label "' + t.t + '" ' + fmt(t.r) + ' is crossed by a line from ' + hit.map(v => v.x.toFixed(1) + ',' + v.y.toFixed(1)).join(' to '));
        }
      });
      return res;
    });
    await page.close();
  }
  await browser.close();
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch(e => { console.error(e); process.exit(1); });
`

type chartLayout struct {
	Charts, Texts, Points, Labels int
	Problems                      []string
}

// checkChartLayout runs chartLayoutScript on the pages.
func checkChartLayout(t *testing.T, pages ...string) map[string]chartLayout {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := browsertest.Command(ctx, t, chartLayoutScript, pages...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the Playwright script: %v\n%s", err, stderr.String())
	}
	var out map[string]chartLayout
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("the Playwright script printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	return out
}

// TestChartLayoutInABrowser renders the reports of the demo (recorded in
// testdata/demo: `loadlab demo`, 5 points × 5 repeats), of a capacity
// search (testdata/capacity) and of a quick run (testdata/quick: `loadlab
// run --url http://127.0.0.1:18923/ -d 8s -c 10` against `loadlab target
// --delay 5ms --jitter 2ms`) in Chromium, and checks from the laid-out SVG
// that no two texts of a chart overlap or leave it, that every point lies
// inside its plot area, and that no line crosses a mark's or a level's
// label (issue 27). A control page drawn wrong first shows that each check
// can fail.
func TestChartLayoutInABrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	demo, err := experiment.LoadOutcome("testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	capacity, err := ReadCapacity("testdata/capacity")
	if err != nil {
		t.Fatal(err)
	}
	quick, err := store.ReadResult("testdata/quick/result.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, render func(w io.Writer) error) string {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The control: two texts overlapping, one leaving the chart, a point
	// above the Y axis's end and a line through a grey label.
	control := write("control.html", func(w io.Writer) error {
		_, err := io.WriteString(w, `<!doctype html><svg width="300pt" height="200pt" viewBox="0 0 300 200"><g transform="scale(1, -1) translate(0, -200)">
<path d="M40,30L280,30" style="fill:none;stroke:#000000;stroke-width:1" />
<path d="M40,30L40,180" style="fill:none;stroke:#000000;stroke-width:1" />
<path d="M100,190A2.5,2.5 0 1 1 100,189.9Z" style="fill:#0072B2" />
<path d="M50,40L270,170" style="fill:none;stroke:#0072B2;stroke-width:1.5" />
<text x="150" y="-100" transform="scale(1, -1)" style="font-family:sans-serif;font-size:9px;fill:#404040">knee</text>
<text x="60" y="-20" transform="scale(1, -1)" style="font-family:sans-serif;font-size:9px">overlapping</text>
<text x="70" y="-20" transform="scale(1, -1)" style="font-family:sans-serif;font-size:9px">texts</text>
<text x="290" y="-60" transform="scale(1, -1)" style="font-family:sans-serif;font-size:9px">clipped</text>
</g></svg>`)
		return err
	})
	pages := map[string]string{
		"demo":     write("demo.html", func(w io.Writer) error { return ExperimentHTML(w, demo) }),
		"capacity": write("capacity.html", func(w io.Writer) error { return CapacityHTML(w, capacity) }),
		"quick":    write("quick.html", func(w io.Writer) error { return HTML(w, quick) }),
	}
	got := checkChartLayout(t, control, pages["demo"], pages["capacity"], pages["quick"])

	c := got[control]
	t.Logf("control: %+v", c)
	for _, want := range []string{"overlap", "clipped", "not inside the plot area", "crossed by a line"} {
		if !strings.Contains(strings.Join(c.Problems, "\n"), want) {
			t.Errorf("the control page's problems %q lack one with %q: the check cannot fail", c.Problems, want)
		}
	}
	for name, path := range pages {
		l := got[path]
		t.Logf("%s: %d charts, %d texts, %d points, %d guide labels", name, l.Charts, l.Texts, l.Points, l.Labels)
		// The harness saw the charts: demo and capacity have swept points
		// and guide labels (knee, recommended, capacity, the SLO line).
		if l.Charts < 4 || l.Texts < 40 || (name != "quick" && (l.Points < 10 || l.Labels < 2)) {
			t.Errorf("%s: %d charts, %d texts, %d points, %d guide labels: the harness did not find the charts", name, l.Charts, l.Texts, l.Points, l.Labels)
		}
		for _, p := range l.Problems {
			t.Errorf("%s: %s", name, p)
		}
	}
}
