package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// cdp drives a headless Chromium over --remote-debugging-pipe (the
// DevTools protocol as NUL-separated JSON on fds 3 and 4), so the test
// needs no WebSocket client and no npm.
type cdp struct {
	cmd     *exec.Cmd
	in      *os.File // Chromium reads its commands here
	mu      sync.Mutex
	next    int
	waiting map[int]chan json.RawMessage
	session string
}

func startChromium(t *testing.T, proxy string, flags ...string) *cdp {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (scripts/test-deps installs Debian's)")
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Loopback bypasses the proxy (Chromium's default); any other request
	// goes to the counting proxy.
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--proxy-server=http://"+proxy, "--remote-debugging-pipe", "--window-size=1280,1600")
	cmd.Args = append(append(cmd.Args, flags...), "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	c := &cdp{cmd: cmd, in: cmdW, waiting: map[int]chan json.RawMessage{}}
	t.Cleanup(func() {
		cmdW.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	go func() {
		r := bufio.NewReader(outR)
		for {
			msg, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
				continue
			}
			c.mu.Lock()
			ch := c.waiting[m.ID]
			delete(c.waiting, m.ID)
			c.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- m.Error
				} else {
					ch <- m.Result
				}
			}
		}
	}()
	return c
}

// call sends a command (to the page's session once attached) and returns
// its result.
func (c *cdp) call(t *testing.T, method string, params any, out any) {
	t.Helper()
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	msg := map[string]any{"id": id, "method": method, "params": params}
	if c.session != "" && !strings.HasPrefix(method, "Target.") {
		msg["sessionId"] = c.session
	}
	c.mu.Unlock()
	b, _ := json.Marshal(msg)
	if _, err := c.in.Write(append(b, 0)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case r := <-ch:
		if out != nil {
			if err := json.Unmarshal(r, out); err != nil {
				t.Fatalf("%s: %v: %s", method, err, r)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer in 30 s", method)
	}
}

// open opens url in a new tab and attaches to it.
func (c *cdp) open(t *testing.T, url string) {
	var tg struct {
		TargetID string `json:"targetId"`
	}
	c.call(t, "Target.createTarget", map[string]any{"url": url}, &tg)
	var s struct {
		SessionID string `json:"sessionId"`
	}
	c.call(t, "Target.attachToTarget", map[string]any{"targetId": tg.TargetID, "flatten": true}, &s)
	if tg.TargetID == "" || s.SessionID == "" {
		t.Fatalf("no tab: %+v %+v", tg, s)
	}
	c.session = s.SessionID
}

// text is the textContent of the element with this id ("" if none).
func (c *cdp) text(t *testing.T, id string) string {
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	c.call(t, "Runtime.evaluate", map[string]any{
		"expression":    fmt.Sprintf(`(e => e ? (e.hidden ? "" : e.textContent) : "")(document.getElementById(%q))`, id),
		"returnByValue": true,
	}, &r)
	return r.Result.Value
}

// shot is a screenshot of the page, and how many of its pixels are the
// charts' first colour (Okabe-Ito blue, #0072B2, as report.html's).
func (c *cdp) shot(t *testing.T) (png []byte, blue int) {
	var r struct {
		Data string `json:"data"`
	}
	c.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := pngDecode(bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 0x00 && g>>8 == 0x72 && bl>>8 == 0xB2 {
				blue++
			}
		}
	}
	return png, blue
}

// countingProxy counts the requests Chromium sends anywhere but loopback.
func countingProxy(t *testing.T) (string, func() []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var seen []string
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
				mu.Lock()
				seen = append(seen, strings.TrimSpace(line))
				mu.Unlock()
			}()
		}
	}()
	return ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, s := range seen {
			own := false
			for _, host := range []string{"google.com", "googleapis.com", "gvt1.com", "gstatic.com"} {
				own = own || strings.Contains(s, host)
			}
			if !own {
				out = append(out, s)
			}
		}
		return out
	}
}

var pngDecode = png.Decode

func number(s string) int64 {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// TestDashboardInABrowser opens the page in a real Chromium during a real
// run: its numbers change as the run goes, the page says when it has
// ended, links the report, and then shows the summary's figures; no
// request left loopback.
func TestDashboardInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a real browser and an 8 s run")
	}
	proxy, outside := countingProxy(t)
	br := startChromium(t, proxy)
	url := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: live-browser
