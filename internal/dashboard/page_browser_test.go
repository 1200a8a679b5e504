package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/browsertest"
	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/telemetry"
)

// pageLayoutScript opens the page at its argument, waits for the charts,
// and reports whether the memory chart and the checks figure are shown,
// and, for each chart, the runs of dark columns (the Y axis's label, then
// its tick labels) in the canvas left of the plot area: columns where some
// pixel is ink, not grid.
const pageLayoutScript = `
const {chromium} = require('playwright-core');
(async () => {
  const browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: JSON.parse(process.env.CHROMIUM_ARGS)});
  const page = await browser.newPage({viewport: {width: 1280, height: 1600}});
  await page.goto(process.argv[1]);
  await page.waitForFunction(() => document.querySelectorAll('.chart canvas').length >= 5 && document.getElementById('requests').textContent !== '–', null, {timeout: 20000});
  await page.waitForTimeout(500);
  const r = await page.evaluate(() => {
    const shown = id => { for (let e = document.getElementById(id); e; e = e.parentElement) if (e.hidden) return false; return true; };
    const out = {memShown: shown('c-mem'), checksShown: shown('checks'), checks: document.getElementById('checks').textContent, axes: {}};
    for (const id of ['c-rps', 'c-lat', 'c-vus', 'c-cpu', 'c-mem']) {
      const el = document.getElementById(id);
      const canvas = el.querySelector('canvas'), over = el.querySelector('.u-over');
      if (!canvas || !over || !shown(id)) continue;
      const ratio = canvas.width / canvas.getBoundingClientRect().width;
      const left = Math.round(over.offsetLeft * ratio), top = Math.round(over.offsetTop * ratio), h = Math.round(over.offsetHeight * ratio);
      const d = canvas.getContext('2d').getImageData(0, top, left, h).data;
      const runs = [];
      let inRun = false;
      for (let x = 0; x < left; x++) {
        let ink = false;
        for (let y = 0; y < h && !ink; y++) {
          const i = (y * left + x) * 4;
          ink = d[i + 3] > 128 && d[i] < 0x90 && d[i + 1] < 0x90 && d[i + 2] < 0x90;
        }
        if (ink && !inRun) runs.push([x, x]);
        if (ink) runs[runs.length - 1][1] = x;
        inRun = ink;
      }
      out.axes[id] = runs;
    }
    return out;
  });
  await browser.close();
  process.stdout.write(JSON.stringify(r) + '\n');
})().catch(e => { console.error(e); process.exit(1); });
`

type pageLayout struct {
	MemShown, ChecksShown bool
	Checks                string
	Axes                  map[string][][2]int
}

func openPage(t *testing.T, url string) pageLayout {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := browsertest.Command(ctx, t, pageLayoutScript, url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the Playwright script: %v\n%s", err, stderr.String())
	}
	var got pageLayout
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("the Playwright script printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	return got
}

// TestPageLeavesOutWhatHasNoData: a quick run (no checks, no server that
// loadlab measures) shows neither an empty server-memory chart nor "0 / 0"
// checks; a plan run with both shows both. In every chart, the Y axis's
// label stands clear of its tick labels (at over 100,000 requests a second,
// a fixed-width axis ran them together), issue 27.
func TestPageLeavesOutWhatHasNoData(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	for _, tt := range []struct {
		name   string
		checks bool
		server bool
	}{{"quick", false, false}, {"plan", true, true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			live := telemetry.New()
			live.RunStarted()
			b := startBoard(t, Options{Live: live, Interval: 20 * time.Millisecond})
			steps := []engine.StepInfo{{Scenario: "s", Name: "a"}}
			stop := make(chan struct{})
			fed := make(chan struct{})
			go func() { // about 110,000 requests a second, for at most 30 s
				defer close(fed)
				for i := 0; i < 1500; i++ {
					iv := &metrics.Interval{Requests: 2200, Responses: 2200, Active: 7, Steps: make([]metrics.StepInterval, 1)}
					iv.Steps[0].Buckets[2] = 2200
					iv.Steps[0].Count[metrics.ClassOK] = 2200
					if tt.checks {
						iv.Steps[0].Checks.Passed = 2200
					}
					live.Interval(steps, iv)
					if tt.server {
						live.Server(42.5, 10<<20)
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
			got := openPage(t, b.URL())
			close(stop)
			<-fed
			if got.MemShown != tt.server {
				t.Errorf("the server-memory chart is shown: %v, want %v", got.MemShown, tt.server)
			}
			if got.ChecksShown != tt.checks {
				t.Errorf("the checks (%q) are shown: %v, want %v", got.Checks, got.ChecksShown, tt.checks)
			}
			if len(got.Axes) < 4 {
				t.Fatalf("only %d charts measured: %v", len(got.Axes), got.Axes)
			}
			t.Logf("Y axis ink columns: %v", got.Axes)
			for id, runs := range got.Axes {
				// The label (rotated 11 px text: at most 14 columns of ink),
				// then the tick labels, 3 free columns or more between (the
				// dark ink only: anti-aliased edges make them look closer).
				if len(runs) < 2 || runs[0][1]-runs[0][0] >= 14 || runs[1][0]-runs[0][1] <= 3 {
					t.Errorf("%s: the Y axis's label and its tick labels run together: ink in columns %v", id, runs)
				}
			}
		})
	}
}
