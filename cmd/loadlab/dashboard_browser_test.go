package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/browsertest"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// pwPrelude starts each browser test's Playwright script: it opens the
// page given as the script's first argument in Debian's Chromium and
// records every request the page makes that is not to loopback
// (page.on('request')), the page's uncaught errors, and any dialog (a
// hostile body's alert would be one). The test's part then drives the page
// and ends with done(result), which prints one JSON line and exits.
const pwPrelude = `
const {chromium} = require('playwright-core');
const sleep = ms => new Promise(r => setTimeout(r, ms));
const loopback = u => { if (u.startsWith('data:')) return true; const h = new URL(u).hostname; return h === '127.0.0.1' || h === 'localhost' || h === '[::1]'; };
// text is an element's textContent, "" when it is hidden or absent.
const text = (page, id) => page.evaluate(id => { const e = document.getElementById(id); return e && !e.hidden ? e.textContent : ""; }, id);
// pixels counts the pixels of colour [r, g, b] in the canvases under sel.
const pixels = (page, sel, rgb) => page.evaluate(([sel, rgb]) => {
  let n = 0;
  for (const c of document.querySelectorAll(sel + ' canvas')) {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4) if (d[i] === rgb[0] && d[i+1] === rgb[1] && d[i+2] === rgb[2]) n++;
  }
  return n;
}, [sel, rgb]);
const outside = [], pageErrors = [], dialogs = [];
let browser;
// open launches the browser, says "ready" and waits for the test's "go"
// (it has started loadlab, and the page is served) to open url.
async function open(url) {
  browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: JSON.parse(process.env.CHROMIUM_ARGS)});
  const page = await browser.newPage({viewport: {width: 1280, height: 1600}});
  process.stdout.write('ready\n');
  await new Promise(r => process.stdin.once('data', r));
  page.on('request', r => { if (!loopback(r.url())) outside.push(r.url()); });
  page.on('pageerror', e => pageErrors.push(String(e)));
  page.on('dialog', d => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  await page.goto(url);
  return page;
}
async function done(r) {
  if (process.env.SHOTS && globalThis.page) await page.screenshot({path: process.env.SHOTS, fullPage: true});
  process.stdout.write(JSON.stringify(Object.assign(r, {outside, pageErrors, dialogs})) + '\n');
  await browser.close();
  process.exit(0);
}
`

// pwCommon is what every script's result holds besides its own figures.
type pwCommon struct {
	Outside    []string `json:"outside"`
	PageErrors []string `json:"pageErrors"`
	Dialogs    []string `json:"dialogs"`
}

func (c pwCommon) check(t *testing.T) {
	t.Helper()
	if len(c.Outside) > 0 {
		t.Errorf("requests left loopback: %q", c.Outside)
	}
	if len(c.PageErrors) > 0 {
		t.Errorf("the page threw: %q", c.PageErrors)
	}
	if len(c.Dialogs) > 0 {
		t.Errorf("the page opened dialogs: %q", c.Dialogs)
	}
}

// playwright runs pwPrelude+script on url with Node and playwright-core
// (internal/browsertest), at most limit: once the browser is up it calls
// start (which starts loadlab and waits for the page to be served), then
// lets the script open url, and decodes the JSON line the script prints
// last into out. LOADLAB_DASHBOARD_SHOTS=DIR keeps a screenshot of the
// page at the end as DIR/shot, to look at.
func playwright(t *testing.T, limit time.Duration, start func(), script, url, shot string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := browsertest.Command(ctx, t, "(async () => {"+pwPrelude+script+"})().catch(e => { console.error(e); process.exit(1); });", url)
	if dir := os.Getenv("LOADLAB_DASHBOARD_SHOTS"); dir != "" && shot != "" {
		cmd.Env = append(cmd.Env, "SHOTS="+filepath.Join(dir, shot))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if sc.Text() == "ready" {
			start()
			io.WriteString(stdin, "go\n")
			continue
		}
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil || len(lines) == 0 {
		t.Fatalf("the Playwright script: %v (in %s)\nstderr:\n%s\nstdout:\n%s", err, limit, stderr.String(), strings.Join(lines, "\n"))
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("the Playwright script's result: %v\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
}

// waitServing waits until something answers HTTP at addr.
func waitServing(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/"); err == nil {
			r.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the dashboard did not start")
		}
	}
}

// cutProxy is a loopback TCP proxy in front of the dashboard that can cut
// every connection at once (a network blip), and keeps the head of each
// request it forwarded, to see what the page asked for on reconnecting.
type cutProxy struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn
	heads []string
}