target: `+url+`
steps:
  - get: /
    name: home
    expect: { status: 200 }
  - get: /?status=503
    name: broken
    expect: { status: 200 }
load: { closed: { vus: 2, duration: 8s } }
thresholds:
  - checks > 10%
`), 0o644)
	out := filepath.Join(dir, "out")
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type exit struct {
		stderr string
		code   int
	}
	done := make(chan exit, 1)
	go func() {
		_, stderr, code := cli(ctx, t, "run", plan, "--out", out, "--dashboard="+addr, "--dashboard-linger", "60s")
		done <- exit{stderr, code}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/"); err == nil {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dashboard did not start")
		}
	}
	br.open(t, "http://"+addr+"/")
	seen := map[int64]bool{}
	var end string
	var blueMid int
	var midShot []byte
	for deadline := time.Now().Add(40 * time.Second); end == "" && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if n := number(br.text(t, "requests")); n > 0 {
			seen[n] = true
			if len(seen) == 2 {
				midShot, blueMid = br.shot(t)
			}
		}
		end = br.text(t, "end")
	}
	if !strings.Contains(end, "The run has ended.") || !strings.Contains(end, "Open the report") {
		t.Fatalf("the page does not say the run ended and link the report: %q", end)
	}
	if len(seen) < 3 {
		t.Errorf("the page's request count took %d values during the run, want it to change every second", len(seen))
	}
	endShot, blueEnd := br.shot(t)
	if blueMid == 0 || blueEnd == 0 || blueMid == blueEnd {
		t.Errorf("the charts' blue pixels: %d during the run, %d at the end: want them drawn, and changed", blueMid, blueEnd)
	}
	if p := os.Getenv("LOADLAB_DASHBOARD_SHOTS"); p != "" { // to look at them
		os.WriteFile(filepath.Join(p, "dashboard-mid.png"), midShot, 0o644)
		os.WriteFile(filepath.Join(p, "dashboard-end.png"), endShot, 0o644)
	}
	requests, checks, errs := br.text(t, "requests"), br.text(t, "checks"), br.text(t, "errors")
	steps := br.text(t, "steps")
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
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if number(requests) != s.Requests {
		t.Errorf("the page shows %s requests, the summary %d", requests, s.Requests)
	}
	if want := fmt.Sprintf("%s / %s", comma(s.Checks.Passed), comma(s.Checks.Failed)); checks != want {
		t.Errorf("the page shows checks %q, the summary %q", checks, want)
	}
	if number(errs) != s.Errors.Status5xx {
		t.Errorf("the page shows %s errors, the summary %d (all 5xx)", errs, s.Errors.Status5xx)
	}
	if !strings.Contains(steps, "home") || !strings.Contains(steps, "broken") {
		t.Errorf("the steps table: %q", steps)
	}
	if o := outside(); len(o) > 0 {
		t.Errorf("requests left loopback: %q", o)
	}
}

func comma(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
	proxy, outside := countingProxy(t)
	br := startChromium(t, proxy, "--proxy-bypass-list="+ip)
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
	go func() {
		_, stderr, _ := cli(ctx, t, "run", "--url", url+"/", "-d", "6s", "-c", "1", "--dashboard="+addr, "--dashboard-linger", "60s")
		stderrc <- stderr
	}()
	var link string
	for deadline := time.Now().Add(20 * time.Second); link == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/events"); err == nil {
			r.Body.Close()
			if r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("/events without the token: %d", r.StatusCode)
			}
			link = "found"
		}
	}
	if link == "" {
		t.Fatal("the dashboard did not start")
	}
	br.open(t, "http://"+addr+"/#token="+token)
	var n int64
	for deadline := time.Now().Add(20 * time.Second); n <= 0 && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		n = number(br.text(t, "requests"))
	}
	if n <= 0 {
		t.Errorf("the page with the token shows no requests (status %q)", br.text(t, "status"))
	}
	cancel()
	stderr := <-stderrc
	if !strings.Contains(stderr, "#token="+token) {
		t.Errorf("stderr does not give the page's link with its token:\n%s", stderr)
	}
	if o := outside(); len(o) > 0 {
		t.Errorf("requests went elsewhere: %q", o)
	}
}
