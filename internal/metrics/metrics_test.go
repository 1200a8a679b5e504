package metrics

import (
	"runtime"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
)

func sample(i int) *Sample {
	s := &Sample{Step: i % 3, Status: 200, Latency: time.Duration(i%5000) * time.Microsecond, Service: time.Millisecond, TTFB: time.Millisecond, Bytes: 100}
	switch i % 50 {
	case 0:
		s.Status = 503
	case 1:
		s.Status, s.Failure = 0, httpx.ClassTimeout
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
	if s.ThroughputRPS != 500 || s.ErrorRate != 0.04 {
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
			s = &Sample{Failure: httpx.ClassTimeout, Latency: 30 * time.Second, Service: 30 * time.Second}
		}
		if i%25 == 1 {
			s = &Sample{Failure: httpx.ClassConnect, Latency: 100 * time.Microsecond}
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