func startCutProxy(t *testing.T, backend string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &cutProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, backend)
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(c net.Conn, backend string) {
	b, err := net.Dial("tcp", backend)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, b)
	p.mu.Unlock()
	go func() {
		io.Copy(c, b)
		c.Close()
	}()
	// Each request's head (keep-alive may carry several), then its body
	// (GET and HEAD have none).
	r := bufio.NewReader(c)
	for {
		var head strings.Builder
		for {
			line, err := r.ReadString('\n')
			head.WriteString(line)
			if err != nil {
				b.Close()
				return
			}
			if line == "\r\n" {
				break
			}
		}
		p.mu.Lock()
		p.heads = append(p.heads, head.String())
		p.mu.Unlock()
		if _, err := io.WriteString(b, head.String()); err != nil {
			c.Close()
			return
		}
	}
}

// cut closes every connection open now; the page's EventSource reconnects
// through the proxy on its own.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// events is how many requests for the event stream (not the token probe)
// came, and the Last-Event-ID of each after the first.
func (p *cutProxy) events() (n int, resumed []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.heads {
		if !strings.HasPrefix(h, "GET /events") || strings.Contains(h, "probe=1") {
			continue
		}
		n++
		for _, line := range strings.Split(h, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Last-Event-ID") {
				id, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				resumed = append(resumed, id)
			}
		}
	}
	return n, resumed
}

func number(s string) int64 {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func comma(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestDashboardInABrowser opens the page in Chromium (Playwright) during a
// real run, through a proxy that cuts the page's connections once, three
// seconds in: its numbers and charts change as the run goes; the page
// reconnects with Last-Event-ID and ends up with every frame loadlab made,
// none missing, none twice; it says when the run has ended, links the
// report, and then shows the summary's figures; no request left loopback.
func TestDashboardInABrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a real browser and an 8 s run")
	}
	url := targettest.Start(t, target.Options{})
	dir, plan := homeAndBrokenPlan(t, "live-browser", url, "8s", "checks > 10%")
	out := filepath.Join(dir, "out")
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type exit struct {
		stderr string
		code   int
	}
	done := make(chan exit, 1)
	proxy := startCutProxy(t, addr)
	start := func() {
		go func() {
			_, stderr, code := cli(ctx, t, "run", plan, "--out", out, "--dashboard="+addr, "--dashboard-linger", "60s")
			done <- exit{stderr, code}
		}()
		waitServing(t, addr)
		go func() { // the blip: once the page streams, three seconds in
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if n, _ := proxy.events(); n > 0 {
					time.Sleep(3 * time.Second)
					proxy.cut()
					return
				}
			}
		}()
	}
	var got struct {
		pwCommon
		Seen                       []int64 `json:"seen"`
		BlueMid, BlueEnd           int
		End, Requests, Checks      string
		Errors, Steps, Status      string
		FrameSeqs                  []int64 `json:"frameSeqs"`
		Reconnecting, ReportHref   string
		ReportLoads                bool
		ReportTitle, HeadlineLabel string
	}
	playwright(t, 90*time.Second, start, `
const page = globalThis.page = await open(process.argv[1]);
const seen = [];
let blueMid = 0, end = "", reconnecting = "";
for (const deadline = Date.now() + 45000; !end && Date.now() < deadline; await sleep(250)) {
  const n = await text(page, 'requests');
  if (n !== '–' && n !== '0' && !seen.includes(n)) {
    seen.push(n);
    if (seen.length === 2) blueMid = await pixels(page, '.grid', [0x00, 0x72, 0xB2]);
  }
  const st = await text(page, 'status');
  if (st.startsWith('reconnecting')) reconnecting = st;
  end = await text(page, 'end');
}
const r = {seen: seen.map(s => Number(s.replace(/,/g, ''))), BlueMid: blueMid, End: end, Reconnecting: reconnecting};
r.BlueEnd = await pixels(page, '.grid', [0x00, 0x72, 0xB2]);
for (const id of ['requests', 'checks', 'errors', 'steps', 'status']) r[id[0].toUpperCase() + id.slice(1)] = await text(page, id);
r.frameSeqs = await page.evaluate(() => window.loadlab.frameSeqs());
r.HeadlineLabel = await page.evaluate(() => document.getElementById('p95').nextElementSibling.textContent);
const a = await page.$('#report');
if (a) {
  r.ReportHref = await a.getAttribute('href');
  const resp = await page.goto(new URL(r.ReportHref, page.url()).href);
  r.ReportLoads = resp.ok(); r.ReportTitle = await page.title();
}
await done(r);
`, "http://"+proxy.addr+"/", "dashboard.png", &got)
	got.check(t)
	// Every frame loadlab made, straight from the board while it lingers.
	frames, end := readDashboard(t, addr)
	cancel() // ends --dashboard-linger
	var e exit
	select {
	case e = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("loadlab did not end after the linger was cut short")
	}
	if e.code != 0 {
		t.Fatalf("exit %d: %s", e.code, e.stderr)
	}
	if !strings.Contains(got.End, "The run has ended.") || !strings.Contains(got.End, "Open the report") {
		t.Fatalf("the page does not say the run ended and link the report: %q", got.End)
	}
	if !got.ReportLoads || got.ReportHref != "/report/report.html" {
		t.Errorf("the report link %q: loads %v (title %q)", got.ReportHref, got.ReportLoads, got.ReportTitle)
	}
	if len(got.Seen) < 3 || !slices.IsSorted(got.Seen) {
		t.Errorf("the page's request count took the values %v during the run, want it to grow every second", got.Seen)
	}
	if got.BlueMid == 0 || got.BlueEnd == 0 || got.BlueMid == got.BlueEnd {
		t.Errorf("the charts' blue (#0072B2) pixels: %d during the run, %d at the end: want them drawn, and changed", got.BlueMid, got.BlueEnd)
	}
	// The blip: the page came back with the id of the last event it had,
	// and holds every frame, in order, once.
	n, resumed := proxy.events()
	if n < 2 || len(resumed) == 0 || resumed[0] <= 0 {
		t.Errorf("%d requests for the events, resuming from %v: want a reconnect after the cut, with a Last-Event-ID", n, resumed)
	}
	if end == nil {
		t.Fatal("no end event from the board")
	}
	var want []int64
	for _, f := range frames {
		want = append(want, f.Seq)
	}
	if !slices.Equal(got.FrameSeqs, want) {
		t.Errorf("after the reconnect the page holds the frames %v, loadlab made %v", got.FrameSeqs, want)
	}
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if number(got.Requests) != s.Requests {
		t.Errorf("the page shows %s requests, the summary %d", got.Requests, s.Requests)
	}
	if want := fmt.Sprintf("%s / %s", comma(s.Checks.Passed), comma(s.Checks.Failed)); got.Checks != want {
		t.Errorf("the page shows checks %q, the summary %q", got.Checks, want)
	}
	if number(got.Errors) != s.Errors.Status5xx {
		t.Errorf("the page shows %s errors, the summary %d (all 5xx)", got.Errors, s.Errors.Status5xx)
	}
	if !strings.Contains(got.Steps, "home") || !strings.Contains(got.Steps, "broken") {
		t.Errorf("the steps table: %q", got.Steps)
	}
	if got.HeadlineLabel != "p95 ms, whole run" {
		t.Errorf("at the end the p95's label is %q", got.HeadlineLabel)
	}
}

