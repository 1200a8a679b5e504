package report

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
)

// browser runs Debian's Chromium headless on local files, with every network
// request sent to a proxy that counts them, and the page's console on stderr.
type browser struct {
	bin      string
	proxy    string
	requests *atomic.Int64
	mu       sync.Mutex
	seen     []string // the first line of each request
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run scripts/test-deps")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b := &browser{bin: bin, proxy: ln.Addr().String(), requests: new(atomic.Int64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				b.requests.Add(1)
				b.mu.Lock()
				b.seen = append(b.seen, strings.TrimSpace(line))
				b.mu.Unlock()
			}()
		}
	}()
	return b
}

// take returns and forgets the requests seen so far.
func (b *browser) take() []string {
	time.Sleep(100 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.seen
	b.seen = nil
	b.requests.Store(0)
	return out
}

type visit struct {
	shot    image.Image
	console []string
	took    time.Duration
}

// open loads a page, waits for it, and takes a screenshot.
func (b *browser) open(t *testing.T, page string, height int) visit {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	cmd := exec.Command(b.bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--proxy-server=http://"+b.proxy, "--proxy-bypass-list=<-loopback>",
		"--enable-logging=stderr", "--v=0",
		fmt.Sprintf("--window-size=1280,%d", height), "--hide-scrollbars",
		"--screenshot="+shot, "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("chromium did not finish in 60 s\n%s", stderr.String())
	}
	v := visit{took: time.Since(start)}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") {
			v.console = append(v.console, line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr.String())
	}
	defer f.Close()
	v.shot, err = png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// chromiumOwn recognizes what Chromium asks Google's servers by itself
// (network time, component updates), whatever page it shows.
func chromiumOwn(request string) bool {
	for _, host := range []string{"google.com", "googleapis.com", "gvt1.com", "gstatic.com"} {
		if strings.Contains(request, host+"/") || strings.Contains(request, host+":") {
			return true
		}
	}
	return false
}

// colors counts the pixels of each color of a screenshot.
func colors(img image.Image) map[uint32]int {
	out := map[uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out[(r>>8)<<16|(g>>8)<<8|bl>>8]++
		}
	}
	return out
}

