package telemetry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/metrics"
)

var steps = []engine.StepInfo{{Scenario: "shop", Name: "GET /"}, {Scenario: "shop", Name: "POST /cart"}}

// interval makes one second's figures: per step, n responses of 200 at
// latency ms, one 503 and one timeout; checks passed for the 200s.
func interval(n int, ms float64) *metrics.Interval {
	r := metrics.NewRecorder(len(steps))
	c := metrics.NewCollector(1, nil)
	var got *metrics.Interval
	c.PerStep(len(steps), func(iv *metrics.Interval) {
		if got == nil {
			got = iv
			// The collector recycles iv: keep a copy of what the tests read.
			cp := *iv
			cp.Steps = append([]metrics.StepInterval(nil), iv.Steps...)
			cp.Latency = iv.Latency.Clone()
			got = &cp
		}
	})
	r.Rotate(c.NewInterval(), 0)
	for step := range steps {
		for range n {
			r.Record(&metrics.Sample{Step: step, Status: 200, Latency: time.Duration(ms * float64(time.Millisecond))})
			r.Check(step, 0, true)
		}
		r.Record(&metrics.Sample{Step: step, Status: 503, Latency: time.Millisecond})
		r.Check(step, 0, false)
		r.Record(&metrics.Sample{Step: step, Failure: 2, Latency: 2 * time.Second}) // timeout: a latency too
		r.Iteration()
	}
	c.Submit(0, time.Second, r.Rotate(c.NewInterval(), 3))
	c.Close()
	return got
}

