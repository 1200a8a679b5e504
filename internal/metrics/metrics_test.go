package metrics

import (
	"maps"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/result"
)

func sample(i int) *Sample {
	s := &Sample{Step: i % 3, Status: 200, Latency: time.Duration(i%5000) * time.Microsecond, Service: time.Millisecond, TTFB: time.Millisecond, Bytes: 100}
	switch i % 50 {
	case 0:
		s.Status = 503
	case 1:
		s.Status, s.Failure = 0, httpx.FailureTimeout
	}
	return s
}

// TestMemoryIsBounded: recording ten times as many requests takes no more
// memory; the histograms are fixed-size.
func TestMemoryIsBounded(t *testing.T) {
	heap := func(n int) uint64 {
		r := NewRecorder(3)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			r.Record(sample(i))
		}
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(r)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := heap(100_000), heap(1_000_000)
	if large > small+64<<10 {
		t.Fatalf("recording 1M samples allocated %d bytes, 100k allocated %d: memory grows with the run", large, small)
	}
	if allocs := testing.AllocsPerRun(1000, func() { NewRecorder(3).Record(sample(5)) }); allocs > 20 {
		t.Logf("a new recorder costs %v allocations (histograms are allocated on first use)", allocs)
	}
	r := NewRecorder(3)
	r.Record(sample(7))
	if allocs := testing.AllocsPerRun(10000, func() { r.Record(sample(7)) }); allocs != 0 {
		t.Fatalf("Record allocates %v times per sample", allocs)
	}
}

func TestSummarize(t *testing.T) {
	r := NewRecorder(3)
	for i := range 1000 {
		r.Record(sample(i))
	}
	s := RunSummary(r, 2*time.Second)
	if s.Requests != 1000 || s.Errors.Timeout != 20 || s.Errors.Status5xx != 20 || s.Responses != 980 {
		t.Fatalf("summary %+v", s)
	}
	if s.ThroughputRPS != 490 || s.ErrorRate != 0.04 { // 980 responses in 2 s; timeouts are not throughput
		t.Errorf("throughput %v error rate %v", s.ThroughputRPS, s.ErrorRate)
	}
	if s.Latency.Max != 0.999 || s.Latency.Min != 0 || s.Latency.Count != 1000 { // 980 responses and 20 timeouts
		t.Errorf("latency %+v", s.Latency)
	}
}

func TestMergeIsExact(t *testing.T) {
	a, b, all := NewRecorder(3), NewRecorder(3), NewRecorder(3)
	for i := range 5000 {
		s := sample(i * 7)
		all.Record(s)
		if i%2 == 0 {
			a.Record(s)
		} else {
			b.Record(s)
		}
	}
	a.Merge(b)
	for step := range 3 {
		for c := range NumClasses {
			x, y := a.Steps[step].Latency[c], all.Steps[step].Latency[c]
			if (x == nil) != (y == nil) || (x != nil && !x.Equals(y)) {
				t.Fatalf("step %d class %v differs after merge", step, c)
			}
		}
	}
	enc, err := Encode(a.Steps[0].Latency[ClassOK])
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(enc)
	if err != nil || !dec.Equals(a.Steps[0].Latency[ClassOK]) {
		t.Fatalf("encoding is not lossless: %v", err)
	}
}

func BenchmarkRecord(b *testing.B) {
	r := NewRecorder(1)
	s := &Sample{Status: 200, Latency: 1234 * time.Microsecond, Service: time.Millisecond, TTFB: 900 * time.Microsecond, Bytes: 100}
	b.ReportAllocs()
	for b.Loop() {
		r.Record(s)
	}
}

// TestTimeoutsCountInLatency: a server that answers a few requests fast and
// lets the rest time out must not look fast.
func TestTimeoutsCountInLatency(t *testing.T) {
	r := NewRecorder(1)
	for i := range 100 {
		s := &Sample{Status: 200, Latency: time.Millisecond, Service: time.Millisecond, TTFB: time.Millisecond}
		if i%5 == 0 {
			s = &Sample{Failure: httpx.FailureTimeout, Latency: 30 * time.Second, Service: 30 * time.Second}
		}
		if i%25 == 1 {
			s = &Sample{Failure: httpx.FailureConnect, Latency: 100 * time.Microsecond}
		}
		r.Record(s)
	}
	sum := RunSummary(r, time.Second)
	if sum.Latency.Count != 96 || sum.Latency.P95 < 29000 || sum.Errors.Timeout != 20 || sum.Errors.Connect != 4 || sum.Responses != 76 {
		t.Errorf("latency %+v, errors %+v, responses %d: want the 20 timeouts in the latency, not the 4 refused connections", sum.Latency, sum.Errors, sum.Responses)
	}
	if sum.TTFB.Count != 76 {
		t.Errorf("TTFB counts %d, want the 76 responses", sum.TTFB.Count)
	}
}