// TestDashboardHostileServer: a server that answers with markup and script
// (in the body, a header, and the status's reason), and a plan whose step
// names are markup, cannot script the page: the names show as text, no
// element comes of them, nothing runs, no dialog opens.
func TestDashboardHostileServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a real browser and a 4 s run")
	}
	const payload = `<img src=x onerror="window.pwned=1;alert(1)"><script>window.pwned=2;alert(2)</script>`
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Evil", `<script>alert(3)</script>`)
		if r.URL.Path == "/bad" {
			w.WriteHeader(500)
		}
		io.WriteString(w, payload)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: hostile
target: http://`+ln.Addr().String()+`
steps:
  - get: /
    name: '<img src=x onerror="window.pwned=3;alert(4)">'
    expect: { status: 200, contains: "nothing-like-this" }
  - get: /bad
    name: '<b id=injected>bold</b>'
load: { closed: { vus: 1, duration: 4s } }
`), 0o644)
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan string, 1)
	start := func() {
		go func() {
			_, stderr, _ := cli(ctx, t, "run", plan, "--out", filepath.Join(dir, "out"), "--dashboard="+addr, "--dashboard-linger", "60s")
			done <- stderr
		}()
		waitServing(t, addr)
	}
	var got struct {
		pwCommon
		End, Steps string
		Pwned      any
		Injected   bool
		Images     int
	}
	playwright(t, 60*time.Second, start, `