func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			key := name
			for _, l := range m.Label {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key+",count"] = float64(m.Histogram.GetSampleCount())
				for _, b := range m.Histogram.Bucket {
					out[key+",le="+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// TestServe: /metrics shows the figures Live was given, by step and class,
// with the latency histograms in their buckets, and says where it listens.
func TestServe(t *testing.T) {
	live := New()
	live.RunStarted()
	live.Interval(steps, interval(10, 3))
	live.Interval(steps, interval(5, 30))
	live.Server(150, 64<<20)
	srv, err := Serve("127.0.0.1:0", live, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !srv.Loopback {
		t.Errorf("%s: not loopback", srv.Addr)
	}
	got := scrape(t, "http://"+srv.Addr+"/metrics")
	want := map[string]float64{
		"loadlab_requests_total,class=ok,scenario=shop,step=GET /":           15,
		"loadlab_requests_total,class=5xx,scenario=shop,step=POST /cart":     2,
		"loadlab_requests_total,class=timeout,scenario=shop,step=GET /":      2,
		"loadlab_checks_total,result=passed,scenario=shop,step=POST /cart":   15,
		"loadlab_checks_total,result=failed,scenario=shop,step=POST /cart":   2,
		"loadlab_request_duration_seconds,scenario=shop,step=GET /,count":    19,
		"loadlab_request_duration_seconds,scenario=shop,step=GET /,le=0.001": 2,  // the 503s
		"loadlab_request_duration_seconds,scenario=shop,step=GET /,le=0.005": 12, // and the 3 ms
		"loadlab_request_duration_seconds,scenario=shop,step=GET /,le=0.05":  17, // and the 30 ms
		"loadlab_request_duration_seconds,scenario=shop,step=GET /,le=2.5":   19, // and the timeouts
		"loadlab_iterations_total":   4,
		"loadlab_vus_active":         3,
		"loadlab_running":            1,
		"loadlab_runs_total":         1,
		"loadlab_server_cpu_percent": 150,
		"loadlab_server_rss_bytes":   64 << 20,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for _, name := range Names() {
		found := false
		for k := range got {
			base, _, _ := strings.Cut(k, ",")
			if base == name || base+"_bucket" == name || base+"_sum" == name || base+"_count" == name {
				found = true
			}
		}
		if !found {
			t.Errorf("Names() has %s, which /metrics does not serve", name)
		}
	}
}

// TestServeBusyPort: a port already taken is an error that says so.
func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Serve(ln.Addr().String(), New(), "")
	if err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("Serve on a busy port: %v, want an error saying it is in use", err)
	}
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"":               "127.0.0.1:9464",
		":9464":          "127.0.0.1:9464",
		"9465":           "127.0.0.1:9465",
		"0.0.0.0:9464":   "0.0.0.0:9464",
		"localhost:1234": "localhost:1234",
		"[::1]:9464":     "[::1]:9464",
	} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	if _, err := ListenAddr("no-port"); err == nil {
		t.Error("ListenAddr(no-port): no error")
	}
}

func TestParseOutput(t *testing.T) {
	good := map[string]Output{
		"prometheus-rw=http://127.0.0.1:9090/api/v1/write":              {Kind: "prometheus-rw", URL: "http://127.0.0.1:9090/api/v1/write"},
		"otlp=http://127.0.0.1:4318":                                    {Kind: "otlp", URL: "http://127.0.0.1:4318/v1/metrics"},
		"otlp=https://otel.example:4318/v1/metrics":                     {Kind: "otlp", URL: "https://otel.example:4318/v1/metrics"},
		"prometheus-rw=http://127.0.0.1:9090/api/v1/write,native=true":  {Kind: "prometheus-rw", URL: "http://127.0.0.1:9090/api/v1/write", Native: true},
		"prometheus-rw=http://127.0.0.1:9090/api/v1/write,native=false": {Kind: "prometheus-rw", URL: "http://127.0.0.1:9090/api/v1/write"},
	}
	for in, want := range good {
		if got, err := ParseOutput(in); err != nil || got != want {
			t.Errorf("ParseOutput(%q) = %+v, %v, want %+v", in, got, err, want)
		}
	}
	if o := (Output{Kind: "prometheus-rw", URL: "http://h/w", Native: true}); o.String() != "prometheus-rw=http://h/w,native=true" {
		t.Errorf("String() = %q", o)
	}
	for _, in := range []string{"influx=http://x", "otlp=", "prometheus-rw", "otlp=ftp://x", "otlp=127.0.0.1:4318",
		"otlp=http://x,native=true", "prometheus-rw=http://x,native=maybe", "prometheus-rw=http://x,natives=true", "prometheus-rw=http://x,"} {
		if _, err := ParseOutput(in); err == nil {
			t.Errorf("ParseOutput(%q): no error", in)
		}
	}
}

// TestPushSlowReceiver: a receiver that never answers costs drops, counted,
// not time: feeding the figures never waits, and Close returns by its
// deadline with every push accounted for.
func TestPushSlowReceiver(t *testing.T) {
	release := make(chan struct{})
	var calls sync.WaitGroup
	send := func(ctx context.Context, s Snapshot) error {
		calls.Add(1)
		defer calls.Done()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	live := New()
	p := startPusher(Output{Kind: "prometheus-rw", URL: "http://127.0.0.1:1/"}, live, 5*time.Millisecond, send)
	iv := interval(10, 3)
	start := time.Now()
	for range 200 {
		live.Interval(steps, iv)
		time.Sleep(time.Millisecond)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("feeding 200 intervals took %v with a stuck receiver", d)
	}
	start = time.Now()
	st := p.Close(200 * time.Millisecond)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v, want about its 200ms", d)
	}
	close(release)
	calls.Wait()
	if st.Sent != 0 || st.Dropped < queueLen || !errors.Is(st.LastErr, context.Canceled) {
		t.Errorf("stats %+v: want nothing sent, drops counted, the cancel as last error", st)
	}
	if !strings.Contains(st.String(), "0 pushes sent") {
		t.Errorf("summary line %q", st)
	}
}

// TestPushDownReceiver: nothing listens; every push fails fast, is counted
// as dropped, and says why.
func TestPushDownReceiver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	live := New()
	p, err := StartPush(Output{Kind: "prometheus-rw", URL: "http://" + addr + "/api/v1/write"}, live, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	live.Interval(steps, interval(1, 1))
	time.Sleep(100 * time.Millisecond)
	st := p.Close(time.Second)
	if st.Sent != 0 || st.Dropped == 0 || st.LastErr == nil || !strings.Contains(st.LastErr.Error(), "refused") {
		t.Errorf("stats %+v: want drops and a refused connection", st)
	}
}

// TestRemoteWrite: what a receiver decodes (snappy, protobuf) holds the
// totals, the histogram's cumulative buckets and the job label.
func TestRemoteWrite(t *testing.T) {
	var mu sync.Mutex
	var last prompb.WriteRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		data, err := snappy.Decode(nil, body)
		if err != nil || r.Header.Get("Content-Encoding") != "snappy" {
			http.Error(w, "bad encoding", 400)
			return
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(data); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		last = req
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	live := New()
	live.Interval(steps, interval(10, 3))
	p, err := StartPush(Output{Kind: "prometheus-rw", URL: srv.URL}, live, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Close(5 * time.Second); st.Sent != 1 || st.Dropped != 0 {
		t.Fatalf("stats %+v, want the final push sent", st)
	}
	got := map[string]float64{}
	for _, ts := range last.Timeseries {
		var key []string
		for _, l := range ts.Labels {
			if l.Name != "instance" {
				key = append(key, l.Name+"="+l.Value)
			}
		}
		got[strings.Join(key, ",")] = ts.Samples[0].Value
	}
	for k, v := range map[string]float64{
		"__name__=loadlab_requests_total,class=ok,job=loadlab,scenario=shop,step=GET /":                       10,
		"__name__=loadlab_request_duration_seconds_bucket,job=loadlab,le=0.005,scenario=shop,step=POST /cart": 11,
		"__name__=loadlab_request_duration_seconds_bucket,job=loadlab,le=+Inf,scenario=shop,step=POST /cart":  12,
		"__name__=loadlab_request_duration_seconds_count,job=loadlab,scenario=shop,step=POST /cart":           12,
		"__name__=loadlab_iterations_total,job=loadlab":                                                       2,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// receiveWrites is a remote-write receiver that keeps the last request it
// decoded; refuseNative answers a request with native histograms as a
// Prometheus without them does.
func receiveWrites(t *testing.T, refuseNative bool) (url string, last func() prompb.WriteRequest, requests func() int) {
	var mu sync.Mutex
	var req prompb.WriteRequest
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		data, err := snappy.Decode(nil, body)
		var got prompb.WriteRequest
		if err == nil {
			err = got.Unmarshal(data)
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		for _, ts := range got.Timeseries {
			if len(ts.Histograms) > 0 && refuseNative {
				http.Error(w, "native histograms are disabled", http.StatusInternalServerError)
				return
			}
		}
		req = got
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() prompb.WriteRequest { mu.Lock(); defer mu.Unlock(); return req }, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestRemoteWriteNative: with native=true each step's latencies also go as
// a native histogram, valid, of schema 3, holding every latency in the
// bucket of its value, beside the classic series.
func TestRemoteWriteNative(t *testing.T) {
	url, last, _ := receiveWrites(t, false)
	live := New()
	live.Interval(steps, interval(10, 3))
	live.Interval(steps, interval(5, 30))
	p, err := StartPush(Output{Kind: "prometheus-rw", URL: url, Native: true}, live, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Close(5 * time.Second); st.Sent != 1 || st.Dropped != 0 || st.Note != "" {
		t.Fatalf("stats %+v, want the final push sent", st)
	}
	natives, classic := 0, 0
	for _, ts := range last().Timeseries {
		name := ""
		for _, l := range ts.Labels {
			if l.Name == "__name__" {
				name = l.Value
			}
		}
		if name == "loadlab_request_duration_seconds_count" {
			classic++
		}
		if len(ts.Histograms) == 0 {
			continue
		}
		natives++
		if name != "loadlab_request_duration_seconds" || len(ts.Samples) != 0 {
			t.Errorf("native histogram in series %s with %d samples", name, len(ts.Samples))
		}
		h := ts.Histograms[0].ToIntHistogram()
		if err := h.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// 15 at 3 ms and 30 ms, 2 at 1 ms (the 503s), 2 timeouts at 2 s.
		want := map[int]uint64{metrics.NativeIndex(0.003): 10, metrics.NativeIndex(0.030): 5, metrics.NativeIndex(0.001): 2, metrics.NativeIndex(2): 2}
		got := map[int]uint64{}
		for it := h.PositiveBucketIterator(); it.Next(); {
			b := it.At()
			if b.Count > 0 {
				got[metrics.NativeIndex(b.Upper)] = b.Count
			}
		}
		if h.Schema != 3 || h.Count != 19 || len(got) != len(want) {
			t.Errorf("schema %d, count %d, buckets %v; want schema 3, 19 latencies in %v", h.Schema, h.Count, got, want)
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("bucket %d holds %d, want %d", k, got[k], n)
			}
		}
	}
	if natives != 2 || classic != 2 {
		t.Errorf("%d native histograms and %d classic ones, want one of each a step", natives, classic)
	}
}

// TestNativeHistogramSpans: buckets apart by up to two empty ones share a
// span, farther ones start another; the counts come back as they went.
func TestNativeHistogramSpans(t *testing.T) {
	ser := Series{Native: make([]uint64, metrics.NumNativeBuckets), NativeZero: 3, Sum: 1}
	put := map[int]uint64{10: 4, 11: 1, 14: 7, 18: 2, 255: 1, 0: 5}
	for k, n := range put {
		ser.Native[k] = n
	}
	h := NativeHistogram(ser)
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	got := map[int]uint64{}
	for it := h.PositiveBucketIterator(); it.Next(); {
		if b := it.At(); b.Count > 0 {
			got[int(b.Index)-metrics.NativeMin] = b.Count
		}
	}
	if len(got) != len(put) || h.ZeroCount != 3 || h.Count != 23 {
		t.Errorf("buckets %v, zero %d, count %d; want %v, 3, 23", got, h.ZeroCount, h.Count, put)
	}
	for k, n := range put {
		if got[k] != n {
			t.Errorf("bucket %d holds %d, want %d", k, got[k], n)
		}
	}
	// 0 | 10 11 . . 14 | 18 | 255: four spans.
	if len(h.PositiveSpans) != 4 {
		t.Errorf("spans %+v, want 4", h.PositiveSpans)
	}
}

// TestRemoteWriteNativeRefused: a receiver without native histograms
// refuses the first push; it is sent again without them, and so is every
// later one, and the summary line says so.
func TestRemoteWriteNativeRefused(t *testing.T) {
	url, last, requests := receiveWrites(t, true)
	live := New()
	live.Interval(steps, interval(10, 3))
	p, err := StartPush(Output{Kind: "prometheus-rw", URL: url, Native: true}, live, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	st := p.Close(5 * time.Second)
	if st.Sent < 2 || st.Dropped != 0 || st.LastErr != nil || int64(requests()) != st.Sent+1 {
		t.Errorf("stats %+v after %d requests: want every push sent, the first one twice", st, requests())
	}
	if !strings.Contains(st.String(), "refused native histograms") || !strings.Contains(st.String(), "native histograms are disabled") {
		t.Errorf("summary line %q does not say native histograms were refused", st)
	}
	if n := len(last().Timeseries); n == 0 {
		t.Error("the receiver kept nothing")
	}
}

// TestOTLP: the SDK's exporter sends what the official OTLP protobufs
// decode into the same totals. (The receiver is this test's, decoding with
// go.opentelemetry.io/proto/otlp; TestOTLPPrometheus in cmd/loadlab pushes
// to a real one, a Prometheus 3 built by scripts/deps/prometheus.sh.)
func TestOTLP(t *testing.T) {
	var mu sync.Mutex
	var last *colmetrics.ExportMetricsServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/metrics" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/metrics, protobuf", 400)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req := &colmetrics.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		last = req
		mu.Unlock()
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	defer srv.Close()
	live := New()
	live.Interval(steps, interval(10, 3))
	o, err := ParseOutput("otlp=" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartPush(o, live, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Close(5 * time.Second); st.Sent != 1 || st.Dropped != 0 {
		t.Fatalf("stats %+v, want the final push sent", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if last == nil || len(last.ResourceMetrics) != 1 {
		t.Fatalf("decoded %v, want one resource's metrics", last)
	}
	var requests float64
	var histCount uint64
	var bounds int
	for _, m := range last.ResourceMetrics[0].ScopeMetrics[0].Metrics {
		switch m.Name {
		case "loadlab_requests":
			for _, dp := range m.GetSum().DataPoints {
				requests += dp.GetAsDouble()
			}
			if !m.GetSum().IsMonotonic {
				t.Error("loadlab_requests is not monotonic")
			}
		case "loadlab_request_duration_seconds":
			for _, dp := range m.GetHistogram().DataPoints {
				histCount += dp.Count
				bounds = len(dp.ExplicitBounds)
			}
		}
	}
	if requests != 24 || histCount != 24 || bounds != len(Bounds) {
		t.Errorf("decoded %v requests, %d latencies, %d bounds; want 24, 24, %d", requests, histCount, bounds, len(Bounds))
	}
}

// BenchmarkLiveInterval is the collector's cost a second with live metrics
// on: one interval of two steps, latencies from 3 ms to 2 s (timeouts).
func BenchmarkLiveInterval(b *testing.B) {
	live, iv := New(), interval(1000, 3)
	b.ReportAllocs()
	for b.Loop() {
		live.Interval(steps, iv)
	}
}

// status is the status of a GET of u with the Host and headers given.
func status(t *testing.T, u, host string, header map[string]string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r.StatusCode
}

// TestServeLoopbackGuard: on loopback, as the dashboard does, /metrics
// refuses a Host that is not loopback (a page elsewhere rebinding its name
// to 127.0.0.1) and needs no token.
func TestServeLoopbackGuard(t *testing.T) {
	t.Parallel()
	srv, err := Serve("127.0.0.1:0", New(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Token != "" {
		t.Errorf("token %q on loopback, want none", srv.Token)
	}
	_, port, _ := net.SplitHostPort(srv.Addr)
	u := "http://" + srv.Addr + "/metrics"
	for _, host := range []string{"evil.example:" + port, "evil.example", "192.0.2.7:" + port} {
		if got := status(t, u, host, nil); got != http.StatusForbidden {
			t.Errorf("Host %s: %d, want 403", host, got)
		}
	}
	for _, host := range []string{"", "localhost:" + port, "[::1]:" + port} {
		if got := status(t, u, host, nil); got != http.StatusOK {
			t.Errorf("Host %q: %d, want 200", host, got)
		}
	}
}

// TestServeTokenOffLoopback: off loopback /metrics needs the token, made
// at random (32 hex digits) or given, as a Bearer header or ?token=; a
// given token shorter than 16 characters is refused.
func TestServeTokenOffLoopback(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	srv, err := Serve(net.JoinHostPort(ip, "0"), New(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Loopback || len(srv.Token) != 32 {
		t.Fatalf("loopback %v, token %q: want a random token off loopback", srv.Loopback, srv.Token)
	}
	base := "http://" + srv.Addr
	for _, c := range []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/metrics", nil, http.StatusUnauthorized},
		{"/", nil, http.StatusUnauthorized},
		{"/metrics?token=wrong", nil, http.StatusUnauthorized},
		{"/metrics", map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized},
		{"/metrics?token=" + srv.Token, nil, http.StatusOK},
		{"/metrics", map[string]string{"Authorization": "Bearer " + srv.Token}, http.StatusOK},
	} {
		if got := status(t, base+c.path, "", c.header); got != c.want {
			t.Errorf("%s %v: %d, want %d", c.path, c.header, got, c.want)
		}
	}
	given, err := Serve(net.JoinHostPort(ip, "0"), New(), "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	defer given.Close()
	if given.Token != "0123456789abcdef" {
		t.Errorf("token %q, want the one given", given.Token)
	}
	if _, err := Serve(net.JoinHostPort(ip, "0"), New(), "short"); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("a 5-character token: %v, want an error saying it is too short", err)
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