// TestStatusExamples: the summary says which 4xx and 5xx statuses came
// first, across merged recorders, so that "status_4xx 12" says why.
func TestStatusExamples(t *testing.T) {
	a, b := NewRecorder(1), NewRecorder(1)
	a.Record(&Sample{Status: 200, Reason: []byte("OK")})
	a.Record(&Sample{Status: 503, Reason: []byte("Back Soon")})
	b.Record(&Sample{Status: 413, Reason: []byte("Payload Too Large")})
	b.Record(&Sample{Status: 500, Reason: []byte("Internal Server Error")})
	a.Merge(b)
	ex := RunSummary(a, time.Second).Errors.Examples
	// The server's reason phrases, not Go's ("Request Entity Too Large",
	// "Service Unavailable").
	if ex["status_4xx"] != "HTTP 413 Payload Too Large" || ex["status_5xx"] != "HTTP 503 Back Soon" {
		t.Errorf("examples %q", ex)
	}
	c := NewRecorder(1)
	c.Record(&Sample{Status: 404}) // "HTTP/1.1 404": no phrase
	if ex := RunSummary(c, time.Second).Errors.Examples; ex["status_4xx"] != "HTTP 404" {
		t.Errorf("no reason phrase: %q", ex)
	}
}

// TestSeriesIsBounded: a run three times longer than MaxPoints seconds keeps at
// most MaxPoints points, loses no request and never hides a slow second.
func TestSeriesIsBounded(t *testing.T) {
	const seconds = 3*MaxPoints + 7
	var heard int
	var lastHeard result.Point
	c := NewCollector(1, func(p result.Point) { heard, lastHeard = heard+1, p })
	for s := range seconds {
		iv := c.NewInterval()
		iv.Requests, iv.Responses, iv.Active = 3, 3, int64(s)
		latency := int64(1000) // 1 ms
		if s == seconds/3 {
			latency = 2_000_000 // one second at 2 s
		}
		for range 3 {
			iv.Latency.RecordValue(latency)
		}
		c.Submit(s, time.Second, iv)
	}
	c.Close()
	series := c.Series()
	// onPoint may miss points it is too slow for, never the last.
	if heard == 0 || heard > seconds || lastHeard.T != seconds {
		t.Errorf("onPoint heard %d points, the last at t=%v; want at most %d, the last at t=%d", heard, lastHeard.T, seconds, seconds)
	}
	if len(series) > MaxPoints || len(series) < MaxPoints/2 {
		t.Fatalf("%d points for a %d-second run, want at most %d and no fewer than half", len(series), seconds, MaxPoints)
	}
	var requests int64
	var length, worst float64
	for i, p := range series {
		requests += p.Requests
		length += p.Len
		worst = max(worst, p.P99)
		if i > 0 && p.T <= series[i-1].T {
			t.Fatalf("point %d at t=%v after t=%v", i, p.T, series[i-1].T)
		}
		if i < len(series)-1 && p.Len != series[0].Len {
			t.Fatalf("point %d covers %v s, the first %v s", i, p.Len, series[0].Len)
		}
	}
	if requests != 3*seconds || length != seconds {
		t.Errorf("series sums to %d requests over %v s, want %d over %d", requests, length, 3*seconds, seconds)
	}
	if worst < 1900 {
		t.Errorf("the slow second's p99 is lost in folding: worst p99 %v ms", worst)
	}
	if last := series[len(series)-1]; last.T != seconds || last.Active != seconds-1 || last.RPS != 3 {
		t.Errorf("last point %+v: want t=%d, active of the last second, 3 requests/s", last, seconds)
	}
	if p, _ := c.Latest(); p.Len != 1 || p.T != seconds {
		t.Errorf("Latest = %+v, want the last second alone", p)
	}
}

// TestListenerHearsTheFoldedTail: the last, short interval of a run is
// folded into the second before; onPoint hears that point last, as the
// series ends with it.
func TestListenerHearsTheFoldedTail(t *testing.T) {
	var lastHeard result.Point
	c := NewCollector(2, func(p result.Point) { lastHeard = p })
	for s, length := range []time.Duration{time.Second, time.Second, 20 * time.Millisecond} {
		for worker := range 2 {
			if s == 2 && worker == 1 {
				break // this worker ended within the second before
			}
			iv := c.NewInterval()
			iv.Requests, iv.Responses = 5, 5
			c.Submit(s, length, iv)
		}
	}
	c.Close()
	series := c.Series()
	last := series[len(series)-1]
	if len(series) != 2 || last.Requests != 15 {
		t.Fatalf("series %+v, want the tail folded into the second second", series)
	}
	if lastHeard != last {
		t.Errorf("onPoint heard last %+v, the series ends with %+v", lastHeard, last)
	}
}