const page = globalThis.page = await open(process.argv[1]);
let end = "";
for (const deadline = Date.now() + 30000; !end && Date.now() < deadline; await sleep(250)) end = await text(page, 'end');
await sleep(500);
await done({End: end, Steps: await text(page, 'steps'),
  Pwned: await page.evaluate(() => window.pwned === undefined ? null : window.pwned),
  Injected: await page.evaluate(() => document.getElementById('injected') !== null),
  Images: await page.evaluate(() => document.images.length)});
`, "http://"+addr+"/", "dashboard-hostile.png", &got)
	cancel()
	stderr := <-done
	got.check(t)
	if got.End == "" {
		t.Fatalf("the page did not see the run end; loadlab's stderr:\n%s", stderr)
	}
	if got.Pwned != nil || got.Injected || got.Images != 0 {
		t.Errorf("the page was scripted: window.pwned %v, the injected element %v, %d images", got.Pwned, got.Injected, got.Images)
	}
	if !strings.Contains(got.Steps, `<img src=x onerror="window.pwned=3;alert(4)">`) || !strings.Contains(got.Steps, "<b id=injected>bold</b>") {
		t.Errorf("the step names do not show as text: %q", got.Steps)
	}
}

// TestDashboardTokenInABrowser: off loopback, the page opened with the
// token in its fragment (as loadlab prints it) gets the figures.
func TestDashboardTokenInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a real browser and a 6 s run")
	}
	var ip string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			ip = n.IP.String()
			break
		}
	}
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address")
	}
	const token = "0123456789abcdef0123456789abcdef"
	t.Setenv("LOADLAB_DASHBOARD_TOKEN", token)
	url, _ := counting(t)
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderrc := make(chan string, 1)
	start := func() {
		go func() {
			_, stderr, _ := cli(ctx, t, "run", "--url", url+"/", "-d", "6s", "-c", "1", "--dashboard="+addr, "--dashboard-linger", "60s")
			stderrc <- stderr
		}()
		var found bool
		for deadline := time.Now().Add(20 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if r, err := http.Get("http://" + addr + "/events"); err == nil {
				r.Body.Close()
				if r.StatusCode != http.StatusUnauthorized {
					t.Errorf("/events without the token: %d", r.StatusCode)
				}
				found = true
			}
		}
		if !found {
			t.Error("the dashboard did not start")
		}
	}
	var got struct {
		pwCommon
		Requests, Status string
	}
	// The page is on this machine's own address: only it counts as home.
	playwright(t, 60*time.Second, start, `
