package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/browsertest"
	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/telemetry"
)

type sse struct {
	id   int64
	name string
	data string
}

// readEvents reads events from an SSE stream until stop says so or the
// stream ends.
func readEvents(t *testing.T, r io.Reader, stop func([]sse) bool) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				out = append(out, cur)
				if stop(out) {
					return out
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return out
}

func get(t *testing.T, url string, hdr map[string]string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// feed adds n seconds of figures to live: step "a" gets 100 responses a
// second in the 1 ms..2.5 ms bucket and 2 timeouts; step "b" 10 5xx.
func feed(live *telemetry.Live, n int) {
	steps := []engine.StepInfo{{Scenario: "s", Name: "a"}, {Scenario: "s", Name: "b"}}
	for range n {
		iv := &metrics.Interval{Requests: 112, Responses: 110, Errors: 12, Active: 7, Dropped: 1, Late: 2, Steps: make([]metrics.StepInterval, 2)}
		iv.Steps[0].Buckets[2] = 102
		iv.Steps[0].Count[metrics.ClassOK] = 100
		iv.Steps[0].Count[metrics.ClassTimeout] = 2
		iv.Steps[0].Checks.Passed = 100
		iv.Steps[1].Buckets[0] = 10
		iv.Steps[1].Count[metrics.Class5xx] = 10
		iv.Steps[1].Checks.Failed = 10
		live.Interval(steps, iv)
	}
}

func startBoard(t *testing.T, o Options) *Board {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	b, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// The stream's last frame holds the run's figures at its end, and the end
// event follows, linking the report served from the result directory.
func TestStreamEndsWithTheRunsFigures(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte("<p>report</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	live := telemetry.New()
	live.RunStarted()
	b := startBoard(t, Options{Live: live, Interval: 10 * time.Millisecond, ReportDir: dir, Quota: 64 << 20})
	resp := get(t, "http://"+b.Addr+"/events", nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	go func() {
		for range 5 {
			feed(live, 1)
			time.Sleep(15 * time.Millisecond)
		}
		live.Server(42.5, 10<<20)
		live.RunEnded()
		b.End(End{Warnings: []string{"<script>x</script>"}})
	}()
	evs := readEvents(t, resp.Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	if len(evs) < 3 || evs[len(evs)-1].name != "end" {
		t.Fatalf("events %v", evs)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].id != evs[i-1].id+1 {
			t.Fatalf("ids %d then %d", evs[i-1].id, evs[i].id)
		}
	}
	var f Frame
	if err := json.Unmarshal([]byte(evs[len(evs)-2].data), &f); err != nil {
		t.Fatal(err)
	}
	if f.Requests != 5*112 || f.Responses != 5*110 || f.Errors != 60 || f.Dropped != 5 || f.Late != 10 || f.Running || f.VUs != 0 {
		t.Errorf("last frame %+v", f)
	}
	if f.Classes[metrics.ClassOK] != 500 || f.Classes[metrics.ClassTimeout] != 10 || f.Classes[metrics.Class5xx] != 50 || f.Checks != [2]int64{500, 50} {
		t.Errorf("classes %v checks %v", f.Classes, f.Checks)
	}
	if !f.Server || f.ServerCPU != 42.5 || f.ServerRSS != 10<<20 || f.Quota != 64<<20 {
		t.Errorf("server %v %v %v quota %v", f.Server, f.ServerCPU, f.ServerRSS, f.Quota)
	}
	if len(f.Steps) != 2 || f.Steps[0].Name != "s / a" || f.Steps[1].Name != "s / b" {
		t.Fatalf("steps %+v", f.Steps)
	}
	// a: all in (1 ms, 2.5 ms]; b: all in (0, 0.5 ms]; together 510 of 560 in a.
	if p := f.Steps[0].PAll; p[0] <= 1 || p[2] > 2.5 {
		t.Errorf("step a percentiles %v", p)
	}
	if p := f.Steps[1].PAll; p[2] > 0.5 {
		t.Errorf("step b percentiles %v", p)
	}
	if p := f.PAll; p[0] <= 1 || p[0] > 2.5 {
		t.Errorf("overall percentiles %v", p)
	}
	var e End
	if err := json.Unmarshal([]byte(evs[len(evs)-1].data), &e); err != nil {
		t.Fatal(err)
	}
	if e.Report != "/report/report.html" || len(e.Warnings) != 1 || e.Warnings[0] != "<script>x</script>" {
		t.Errorf("end %+v", e)
	}
	// JSON carries the warning as text; the page sets it with textContent.
	if strings.Contains(evs[len(evs)-1].data, "<script>") {
		t.Errorf("end event carries raw markup: %s", evs[len(evs)-1].data)
	}
	rep := get(t, "http://"+b.Addr+e.Report, nil)
	body, _ := io.ReadAll(rep.Body)
	if rep.StatusCode != 200 || string(body) != "<p>report</p>" {
		t.Errorf("report: %d %q", rep.StatusCode, body)
	}
}

// A reconnect with Last-Event-ID gets the events after it, no more, no
// fewer; a page opened late gets them all.
func TestResumeWithLastEventID(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, Interval: time.Hour})
	for range 9 {
		feed(live, 1)
		b.frame()
	}
	b.End(End{})
	all := readEvents(t, get(t, "http://"+b.Addr+"/events", nil).Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	if len(all) != 12 || all[0].id != 1 || all[11].id != 12 { // the first frame, 9, End's frame, end
		t.Fatalf("%d events, ids %d..%d", len(all), all[0].id, all[len(all)-1].id)
	}
	rest := readEvents(t, get(t, "http://"+b.Addr+"/events", map[string]string{"Last-Event-ID": "7"}).Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	if len(rest) != 5 || rest[0].id != 8 {
		t.Fatalf("after 7: %d events from %d", len(rest), rest[0].id)
	}
	for i, e := range rest {
		if e != all[7+i] {
			t.Errorf("resumed event %d differs: %+v, first time %+v", e.id, e, all[7+i])
		}
	}
}

// The history stays within its bound however long the run, and still
// spans the run from its first frame to its newest.
func TestHistoryIsBounded(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, Interval: time.Hour, History: 100})
	for range 5000 {
		feed(live, 1)
		b.frame()
	}
	b.mu.Lock()
	n, first, last := len(b.events), b.events[0].id, b.events[len(b.events)-1].id
	b.mu.Unlock()
	if n > 100 || first != 1 || last != 5001 {
		t.Fatalf("%d events kept, ids %d..%d", n, first, last)
	}
	evs := readEvents(t, get(t, "http://"+b.Addr+"/events", nil).Body, func(e []sse) bool { return len(e) == n })
	var f Frame
	if err := json.Unmarshal([]byte(evs[len(evs)-1].data), &f); err != nil {
		t.Fatal(err)
	}
	if f.Requests != 5000*112 {
		t.Errorf("newest frame has %d requests", f.Requests)
	}
}

func TestBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Start(Options{Addr: ln.Addr().String(), Live: telemetry.New()})
	if err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("got %v", err)
	}
}