// TestSlowListenerDoesNotStallWorkers: while onPoint is blocked (a progress
// line written to a paused terminal), workers go on submitting; once it is
// free it hears the newest point, and Close waits for it.
func TestSlowListenerDoesNotStallWorkers(t *testing.T) {
	release := make(chan struct{})
	heard := make(chan result.Point, 1000)
	c := NewCollector(1, func(p result.Point) {
		<-release
		heard <- p
	})
	const seconds = 1000 // far more than the collector's queue holds
	submitted := make(chan struct{})
	go func() {
		for s := range seconds {
			iv := c.NewInterval()
			iv.Requests, iv.Responses = 1, 1
			c.Submit(s, time.Second, iv)
		}
		close(submitted)
	}()
	select {
	case <-submitted:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Submit blocked while onPoint was busy")
	}
	close(release)
	c.Close()
	close(heard)
	var last result.Point
	n := 0
	for p := range heard {
		last = p
		n++
	}
	// All but the queue's 64 were merged while onPoint was blocked on the
	// first: it hears that one, then newer ones, the last last.
	if n == 0 || n > 100 || last.T != seconds {
		t.Errorf("onPoint heard %d points, the last at t=%v; want at most 100, the last at t=%d", n, last.T, seconds)
	}
	if series := c.Series(); len(series) != seconds {
		t.Errorf("%d points in the series, want %d", len(series), seconds)
	}
}

// TestTLSHandshakes: TLS handshakes are timed apart from the TCP connect,
// run-wide and per step, with the resumed ones counted, across merged
// recorders and after a warmup's reset.
func TestTLSHandshakes(t *testing.T) {
	a, b := NewRecorder(2), NewRecorder(2)
	a.Record(&Sample{Step: 0, Status: 200, Connect: time.Millisecond, TLS: 4 * time.Millisecond})
	a.Record(&Sample{Step: 0, Status: 200}) // a reused connection
	b.Record(&Sample{Step: 1, Status: 200, Connect: time.Millisecond, TLS: 2 * time.Millisecond, TLSResumed: true})
	b.Record(&Sample{Step: 1, Status: 200, Connect: 2 * time.Millisecond}) // plain HTTP
	a.Merge(b)
	sum := RunSummary(a, time.Second)
	if sum.TLS == nil || sum.TLS.Count != 2 || sum.TLS.Max < 3.9 || sum.TLSResumed != 1 || sum.Connect == nil || sum.Connect.Count != 3 {
		t.Fatalf("tls %+v resumed %d connect %+v: want 2 handshakes, 1 resumed, 3 connects", sum.TLS, sum.TLSResumed, sum.Connect)
	}
	one := Summarize(a, []int{1}, time.Second)
	if one.TLS == nil || one.TLS.Count != 1 || one.TLSResumed != 1 || one.Connect.Count != 2 {
		t.Errorf("step 2: tls %+v resumed %d connect %+v", one.TLS, one.TLSResumed, one.Connect)
	}
	a.ResetTotals()
	if sum := RunSummary(a, time.Second); sum.TLS != nil || sum.TLSResumed != 0 || sum.Connect != nil {
		t.Errorf("after a reset: tls %+v resumed %d connect %+v", sum.TLS, sum.TLSResumed, sum.Connect)
	}
}

// TestStatusCounts: responses are counted by status code, per step and
// run-wide, across merged recorders; failures have no status; a warmup's
// reset forgets them.
func TestStatusCounts(t *testing.T) {
	a, b := NewRecorder(2), NewRecorder(2)
	for range 3 {
		a.Record(&Sample{Step: 0, Status: 302})
	}
	a.Record(&Sample{Step: 0, Status: 200})
	b.Record(&Sample{Step: 0, Status: 302})
	b.Record(&Sample{Step: 1, Status: 304})
	b.Record(&Sample{Step: 1, Failure: httpx.FailureReset})
	a.Merge(b)
	sum := RunSummary(a, time.Second)
	if want := map[int]int64{200: 1, 302: 4, 304: 1}; !maps.Equal(sum.Status, want) {
		t.Errorf("status %v, want %v", sum.Status, want)
	}
	if one := Summarize(a, []int{1}, time.Second); !maps.Equal(one.Status, map[int]int64{304: 1}) {
		t.Errorf("step 2: status %v", one.Status)
	}
	a.ResetTotals()
	if sum := RunSummary(a, time.Second); sum.Status != nil {
		t.Errorf("after a reset: %v", sum.Status)
	}
}