const home = new URL(process.argv[1]).host;
const page = globalThis.page = await open(process.argv[1]);
let n = "";
for (const deadline = Date.now() + 20000; Date.now() < deadline; await sleep(250)) {
  n = await text(page, 'requests');
  if (n !== '–' && n !== '0' && n !== '') break;
}
outside.splice(0, outside.length, ...outside.filter(u => new URL(u).host !== home));
await done({Requests: n, Status: await text(page, 'status')});
`, "http://"+addr+"/#token="+token, "", &got)
	cancel()
	stderr := <-stderrc
	got.check(t)
	if number(got.Requests) <= 0 {
		t.Errorf("the page with the token shows no requests (%q, status %q)", got.Requests, got.Status)
	}
	if !strings.Contains(stderr, "#token="+token) {
		t.Errorf("stderr does not give the page's link with its token:\n%s", stderr)
	}
}

// TestDashboardExperimentInABrowser: an experiment's page fills in each
// point's figures as its runs end (its runs ended, medians and intervals),
// lists the runs in the order they ran, and counts down an ETA until every
// run has ended.
func TestDashboardExperimentInABrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a real browser and an experiment of four 2 s runs")
	}
	url := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: live-sweep-browser
target: `+url+`
steps: [ { get: "/?delay={{ delay }}", name: page } ]
load: { closed: { vus: 2, duration: 2s } }
params: { delay: [1ms, 3ms] }
repeat: 2
`), 0o644)
	out := filepath.Join(dir, "exp")
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan string, 1)
	start := func() {
		go func() {
			_, stderr, _ := cli(ctx, t, "run", plan, "--out", out, "--dashboard="+addr, "--dashboard-linger", "60s")
			done <- stderr
		}()
		waitServing(t, addr)
	}
	var got struct {
		pwCommon
		ETAs   []string
		Points [][]string
		Runs   [][]string
		End    string
		ETA    string
		// The planned order's table: first seen, first with a run
		// going, at the end; and its summary line at the end.
		PlanEarly, PlanRunning, Plan [][]string
		PlanSummary                  string
	}
	playwright(t, 90*time.Second, start, `
const page = globalThis.page = await open(process.argv[1]);
const etas = [];
const rows = sel => page.evaluate(sel => [...document.querySelectorAll(sel + ' tbody tr')].map(tr => [...tr.children].map(td => td.textContent)), sel);
let end = "", planEarly = null, planRunning = null;
for (const deadline = Date.now() + 60000; !end && Date.now() < deadline; await sleep(250)) {
  const e = await text(page, 'eta');
  if (e && etas[etas.length - 1] !== e) etas.push(e);
  end = await text(page, 'end');
  if (end) break;
  const pl = await rows('#plan');
  if (!planEarly && pl.length) planEarly = pl;
  if (!planRunning && pl.some(r => r[3] === 'running')) planRunning = pl;
}
await done({ETAs: etas, Points: await rows('#points'), Runs: await rows('#runs'), End: end, ETA: await text(page, 'eta'),
  PlanEarly: planEarly, PlanRunning: planRunning, Plan: await rows('#plan'), PlanSummary: await text(page, 'plan-summary')});
`, "http://"+addr+"/", "dashboard-experiment.png", &got)
	cancel()
	stderr := <-done
	got.check(t)
	if !strings.Contains(got.End, "The experiment has ended.") {
		t.Fatalf("the page's last word %q; loadlab's stderr:\n%s", got.End, stderr)
	}
	if len(got.Runs) != 4 {
		t.Fatalf("the runs' table: %q", got.Runs)
	}
	byPoint := map[string][]string{}
	for i, r := range got.Runs {
		if r[0] != fmt.Sprintf("%d of 4", i+1) {
			t.Errorf("row %d of the runs: %q, want them in the order they ran", i+1, r)
		}
		byPoint[r[1]] = append(byPoint[r[1]], r[4]) // p95
	}
	if len(got.Points) != 2 || len(byPoint) != 2 {
		t.Fatalf("the points' table %q, the runs' %q", got.Points, got.Runs)
	}
	for _, p := range got.Points {
		runs := byPoint[p[0]]
		if p[1] != "2" || len(runs) != 2 || !strings.HasSuffix(p[4], " ±∞") {
			t.Errorf("point %q: want its 2 runs ended, p95 a median without an interval yet (its runs' p95: %q)", p, runs)
			continue
		}
		med, _ := strconv.ParseFloat(strings.TrimSuffix(p[4], " ±∞"), 64)
		a, _ := strconv.ParseFloat(runs[0], 64)
		b, _ := strconv.ParseFloat(runs[1], 64)
		if math.Abs(med-(a+b)/2) > 0.011 {
			t.Errorf("point %q: p95 median %v, its runs' %v and %v", p[0], med, a, b)
		}
	}
	// The planned order was on the page before the runs ended, in the
	// order they then ran, the run going marked; at the end every run is
	// done, with the figures it ran with.
	comeOrGoing := 0
	for _, r := range got.PlanEarly {
		if len(r) == 9 && (r[3] == "to come" || r[3] == "running") {
			comeOrGoing++
		}
	}
	if len(got.PlanEarly) != 4 || comeOrGoing == 0 {
		t.Errorf("the planned order, first seen: %q; want 4 runs, some to come", got.PlanEarly)
	}
	if len(got.PlanRunning) != 4 {
		t.Errorf("the planned order never showed a run going: %q", got.PlanRunning)
	}
	if len(got.Plan) != 4 || !strings.HasPrefix(got.PlanSummary, "4 of 4 runs done;") {
		t.Fatalf("the planned order at the end: %q, %q", got.Plan, got.PlanSummary)
	}
	for i, r := range got.Plan {
		if len(r) != 9 || r[0] != strconv.Itoa(i+1) || r[1] != got.Runs[i][1] || r[3] != "done" || !slices.Equal(r[4:9], got.Runs[i][2:7]) {
			t.Errorf("planned run %d at the end: %q; it ran as %q", i+1, r, got.Runs[i])
		}
		if i < len(got.PlanEarly) && got.PlanEarly[i][1] != r[1] {
			t.Errorf("planned run %d was at %q, ran at %q", i+1, got.PlanEarly[i][1], r[1])
		}
	}
	var counting, going bool
	eta := regexp.MustCompile(`^run [234] of 4 (next|going, at delay=[13]ms); about [0-9]+ s to go at this pace`)
	for _, e := range got.ETAs {
		counting = counting || eta.MatchString(e)
		going = going || strings.Contains(e, " of 4 going, at delay=")
	}
	if !counting || !going || got.ETA != "every run has ended" {
		t.Errorf("the ETA read %q, at the end %q", got.ETAs, got.ETA)
	}
}