// Off loopback, the events and the report need the token; the page itself
// (which holds no figures) asks for it.
func TestTokenOffLoopback(t *testing.T) {
	ip := nonLoopbackIP(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "report.html"), []byte("r"), 0o644)
	b := startBoard(t, Options{Addr: net.JoinHostPort(ip, "0"), Live: telemetry.New(), Interval: time.Hour, ReportDir: dir})
	if b.Loopback || len(b.Token) != 32 {
		t.Fatalf("loopback %v token %q", b.Loopback, b.Token)
	}
	base := "http://" + b.Addr
	for _, u := range []string{"/events", "/events?token=wrong", "/report/report.html"} {
		if r := get(t, base+u, nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d", u, r.StatusCode)
		}
	}
	if r := get(t, base+"/", nil); r.StatusCode != 200 {
		t.Errorf("page: %d", r.StatusCode)
	}
	if r := get(t, base+"/report/report.html?token="+b.Token, nil); r.StatusCode != 200 {
		t.Errorf("report with the token: %d", r.StatusCode)
	}
	b.End(End{})
	r := get(t, base+"/events", map[string]string{"Authorization": "Bearer " + b.Token})
	if r.StatusCode != 200 {
		t.Fatalf("events with the token: %d", r.StatusCode)
	}
	if evs := readEvents(t, r.Body, func(e []sse) bool { return e[len(e)-1].name == "end" }); len(evs) == 0 {
		t.Error("no events")
	}
}