func BenchmarkRecordPerStep(b *testing.B) {
	r := NewRecorder(4)
	r.Rotate(newInterval(4), 0)
	s := &Sample{Step: 2, Status: 200, Latency: 1234 * time.Microsecond, Service: time.Millisecond, TTFB: 900 * time.Microsecond, Bytes: 100}
	b.ReportAllocs()
	for b.Loop() {
		r.Record(s)
	}
}

// TestPerStepIntervals: with the series kept per step, what onInterval
// hears adds up to the totals, step by step and class by class, the warmup's
// counts and the short tail included, and the points of the series are the
// same as without it.
func TestPerStepIntervals(t *testing.T) {
	var want [2]StepInterval // what was recorded, counted here
	run := func(perStep bool) ([]result.Point, []StepInterval, int64) {
		want = [2]StepInterval{}
		var heard []StepInterval
		var requests int64
		c := NewCollector(2, nil)
		if perStep {
			c.PerStep(2, func(iv *Interval) {
				if heard == nil {
					heard = make([]StepInterval, len(iv.Steps))
				}
				for i, st := range iv.Steps {
					for k := range st.Buckets {
						heard[i].Buckets[k] += st.Buckets[k]
					}
					heard[i].SumMicros += st.SumMicros
					for k := range st.Native {
						heard[i].Native[k] += st.Native[k]
					}
					heard[i].NativeZero += st.NativeZero
					for k := range NumClasses {
						heard[i].Count[k] += st.Count[k]
					}
					heard[i].Checks.Passed += st.Checks.Passed
					heard[i].Checks.Failed += st.Checks.Failed
				}
				requests += iv.Requests
			})
		}
		recs := []*Recorder{NewRecorder(2), NewRecorder(2)}
		for _, r := range recs {
			r.Rotate(c.NewInterval(), 0)
		}
		for second := range 3 {
			for w, r := range recs {
				for i := range 50 {
					s := &Sample{Step: i / 25, Status: 200, Latency: time.Duration(1+i+w*100+second*1000) * time.Microsecond}
					switch i % 10 {
					case 3:
						s.Status = 503
					case 7:
						s.Status, s.Failure, s.Latency = 0, httpx.FailureTimeout, time.Second
					case 9:
						s.Status, s.Failure = 0, httpx.FailureConnect
					}
					r.Record(s)
					r.Check(s.Step, 0, s.Status == 200)
					want[s.Step].Count[ClassOf(s.Status, s.Failure)]++
					if s.Status == 200 {
						want[s.Step].Checks.Passed++
					} else {
						want[s.Step].Checks.Failed++
					}
					if second == 1 && i == 20 && w == 0 {
						r.ResetTotals() // the end of a warmup, mid-interval
					}
				}
				length := time.Second
				if second == 2 {
					length = 100 * time.Millisecond // a short tail, folded
				}
				c.Submit(second, length, r.Rotate(c.NewInterval(), 0))
			}
		}
		c.Close()
		return c.Series(), heard, requests
	}
	plain, _, _ := run(false)
	points, heard, requests := run(true)
	if !reflect.DeepEqual(plain, points) {
		t.Errorf("per step, the series changed:\n%+v\nwant\n%+v", points, plain)
	}
	if requests != 300 {
		t.Errorf("onInterval heard %d requests, want 300", requests)
	}
	for step, st := range heard {
		w := want[step]
		if st.Count != w.Count {
			t.Errorf("step %d: counts %v, want %v", step, st.Count, w.Count)
		}
		if st.Checks != w.Checks {
			t.Errorf("step %d: checks %+v, want %+v", step, st.Checks, w.Checks)
		}
		var n int64
		for _, c := range st.Buckets {
			n += c
		}
		if w := w.Count[ClassOK] + w.Count[Class5xx] + w.Count[ClassTimeout]; n != w {
			t.Errorf("step %d: %d latencies, want %d (responses and timeouts)", step, n, w)
		}
		if StepBounds[10] != 1_000_000 || st.Buckets[10] == 0 || st.SumMicros == 0 {
			t.Errorf("step %d: buckets %v, sum %d: the 1 s timeouts are not in (0.5 s, 1 s]", step, st.Buckets, st.SumMicros)
		}
		native := st.NativeZero
		for _, c := range st.Native {
			native += int64(c)
		}
		if native != n || int64(st.Native[0-NativeMin]) != w.Count[ClassTimeout] {
			t.Errorf("step %d: %d latencies in native buckets, %d in (2^-1/8 s, 1 s]; want %d and the %d timeouts", step, native, st.Native[0-NativeMin], n, w.Count[ClassTimeout])
		}
	}
	if want[0].Count[Class5xx] == 0 || want[1].Count[ClassFailed] == 0 {
		t.Fatalf("the test's samples miss a class: %+v", want)
	}
}

