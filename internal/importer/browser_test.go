package importer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/loadlab/loadlab/internal/importer/hartest"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/runner"
)

// chrome is Debian's Chromium, headless, driven over the DevTools protocol
// (CDP) on one page, recording the page's network traffic as a HAR, the way
// DevTools' "Save all as HAR with content" does.
type chrome struct {
	t    *testing.T
	ws   *websocket.Conn
	mu   sync.Mutex
	next int
	wait map[int]chan cdpMsg
	load chan struct{}

	entries []*cdpEntry          // in the order the requests were sent
	byID    map[string]*cdpEntry // the current hop of each request id
}

type cdpMsg struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type cdpResponse struct {
	Status   int               `json:"status"`
	Headers  map[string]string `json:"headers"`
	MimeType string            `json:"mimeType"`
}

type cdpEntry struct {
	id       string
	wall     float64 // s since the epoch
	start    float64 // monotonic s
	end      float64
	kind     string
	method   string
	url      string
	headers  map[string]string
	postData string
	resp     *cdpResponse
	body     string
	base64   bool
	done     bool // loading finished (or redirected): its body can be asked for
	fetched  bool
}

func startChrome(t *testing.T) *chrome {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run scripts/test-deps")
	}
	profile, err := os.MkdirTemp("", "loadlab-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-sync",
		"--remote-debugging-port=0", "--user-data-dir="+profile, "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		// Chromium's helpers may write into the profile a moment longer.
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var browserWS string
	select {
	case browserWS = <-found:
	case <-time.After(20 * time.Second):
		t.Fatal("chromium did not say where DevTools listen within 20s")
	}
	host := strings.TrimPrefix(browserWS, "ws://")
	host = host[:strings.IndexByte(host, '/')]
	var pageWS string
	for deadline := time.Now().Add(10 * time.Second); pageWS == "" && time.Now().Before(deadline); {
		resp, err := http.Get("http://" + host + "/json/list")
		if err == nil {
			var targets []struct{ Type, WebSocketDebuggerURL string }
			json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, tg := range targets {
				if tg.Type == "page" {
					pageWS = tg.WebSocketDebuggerURL
				}
			}
		}
		if pageWS == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if pageWS == "" {
		t.Fatal("chromium has no page target")
	}
	ws, err := websocket.Dial(pageWS, "", "http://"+host)
	if err != nil {
		t.Fatal(err)
	}
	ws.MaxPayloadBytes = 64 << 20
	t.Cleanup(func() { ws.Close() })
	c := &chrome{t: t, ws: ws, wait: map[int]chan cdpMsg{}, load: make(chan struct{}, 16), byID: map[string]*cdpEntry{}}
	go c.read()
	c.call("Network.enable", map[string]any{"maxResourceBufferSize": 16 << 20, "maxTotalBufferSize": 64 << 20})
	c.call("Network.setCacheDisabled", map[string]any{"cacheDisabled": true})
	c.call("Page.enable", nil)
	return c
}

func (c *chrome) read() {
	for {
		var m cdpMsg
		if err := websocket.JSON.Receive(c.ws, &m); err != nil {
			c.mu.Lock()
			for _, ch := range c.wait {
				close(ch)
			}
			c.wait = map[int]chan cdpMsg{}
			c.mu.Unlock()
			return
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.wait[m.ID]
			delete(c.wait, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		c.event(m)
	}
}

// event keeps what the HAR needs of the network events.
func (c *chrome) event(m cdpMsg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Method {
	case "Page.loadEventFired":
		select {
		case c.load <- struct{}{}:
		default:
		}
	case "Network.requestWillBeSent":
		var p struct {
			RequestID string  `json:"requestId"`
			Timestamp float64 `json:"timestamp"`
			WallTime  float64 `json:"wallTime"`
			Type      string  `json:"type"`
			Request   struct {
				URL      string            `json:"url"`
				Method   string            `json:"method"`
				Headers  map[string]string `json:"headers"`
				PostData string            `json:"postData"`
			} `json:"request"`
			RedirectResponse *cdpResponse `json:"redirectResponse"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		if prev := c.byID[p.RequestID]; prev != nil && p.RedirectResponse != nil {
			prev.resp, prev.end, prev.done, prev.fetched = p.RedirectResponse, p.Timestamp, true, true
		}
		e := &cdpEntry{id: p.RequestID, wall: p.WallTime, start: p.Timestamp, kind: p.Type, method: p.Request.Method, url: p.Request.URL, headers: p.Request.Headers, postData: p.Request.PostData}
		c.byID[p.RequestID] = e
		c.entries = append(c.entries, e)
	case "Network.responseReceived":
		var p struct {
			RequestID string      `json:"requestId"`
			Response  cdpResponse `json:"response"`
		}
		if json.Unmarshal(m.Params, &p) == nil && c.byID[p.RequestID] != nil {
			r := p.Response
			c.byID[p.RequestID].resp = &r
		}
	case "Network.loadingFinished", "Network.loadingFailed":
		var p struct {
			RequestID string  `json:"requestId"`
			Timestamp float64 `json:"timestamp"`
		}
		if json.Unmarshal(m.Params, &p) == nil && c.byID[p.RequestID] != nil {
			e := c.byID[p.RequestID]
			e.end, e.done = p.Timestamp, true
			e.fetched = e.fetched || m.Method == "Network.loadingFailed"
		}
	}
}

// call sends a CDP command and returns its result.
func (c *chrome) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpMsg, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = map[string]any{}
	}
	if err := websocket.JSON.Send(c.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			c.t.Fatalf("%s: the browser went away", method)
		}
		if m.Error != nil {
			c.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		return m.Result
	case <-time.After(20 * time.Second):
		c.t.Fatalf("%s: no answer in 20s", method)
	}
	return nil
}

// do runs an action that loads a page (navigate, click a submit button)
// and waits for the page's load event, then keeps the bodies of the
// responses that finished.
func (c *chrome) do(action func()) {
	c.t.Helper()
	for len(c.load) > 0 {
		<-c.load
	}
	action()
	select {
	case <-c.load:
	case <-time.After(20 * time.Second):
		c.t.Fatal("the page did not load within 20s")
	}
	c.bodies()
}

func (c *chrome) navigate(url string) {
	c.do(func() { c.call("Page.navigate", map[string]any{"url": url}) })
}

// eval runs JavaScript in the page, awaiting a promise it returns.
func (c *chrome) eval(js string) {
	c.t.Helper()
	var r struct {
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	json.Unmarshal(c.call("Runtime.evaluate", map[string]any{"expression": js, "awaitPromise": true}), &r)
	if r.ExceptionDetails != nil {
		c.t.Fatalf("%s: %s %s", js, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
}

// bodies asks for the bodies of the responses that finished, while the
// browser still has them.
func (c *chrome) bodies() {
	time.Sleep(150 * time.Millisecond) // the last loadingFinished events
	c.mu.Lock()
	var todo []*cdpEntry
	for _, e := range c.entries {
		if e.done && !e.fetched {
			e.fetched = true
			todo = append(todo, e)
		}
	}
	c.mu.Unlock()
	for _, e := range todo {
		c.mu.Lock()
		c.next++
		id := c.next
		ch := make(chan cdpMsg, 1)
		c.wait[id] = ch
		c.mu.Unlock()
		websocket.JSON.Send(c.ws, map[string]any{"id": id, "method": "Network.getResponseBody", "params": map[string]any{"requestId": e.id}})
		select {
		case m := <-ch:
			var b struct {
				Body          string `json:"body"`
				Base64Encoded bool   `json:"base64Encoded"`
			}
			if m.Error == nil && json.Unmarshal(m.Result, &b) == nil {
				e.body, e.base64 = b.Body, b.Base64Encoded
			}
		case <-time.After(10 * time.Second):
		}
	}
}

// har is the session so far as a HAR 1.2 file.
func (c *chrome) har() []byte {
	c.bodies()
	c.mu.Lock()
	defer c.mu.Unlock()
	var entries []any
	for _, e := range c.entries {
		if e.resp == nil || !strings.HasPrefix(e.url, "http") {
			continue
		}
		nv := func(h map[string]string) []map[string]string {
			out := []map[string]string{}
			for k, v := range h {
				for _, line := range strings.Split(v, "\n") { // CDP joins repeated headers with \n
					out = append(out, map[string]string{"name": k, "value": line})
				}
			}
			return out
		}
		req := map[string]any{"method": e.method, "url": e.url, "httpVersion": "HTTP/1.1", "headers": nv(e.headers), "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": len(e.postData)}
		if e.postData != "" {
			ct := ""
			for k, v := range e.headers {
				if strings.EqualFold(k, "Content-Type") {
					ct = v
				}
			}
			req["postData"] = map[string]any{"mimeType": ct, "text": e.postData}
		}
		content := map[string]any{"size": len(e.body), "mimeType": e.resp.MimeType, "text": e.body}
		if e.base64 {
			content["encoding"] = "base64"
		}
		loc := ""
		for k, v := range e.resp.Headers {
			if strings.EqualFold(k, "Location") {
				loc = v
			}
		}
		wall := time.Unix(0, int64(e.wall*1e9)).UTC()
		entries = append(entries, map[string]any{
			"startedDateTime": wall.Format(time.RFC3339Nano),
			"time":            max(0, (e.end-e.start)*1000),
			"_resourceType":   strings.ToLower(e.kind),
			"request":         req,
			"response": map[string]any{"status": e.resp.Status, "statusText": "", "httpVersion": "HTTP/1.1", "headers": nv(e.resp.Headers),
				"cookies": []any{}, "content": content, "redirectURL": loc, "headersSize": -1, "bodySize": -1},
			"cache": map[string]any{}, "timings": map[string]any{"send": 0, "wait": 0, "receive": 0},
		})
	}
	b, _ := json.MarshalIndent(map[string]any{"log": map[string]any{"version": "1.2",
		"creator": map[string]string{"name": "loadlab-test-cdp", "version": "1"}, "pages": []any{}, "entries": entries}}, "", "  ")
	return b
}

// replay loads an imported plan against a fresh server and runs it.
func replay(t *testing.T, res *Result, target string, iterations int) {
	t.Helper()
	p, err := plan.Parse(filepath.Join(t.TempDir(), "imported.yaml"), res.Plan, plan.Options{Set: []string{"target=" + target, fmt.Sprintf("load.closed.iterations=%d", iterations)}, Env: res.SecretValues})
	if err != nil {
		t.Fatalf("the imported plan does not load: %v\n%s", err, res.Plan)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := runner.Plan(ctx, p, runner.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if s.Checks.Failed != 0 || s.Checks.Passed == 0 || s.Iterations != int64(iterations) || s.Aborted != 0 {
		for _, st := range r.Steps {
			if st.FailedCheck != nil {
				t.Logf("%s: %+v", st.Name, *st.FailedCheck)
			}
		}
		t.Errorf("replayed on a fresh server: checks %+v, iterations %d, aborted %d (%v)", s.Checks, s.Iterations, s.Aborted, r.Aborts)
	}
}

// TestBrowserRecordingOfTheShop: a session in a real (headless) Chromium on
// the demo shop (a product, add to cart by its CSRF form, checkout),
// recorded over DevTools, imports into a plan that passes on a fresh shop.
func TestBrowserRecordingOfTheShop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	recorded := startShop(t)
	b := startChrome(t)
	b.navigate(recorded.URL + "/")
	b.do(func() { b.eval(`document.querySelector('a[href^="/products/"]').click()`) })
	b.do(func() { b.eval(`document.querySelector('#add-to-cart button').click()`) })
	b.do(func() {
		b.eval(`document.querySelector('#checkout input[name=email]').value = 'ada@example.com'; document.querySelector('#checkout button').click()`)
	})
	har := b.har()
	if os.Getenv("LOADLAB_KEEP_HAR") != "" {
		os.WriteFile(os.Getenv("LOADLAB_KEEP_HAR"), har, 0o644)
	}
	res, err := HAR("shop.har", har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", res.Plan)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	out := string(res.Plan)
	for _, want := range []string{`- post: "/cart"`, `"authenticity_token": "{{ authenticity_token }}"`, `- post: "/checkout"`, `expect: { status: 303 }`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	if strings.Contains(strings.ToLower(out), "user-agent") || strings.Contains(out, "_shop_session") {
		t.Errorf("browser headers or the session cookie pasted into the plan")
	}
	replay(t, res, startShop(t).URL, 2)
}

// TestBrowserRecordingOfTheTracker: log in through a CSRF form, open an
// issue (its id in the redirect), comment through fetch() with the page's
// CSRF token in a header, log out, in Chromium; the plan passes on a
// tracker with other ids, one issue and one comment per iteration.
func TestBrowserRecordingOfTheTracker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	recorded := httptest.NewServer(hartest.NewTracker(7, 58))
	defer recorded.Close()
	b := startChrome(t)
	b.navigate(recorded.URL + "/login")
	b.do(func() {
		b.eval(`document.querySelector('input[name=email]').value = 'ada@example.com'; document.querySelector('input[name=password]').value = '` + hartest.Password + `'; document.querySelector('button').click()`)
	})
	b.do(func() {
		b.eval(`document.querySelector('input[name=title]').value = 'The cart forgets its lines'; document.querySelector('button').click()`)
	})
	b.eval(`fetch(location.pathname + '/comments', {method: 'POST', headers: {'Content-Type': 'application/json', 'Accept': 'application/json', 'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}, body: JSON.stringify({body: 'Seen on Firefox too'})}).then(r => { if (r.status != 201) throw new Error('comment: ' + r.status) })`)
	b.do(func() {
		b.eval(`const f = document.createElement('form'); f.method = 'post'; f.action = '/logout'; const i = document.createElement('input'); i.type = 'hidden'; i.name = 'authenticity_token'; i.value = document.querySelector('meta[name=csrf-token]').content; f.appendChild(i); document.body.appendChild(f); f.submit()`)
	})
	res, err := HAR("tracker.har", b.har(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", res.Plan)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	out := string(res.Plan)
	for _, want := range []string{`issue_location: { header: "Location" }`, `{{ split(issue_location, '/')[4] }}/comments`, `"{{ password }}"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	if strings.Contains(out, hartest.Password) || strings.Contains(out, "/58") {
		t.Errorf("the plan holds the password or the recorded issue id")
	}
	tr := hartest.NewTracker(12, 300)
	fresh := httptest.NewServer(tr)
	defer fresh.Close()
	replay(t, res, fresh.URL, 3)
	if issues, comments := tr.Created(); issues != 3 || comments != 3 {
		t.Errorf("the fresh tracker has %d issues and %d comments, want 3 and 3: one per iteration", issues, comments)
	}
}