func nonLoopbackIP(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return ""
}

// On loopback, a Host that is not loopback (DNS rebinding) is refused,
// and every answer says the page may reach this server only.
func TestLoopbackGuard(t *testing.T) {
	b := startBoard(t, Options{Live: telemetry.New(), Interval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+b.Addr+"/", nil)
	req.Host = "evil.example:5665"
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d", r.StatusCode)
	}
	p := get(t, "http://"+b.Addr+"/", nil)
	if p.StatusCode != 200 || !strings.Contains(p.Header.Get("Content-Security-Policy"), "connect-src 'self'") {
		t.Errorf("page: %d, CSP %q", p.StatusCode, p.Header.Get("Content-Security-Policy"))
	}
	body, _ := io.ReadAll(p.Body)
	for _, bad := range []string{"http://", "https://", "innerHTML", "insertAdjacentHTML", "document.write"} {
		if strings.Contains(string(body), bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{"": DefaultAddr, "5666": "127.0.0.1:5666", ":5666": "127.0.0.1:5666", "0.0.0.0:1": "0.0.0.0:1", "[::1]:2": "[::1]:2"} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	if _, err := ListenAddr("nohost"); err == nil {
		t.Error("nohost: no error")
	}
}

// Closing the board ends the pages' streams.
func TestCloseEndsStreams(t *testing.T) {
	b, err := Start(Options{Addr: "127.0.0.1:0", Live: telemetry.New(), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := get(t, "http://"+b.Addr+"/events", nil)
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, r.Body); done <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Logf("stream ended: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
}

// An experiment's runs are events of their own, kept however full the
// history, with an ETA from the pace so far.
func TestRunEvents(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, Interval: time.Hour, History: 8})
	b.RunEnded(Run{Run: 1, Runs: 3, Point: "delay=1ms<b>", RPS: 10})
	for range 40 {
		b.frame()
	}
	b.RunEnded(Run{Run: 3, Runs: 3, Point: "delay=3ms"})
	b.End(End{})
	evs := readEvents(t, get(t, "http://"+b.Addr+"/events", nil).Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	var runs []Run
	for _, e := range evs {
		if e.name == "run" {
			var r Run
			json.Unmarshal([]byte(e.data), &r)
			runs = append(runs, r)
		}
	}
	if len(runs) != 2 || runs[0].Point != "delay=1ms<b>" || runs[0].ETASeconds <= 0 || runs[1].ETASeconds != 0 {
		t.Errorf("runs %+v", runs)
	}
}

// TestScheduleKept: an experiment's planned order, sent before its first
// run, is in the history still for a page opened after an hour's frames
// have thinned it, as it was sent.
func TestScheduleKept(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, Interval: time.Hour, History: 8})
	want := Schedule{Runs: []Slot{
		{Run: 1, Point: "delay=3ms", Rep: 1, Done: true, RPS: 12, P: [3]float64{1, 2, 3}, ErrorRate: 0.5},
		{Run: 2, Point: "delay=1ms<b>", Rep: 1},
	}}
	b.Scheduled(want)
	for range 40 {
		b.frame()
	}
	b.End(End{})
	evs := readEvents(t, get(t, "http://"+b.Addr+"/events", nil).Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	var got []Schedule
	for _, e := range evs {
		if e.name == "schedule" {
			var s Schedule
			json.Unmarshal([]byte(e.data), &s)
			got = append(got, s)
		}
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("schedule events %+v, want one: %+v", got, want)
	}
}

// BenchmarkFrame is the dashboard's work once a second: a snapshot of 20
// steps' figures made into a frame and encoded.
func BenchmarkFrame(b *testing.B) {
	live := telemetry.New()
	steps := make([]engine.StepInfo, 20)
	iv := &metrics.Interval{Requests: 1000, Steps: make([]metrics.StepInterval, 20)}
	for i := range steps {
		steps[i] = engine.StepInfo{Scenario: "s", Name: "step" + strconv.Itoa(i)}
		iv.Steps[i].Buckets[3] = 50
		iv.Steps[i].Count[metrics.ClassOK] = 50
	}
	live.Interval(steps, iv)
	bd, err := Start(Options{Addr: "127.0.0.1:0", Live: live, Interval: time.Hour, History: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer bd.Close()
	b.ReportAllocs()
	for b.Loop() {
		live.Interval(steps, iv)
		bd.frame()
	}
}

// Frames follow the engine's intervals: two intervals that come at once
// (as at the end of a run) make rates of one interval each, not a spike
// over the few milliseconds between them.
func TestRatesFollowIntervals(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live})
	resp := get(t, "http://"+b.Addr+"/events", nil)
	for range 3 {
		feed(live, 1)
		b.Interval()
		time.Sleep(time.Millisecond)
	}
	feed(live, 1)
	b.Interval()
	b.End(End{})
	evs := readEvents(t, resp.Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	var total int64
	for _, e := range evs {
		if e.name != "frame" {
			continue
		}
		var f Frame
		json.Unmarshal([]byte(e.data), &f)
		if f.Requests > total && f.RPS != 112 {
			t.Errorf("frame %d: %v requests/s, want 112 (one interval's)", f.Seq, f.RPS)
		}
		total = f.Requests
	}
	if total != 4*112 {
		t.Errorf("%d requests in all", total)
	}
}

// A page that stops reading (a stalled tab) or goes away never holds up
// the frames, which the engine's collector makes: they only append to the
// history.
func TestStalledPageDoesNotHoldTheFrames(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, History: 200})
	stalled, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.(*net.TCPConn).SetReadBuffer(4096)
	io.WriteString(stalled, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") // and never read
	gone := get(t, "http://"+b.Addr+"/events", nil)
	gone.Body.Close()
	start := time.Now()
	for range 3000 { // about 1.5 MB of events, more than the socket buffers hold
		feed(live, 1)
		b.Interval()
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("3000 frames took %s with a stalled page", d)
	}
	b.mu.Lock()
	last := b.events[len(b.events)-1].id
	b.mu.Unlock()
	if last != 3001 {
		t.Errorf("newest event %d, want 3001", last)
	}
}

// A token given is used as given, off loopback; one too short is refused.
func TestTokenGiven(t *testing.T) {
	ip := nonLoopbackIP(t)
	if _, err := Start(Options{Addr: net.JoinHostPort(ip, "0"), Live: telemetry.New(), Token: "short"}); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("a 5-character token: %v", err)
	}
	const tok = "0123456789abcdef"
	b := startBoard(t, Options{Addr: net.JoinHostPort(ip, "0"), Live: telemetry.New(), Interval: time.Hour, Token: tok})
	if b.Token != tok {
		t.Fatalf("token %q", b.Token)
	}
	b.End(End{})
	if r := get(t, "http://"+b.Addr+"/events?token="+tok, nil); r.StatusCode != 200 {
		t.Errorf("with the token given: %d", r.StatusCode)
	}
	if l := startBoard(t, Options{Live: telemetry.New(), Interval: time.Hour, Token: tok}); l.Token != "" {
		t.Errorf("on loopback the token is %q, want none", l.Token)
	}
}

// A capacity search's events: its start, each step's start and end, and
// its answer linking the search's report.html, all kept past the thinning
// of frames, so a page opened late still draws the whole curve.
func TestSearchEvents(t *testing.T) {
	dir := t.TempDir()
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, Interval: time.Hour, History: 8, ReportDir: dir})
	b.SearchStarted(Search{Name: "api", By: "rate", SLO: []string{"p95(latency) < 300ms"}, Lines: []SLOLine{{Clause: "p95(latency) < 300ms", Quantile: 95, Ms: 300}}, MaxSteps: 14})
	levels := []float64{50, 100, 75}
	for i, l := range levels {
		b.SearchStep(SearchStep{Index: i + 1, MaxSteps: 14, Level: l, Phase: "grow"})
		for range 20 {
			feed(live, 1)
			b.frame()
		}
		b.SearchStep(SearchStep{Index: i + 1, MaxSteps: 14, Level: l, Phase: "grow", Done: true, Holds: l != 100, Clause: map[bool]string{true: "", false: "p95(latency) < 300ms (<script>alert(1)</script>)"}[l != 100], P: [3]float64{1, 2, 3}})
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte("<html>capacity</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.SearchEnded(SearchEnd{Headline: "Capacity: 75/s", Answer: 75, Steps: 3})
	b.End(End{})
	evs := readEvents(t, get(t, "http://"+b.Addr+"/events", nil).Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	var names []string
	var steps []SearchStep
	var end SearchEnd
	for _, e := range evs {
		if e.name == "frame" {
			continue
		}
		names = append(names, e.name)
		switch e.name {
		case "search-step":
			var s SearchStep
			if err := json.Unmarshal([]byte(e.data), &s); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, s)
		case "search-end":
			if err := json.Unmarshal([]byte(e.data), &end); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := "search " + strings.Repeat("search-step ", 6) + "search-end end"; strings.Join(names, " ") != strings.TrimSpace(want) {
		t.Errorf("events %v, want %s", names, want)
	}
	if len(steps) != 6 || !steps[3].Done || steps[3].Holds || !strings.Contains(steps[3].Clause, "<script>") || steps[5].Level != 75 {
		t.Errorf("steps %+v", steps)
	}
	if end.Answer != 75 || end.Report != "/report/report.html" {
		t.Errorf("end %+v", end)
	}
}

// The page sets what the run says as text only: no API that parses HTML,
// in its sources or in the bundle (uPlot's code included).
func TestPageHasNoHTMLSinks(t *testing.T) {
	files := map[string][]byte{"web/page.html": page, "web/dist/app.js": appJS}
	srcs, _ := filepath.Glob("web/src/*.js")
	for _, p := range srcs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = b
	}
	if len(srcs) == 0 {
		t.Fatal("no web/src/*.js")
	}
	for name, b := range files {
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc"} {
			if strings.Contains(string(b), sink) {
				t.Errorf("%s uses %s", name, sink)
			}
		}
	}
}

// TestBundleIsCurrent rebuilds the bundle with scripts/build-dashboard
// (the esbuild that scripts/test-deps installs) into a temporary directory
// and wants the committed web/dist byte for byte: run scripts/build-dashboard
// and commit web/dist when it fails.
func TestBundleIsCurrent(t *testing.T) {
	root := browsertest.Root(t)
	if _, err := os.Stat(filepath.Join(root, "tools", "npm", "node_modules", ".bin", "esbuild")); err != nil {
		t.Fatalf("esbuild is not installed in tools/npm: run scripts/test-deps (%v)", err)
	}
	dir := t.TempDir()
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "build-dashboard"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build-dashboard: %v\n%s", err, out)
	}
	for _, name := range []string{"app.js", "app.css"} {
		built, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("web", "dist", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(built, committed) {
			t.Errorf("web/dist/%s (%d bytes) is out of date with web/src (rebuilt: %d bytes): run scripts/build-dashboard and commit web/dist", name, len(committed), len(built))
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("scripts/build-dashboard wrote %d files, want app.js and app.css", len(entries))
	}
}

// The page loads the bundle from its own server, with a policy that runs
// no inline script.
func TestBundleServed(t *testing.T) {
	b := startBoard(t, Options{Addr: "127.0.0.1:0", Live: telemetry.New()})
	for path, typ := range map[string]string{"/app.js": "text/javascript", "/app.css": "text/css"} {
		r := get(t, "http://"+b.Addr+path, nil)
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), typ) || len(body) < 1000 {
			t.Errorf("%s: %d %q, %d bytes", path, r.StatusCode, r.Header.Get("Content-Type"), len(body))
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
	if !bytes.Contains(page, []byte(`<script src="app.js"></script>`)) || !bytes.Contains(page, []byte(`href="app.css"`)) {
		t.Error("page.html does not load app.js and app.css")
	}
}

func TestOpenCommands(t *testing.T) {
	const u = "http://127.0.0.1:5665/"
	for _, c := range []struct {
		env, goos string
		want      [][]string
	}{
		{"", "linux", [][]string{{"xdg-open", u}}},
		{"", "freebsd", [][]string{{"xdg-open", u}}},
		{"", "darwin", [][]string{{"open", u}}},
		{"", "windows", [][]string{{"rundll32", "url.dll,FileProtocolHandler", u}}},
		{"firefox", "linux", [][]string{{"firefox", u}, {"xdg-open", u}}},
		{"chromium --new-window %s:lynx", "linux", [][]string{{"chromium", "--new-window", u}, {"lynx", u}, {"xdg-open", u}}},
		{`C:\b\chrome.exe;`, "windows", [][]string{{`C:\b\chrome.exe`, u}, {"rundll32", "url.dll,FileProtocolHandler", u}}},
	} {
		got := OpenCommands(u, c.env, c.goos)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("BROWSER=%q on %s: %q, want %q", c.env, c.goos, got, c.want)
		}
	}
}

func TestOpenFailsWithoutStopping(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script as $BROWSER")
	}
	dir := t.TempDir()
	fail := filepath.Join(dir, "fail")
	os.WriteFile(fail, []byte("#!/bin/sh\nexit 3\n"), 0o755)
	t.Setenv("BROWSER", "/nonexistent/browser:"+fail)
	t.Setenv("PATH", dir) // no xdg-open or open either
	err := Open("http://127.0.0.1:5665/")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/browser") || !strings.Contains(err.Error(), fail+": exit status 3") || !strings.Contains(err.Error(), "open") {
		t.Errorf("Open: %v, want why each opener failed", err)
	}
}