// TestKeptHistograms: a segment's collector puts each second's latency
// histogram in its point, and folding two seconds (a run past MaxPoints)
// gives the percentiles of both seconds together, not the larger of the
// two: one fast second of 99 requests and one slow request fold to a
// fast p50.
func TestKeptHistograms(t *testing.T) {
	c := NewCollector(1, nil)
	c.KeepHistograms()
	for s, lat := range []struct {
		n     int
		value int64
	}{{99, 1000}, {1, 80_000}} {
		iv := c.NewInterval()
		iv.Requests, iv.Responses = int64(lat.n), int64(lat.n)
		for range lat.n {
			iv.Latency.RecordValue(lat.value)
		}
		c.Submit(s, time.Second, iv)
	}
	c.Close()
	series := c.Series()
	if len(series) != 2 || series[0].Hist == "" || series[1].Hist == "" {
		t.Fatalf("series %+v: want two points with their histograms", series)
	}
	p := fold(series[0], series[1])
	if p.P50 > 1.01 || p.Max < 79.9 || p.Hist == "" {
		t.Errorf("folded %+v: want p50 1 ms and max 80 ms from the merged histograms", p)
	}
	without := NewCollector(1, nil)
	iv := without.NewInterval()
	iv.Responses = 1
	iv.Latency.RecordValue(1000)
	without.Submit(0, time.Second, iv)
	without.Close()
	if s := without.Series(); len(s) != 1 || s[0].Hist != "" {
		t.Errorf("a whole run's series %+v: want no histograms kept", s)
	}
}

// TestNativeIndex: the native buckets are Prometheus' of schema 3, upper
// bounds included: bucket k is (2^((k-1)/8), 2^(k/8)].
func TestNativeIndex(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want int
	}{
		{1, 0}, {1.0001, 1}, {math.Exp2(1.0 / 8), 1}, {math.Exp2(1.0/8) * 1.0001, 2}, {2, 8}, {0.5, -8}, {0.4999, -8}, {0.0001, -106}, {1e-6, -159}, {4096, 96},
	} {
		if got := NativeIndex(c.v); got != c.want {
			t.Errorf("NativeIndex(%g) = %d, want %d", c.v, got, c.want)
		}
	}
	if NativeIndex(1e-6) != NativeMin || NativeIndex(4096) != NativeMin+NumNativeBuckets-1 {
		t.Errorf("the buckets kept are %d..%d, want those of 1 µs..4096 s", NativeMin, NativeMin+NumNativeBuckets-1)
	}
	// The engine's integer path agrees with it, at every bound and either
	// side of it, and clamps to the buckets kept.
	for i := range NumNativeBuckets {
		b := nativeUpper[i]
		for _, us := range []int64{b - 1, b, b + 1} {
			if us <= 0 {
				continue
			}
			want := min(max(NativeIndex(float64(us)/1e6)-NativeMin, 0), NumNativeBuckets-1)
			if got := nativeBucket(us); got != want {
				t.Errorf("nativeBucket(%d µs) = %d, want %d", us, got, want)
			}
		}
	}
	us := []int64{1 << 40, math.MaxInt64}
	for v := int64(1); v < 100_000; v++ {
		us = append(us, v)
	}
	for v := int64(100_000); v < 5_000_000_000; v = v*101/100 + 1 {
		us = append(us, v)
	}
	for _, us := range us {
		want := min(max(NativeIndex(float64(us)/1e6)-NativeMin, 0), NumNativeBuckets-1)
		if got := nativeBucket(us); got != want {
			t.Errorf("nativeBucket(%d µs) = %d, want %d", us, got, want)
		}
	}
	// Every latency lies within its bucket's bounds.
	for us := int64(1); us < 5_000_000_000; us = us*3/2 + 1 {
		v := float64(us) / 1e6
		k := NativeIndex(v)
		lo, hi := math.Exp2(float64(k-1)/8), math.Exp2(float64(k)/8)
		if v <= lo*(1-1e-12) || v > hi*(1+1e-12) {
			t.Errorf("%g s in bucket %d, (%g, %g]", v, k, lo, hi)
		}
	}
}