func writePage(t *testing.T, name string, render func(w io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := render(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReportsInABrowser opens the reports in a real headless browser: they
// load with no console errors and no network requests, and their charts are
// drawn. A control page first shows that the harness sees both.
func TestReportsInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	b := newBrowser(t)
	control := writePage(t, "control.html", func(w io.Writer) error {
		_, err := io.WriteString(w, `<!doctype html><img src="http://loadlab-control.test/x.png"><script>console.error("control error")</script>`)
		return err
	})
	// What Chromium asks by itself, whatever the page: not the report's doing.
	empty := writePage(t, "empty.html", func(w io.Writer) error { _, err := io.WriteString(w, "<!doctype html><p>empty"); return err })
	b.open(t, empty, 300)
	own := map[string]bool{}
	for _, r := range b.take() {
		own[r] = true
	}
	v := b.open(t, control, 300)
	if len(v.console) == 0 || !strings.Contains(strings.Join(b.take(), " "), "loadlab-control.test") {
		t.Fatalf("the harness missed the control page's console error (%v) or request", v.console)
	}

	for _, page := range []struct {
		name   string
		render func(w io.Writer) error
	}{
		{"run.html", func(w io.Writer) error { return HTML(w, fixture(t)) }},
		{"experiment.html", func(w io.Writer) error { return ExperimentHTML(w, fixtureExperiment(t)) }},
	} {
		t.Run(page.name, func(t *testing.T) {
			path := writePage(t, page.name, page.render)
			v := b.open(t, path, 8000)
			if len(v.console) > 0 {
				t.Errorf("console messages: %v", v.console)
			}
			for _, r := range b.take() {
				if !own[r] && !chromiumOwn(r) {
					t.Errorf("the report made a network request: %s", r)
				}
			}
			c := colors(v.shot)
			if len(c) < 20 {
				t.Errorf("the screenshot has %d colors: blank?", len(c))
			}
			// The charts' first series is blue (Okabe-Ito #0072B2); count
			// clearly blue pixels, anti-aliased or not.
			bluish := 0
			for col, n := range c {
				r, g, bl := col>>16, col>>8&0xff, col&0xff
				if bl > r+80 && bl > g+20 {
					bluish += n
				}
			}
			if bluish < 2000 {
				t.Errorf("only %d blue pixels: are the charts drawn?", bluish)
			}
		})
	}
}

// bigRun is a one-hour run: 3,600 points of time series and 14,400 server
// samples.
func bigRun(t *testing.T) *result.Result {
	r := fixture(t)
	r.Series = nil
	for i := range 3600 {
		x := float64(i)
		r.Series = append(r.Series, result.Point{T: x + 1, Len: 1, Requests: 3000 + int64(i%50), RPS: 3000 + float64(i%50), P50: 2 + float64(i%7)/10, P90: 4, P95: 5 + float64(i%13)/10, P99: 9, Max: 20, Active: 50})
	}
	r.Server.Series = nil
	for i := range 14400 {
		r.Server.Series = append(r.Server.Series, result.ServerPoint{T: float64(i) / 4, CPU: 150 + float64(i%40), RSS: 300<<20 + int64(i%1000)<<10, PSS: 280<<20 + int64(i%900)<<10})
	}
	return r
}

// TestLargeReports: a one-hour run and a 100-point experiment make reports
// under 5 MB that a browser opens in under 2 s.
func TestLargeReports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	b := newBrowser(t)
	// The time the browser itself measures from navigation to the load
	// event of a frame holding the page, so that starting Chromium, slow
	// on a busy machine, is not counted; the quickest of three opens, as a
	// shared machine only ever slows a page.
	quickest := func(page string) time.Duration {
		wrapper := filepath.Join(t.TempDir(), "open.html")
		html := `<!doctype html><iframe src="file://` + page + `" style="width:1200px;height:2000px" onload="console.log('loadlab-loaded ' + performance.now())"></iframe>`
		if err := os.WriteFile(wrapper, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		best := time.Hour
		for range 3 {
			v := b.open(t, wrapper, 2400)
			found := false
			for _, line := range v.console {
				_, ms, ok := strings.Cut(line, "loadlab-loaded ")
				if !ok {
					continue
				}
				ms, _, _ = strings.Cut(ms, `"`)
				f, err := strconv.ParseFloat(strings.TrimSpace(ms), 64)
				if err != nil {
					t.Fatalf("console line %q: %v", line, err)
				}
				best, found = min(best, time.Duration(f*float64(time.Millisecond))), true
			}
			if !found {
				t.Fatalf("no load time in the console: %q", v.console)
			}
		}
		return best
	}
	o := fixtureExperiment(t)
	big := hundredPoints(t, o)
	for _, page := range []struct {
		name   string
		render func(w io.Writer) error
	}{
		{"hour.html", func(w io.Writer) error { return HTML(w, bigRun(t)) }},
		{"hundred.html", func(w io.Writer) error { return ExperimentHTML(w, big) }},
	} {
		t.Run(page.name, func(t *testing.T) {
			start := time.Now()
			path := writePage(t, page.name, page.render)
			rendered := time.Since(start)
			fi, _ := os.Stat(path)
			if fi.Size() > 5<<20 {
				t.Errorf("%s is %.1f MB, want under 5 MB", page.name, float64(fi.Size())/(1<<20))
			}
			took := quickest(path)
			if took > 2*time.Second {
				t.Errorf("opening %s took %v, want under 2 s", page.name, took)
			}
			t.Logf("%s: %.2f MB, rendered in %v, opened in %v", page.name, float64(fi.Size())/(1<<20), rendered.Round(time.Millisecond), took.Round(time.Millisecond))
		})
	}
}

// hundredPoints is an experiment of 100 points × 3 repeats built from the
// fixture run.
func hundredPoints(t *testing.T, _ *experiment.Outcome) *experiment.Outcome {
	p, err := plan.Parse("plan.yaml", []byte(`
name: hundred
target: http://127.0.0.1:1
steps: [ { get: / } ]
load: { closed: { vus: 10, duration: 1s } }
params: { threads: 1..100 }
repeat: 3
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := fixture(t)
	points := experiment.Points(p.Experiment)
	order := experiment.Order(len(points), 3, 5)
	results := make([]*result.Result, len(order))
	for i, s := range order {
		r := *base
		x, _ := strconv.ParseFloat(points[s.Point].Labels["threads"], 64)
		r.Summary.ThroughputRPS = 1000 * x / (1 + 0.05*(x-1) + 0.0005*x*(x-1)) * (1 + 0.01*float64(s.Rep))
		results[i] = &r
	}
	return experiment.Assemble(p.Head(), p.Experiment, 5, results)
}