// TestPointEvents: after each run, its point's figures over the runs ended
// so far: medians, with an interval once there are runs enough (six, at
// 95%); a capacity search's answer is one of them. The ETA counts only the
// runs ended since the board started, not those an experiment resumed with.
func TestPointEvents(t *testing.T) {
	live := telemetry.New()
	b := startBoard(t, Options{Live: live, Interval: time.Hour})
	time.Sleep(100 * time.Millisecond)
	// Resumed: runs 1 to 4 ended in an earlier session.
	for i := range 6 {
		b.RunEnded(Run{Run: 5 + i, Runs: 12, Point: "workers=2", RPS: float64(100 + i), P: [3]float64{1, 2 + float64(i), 3}, CapacityBy: "rate", Capacity: float64(400 + 10*i)})
	}
	b.End(End{})
	evs := readEvents(t, get(t, "http://"+b.Addr+"/events", nil).Body, func(e []sse) bool { return e[len(e)-1].name == "end" })
	var runs []Run
	var points []Point
	for _, e := range evs {
		switch e.name {
		case "run":
			var r Run
			json.Unmarshal([]byte(e.data), &r)
			runs = append(runs, r)
		case "point":
			var p Point
			json.Unmarshal([]byte(e.data), &p)
			points = append(points, p)
		}
	}
	if len(runs) != 6 || len(points) != 6 {
		t.Fatalf("%d runs, %d points", len(runs), len(points))
	}
	// 0.1 s for the first run ended here, 7 runs left: 0.7 s at least (by
	// the runs' numbers, 0.1 s / 5 × 7 = 0.14 s).
	if runs[0].ETASeconds < 0.7 || runs[0].ETASeconds > 5 {
		t.Errorf("the first run's ETA %.2f s, want the time per run ended here times the 7 left", runs[0].ETASeconds)
	}
	if p := points[0]; p.Runs != 1 || p.RPS.Median != 100 || p.RPS.Bounded || p.Capacity == nil || p.Capacity.Median != 400 {
		t.Errorf("after one run: %+v", p)
	}
	last := points[5]
	if last.Runs != 6 || last.RPS.Median != 102.5 || !last.RPS.Bounded || last.RPS.Lo != 100 || last.RPS.Hi != 105 ||
		last.P[1].Median != 4.5 || last.Capacity.Median != 425 || !last.Capacity.Bounded || last.CapacityBy != "rate" {
		t.Errorf("after six runs: %+v (capacity %+v)", last, last.Capacity)
	}
}
