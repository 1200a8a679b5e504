package capacity

import (
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// series makes per-second points at rate arrivals a second: responses,
// median latency and requests in flight for each second from the given
// functions of the second's index.
func series(n int, responses func(i int) int64, p50 func(i int) float64, active func(i int) int64) []result.Point {
	var pts []result.Point
	for i := range n {
		r := responses(i)
		pts = append(pts, result.Point{T: float64(i + 1), Len: 1, Requests: r, Responses: r, RPS: float64(r), P50: p50(i), Active: active(i), Iterations: r})
	}
	return pts
}

func constant[T any](v T) func(int) T { return func(int) T { return v } }

func TestJudge(t *testing.T) {
	noisy := []float64{10.2, 11.9, 10.1, 12.4, 10.6, 11.1, 10.4}
	for _, tc := range []struct {
		name   string
		points []result.Point
		rate   float64
		state  State
		reason string // a part of the reason
	}{
		{"too short", series(5, constant[int64](400), constant(10.0), constant[int64](4)), 400, Unsettled, ""},
		{"steady", series(6, constant[int64](400), constant(10.0), constant[int64](4)), 400, Steady, "steady: 400/s"},
		{"steady with noise", series(7, func(i int) int64 { return 395 + int64(i%3)*5 }, func(i int) float64 { return noisy[i] }, func(i int) int64 { return int64(3 + i%3) }), 400, Steady, "steady"},
		// 2% over a capacity of 400/s: 8 more requests queue every second.
		{"a queue grows", series(7, constant[int64](400), func(i int) float64 { return 10 + 20*float64(i) }, func(i int) int64 { return 4 + 8*int64(i) }), 408, Growing, "median latency rose from 50 to 130 ms"},
		{"in flight grows, latency flat", series(7, constant[int64](400), constant(10.0), func(i int) int64 { return 4 + 8*int64(i) }), 400, Growing, "requests in flight rose from 20 to 52"},
		{"a small drift is no queue", series(7, constant[int64](400), func(i int) float64 { return 10 + 0.2*float64(i) }, constant[int64](4)), 400, Steady, "steady"},
		{"falling behind", series(7, constant[int64](300), constant(10.0), constant[int64](4)), 400, Growing, "throughput 300/s in the last 5 s, under 90% of the offered 400/s"},
		{"between", series(7, constant[int64](370), constant(10.0), constant[int64](4)), 400, Unsettled, ""},
		// A closed load (rate 0): no offered rate to keep up with.
		{"closed, steady", series(7, constant[int64](120), func(i int) float64 { return noisy[i] }, constant[int64](8)), 0, Steady, "steady: 120/s"},
		{"closed, latency rises", series(7, func(i int) int64 { return 120 - 10*int64(i) }, func(i int) float64 { return 10 + 10*float64(i) }, constant[int64](8)), 0, Growing, "median latency rose"},
		{"the first second is left out", append(series(1, constant[int64](10), constant(500.0), constant[int64](90)), series(5, constant[int64](400), constant(10.0), constant[int64](4))...), 400, Steady, "steady"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(tc.points, tc.rate, Steadiness{})
			if j.State != tc.state || !strings.Contains(j.Reason, tc.reason) {
				t.Errorf("Judge: %v %q, want %v with %q", j.State, j.Reason, tc.state, tc.reason)
			}
		})
	}

	dropping := series(7, constant[int64](400), constant(10.0), constant[int64](100))
	for i := range dropping {
		dropping[i].Dropped = 20
	}
	if j := Judge(dropping, 420, Steadiness{}); j.State != Growing || !strings.Contains(j.Reason, "100 of 2100 arrivals dropped") {
		t.Errorf("dropping: %v %q", j.State, j.Reason)
	}
	failing := series(7, constant[int64](400), constant(1.0), constant[int64](1))
	for i := range failing {
		failing[i].Errors = 300
	}
	if j := Judge(failing, 400, Steadiness{}); j.State != Failing || !strings.Contains(j.Reason, "errors exploded: 1500 of 2000") {
		t.Errorf("failing: %v %q", j.State, j.Reason)
	}
	short := series(7, constant[int64](400), constant(10.0), constant[int64](4))
	short[6].Len = 0.4 // the last, short interval is not judged
	short[6].Responses = 0
	if j := Judge(short, 400, Steadiness{}); j.State != Steady {
		t.Errorf("a short last interval: %v %q", j.State, j.Reason)
	}
}

// TestJudgeFewInFlight: 4 requests in flight becoming 6 is noise, not a
// queue (seen at 95 of 100/s on a busy machine).
func TestJudgeFewInFlight(t *testing.T) {
	active := []int64{4, 4, 4, 5, 5, 6, 6}
	pts := series(7, constant[int64](95), constant(40.0), func(i int) int64 { return active[i] })
	if j := Judge(pts, 95.63, Steadiness{}); j.State != Steady {
		t.Errorf("Judge: %v %q, want steady", j.State, j.Reason)
	}
}

// TestJudgeJourneysOfManyRequests: the offered rate is in journeys and the
// series in requests. A five-request journey at 20/s is 100 requests a
// second: serving 50 is behind (it had read as 2.5 times the offered 20, and
// "behind" never fired), 100 is steady, and 4 dropped of 24 arrivals a
// second is over 1%.
func TestJudgeJourneysOfManyRequests(t *testing.T) {
	o := Steadiness{PerJourney: 5}
	if j := Judge(series(7, constant[int64](50), constant(40.0), constant[int64](4)), 20, o); j.State != Growing || !strings.Contains(j.Reason, "the offered 100 requests/s (20 journeys/s × 5 requests each)") {
		t.Errorf("half the requests: %v %q, want growing, behind", j.State, j.Reason)
	}
	if j := Judge(series(7, constant[int64](100), constant(40.0), constant[int64](4)), 20, o); j.State != Steady {
		t.Errorf("all of them: %v %q, want steady", j.State, j.Reason)
	}
	pts := series(7, constant[int64](100), constant(40.0), constant[int64](4))
	for i := range pts {
		pts[i].Dropped = 1 // 1 of 21 journeys a second: over 1%
	}
	if j := Judge(pts, 20, o); j.State != Growing || !strings.Contains(j.Reason, "5 of 105 arrivals dropped") {
		t.Errorf("dropped: %v %q, want growing, 5 of 105 arrivals dropped", j.State, j.Reason)
	}
}

// TestJudgeWaitsForWholeJourneys: journeys of five requests with pauses
// between them, at 20/s, take 8 s; until the first completes the later
// steps' requests have not begun, so requests a second and in flight ramp
// up. That is not a server falling behind: unsettled, then steady once
// the window is past the first completed journey.
func TestJudgeWaitsForWholeJourneys(t *testing.T) {
	o := Steadiness{PerJourney: 5}
	var pts []result.Point
	for i := range 16 {
		steps := min(i/2+1, 5) // a step starts every 2 s of a journey
		p := result.Point{T: float64(i + 1), Len: 1, Requests: int64(20 * steps), Responses: int64(20 * steps), P50: 40, Active: int64(2 * steps)}
		if i >= 8 {
			p.Iterations = 20
		}
		pts = append(pts, p)
	}
	if j := Judge(pts[:8], 20, o); j.State != Unsettled {
		t.Errorf("before any journey completed: %v %q, want unsettled", j.State, j.Reason)
	}
	if j := Judge(pts[:12], 20, o); j.State != Unsettled {
		t.Errorf("3 s after: %v %q, want unsettled", j.State, j.Reason)
	}
	if j := Judge(pts, 20, o); j.State != Steady {
		t.Errorf("a whole window after: %v %q, want steady", j.State, j.Reason)
	}
	// Every request failing: no journey completes, and the step fails.
	for i := range pts {
		pts[i].Errors, pts[i].Iterations = pts[i].Requests, 0
	}
	if j := Judge(pts, 20, o); j.State != Failing {
		t.Errorf("all failing: %v %q, want failing", j.State, j.Reason)
	}
}

// TestStepSizedByPercentile: a step at 16/s is steady after 6 s, when its
// p99 would rest on 80 responses; judged by p99 it runs on until it has
// the 100 that ResponsesFor asks, and a p95 needs only 20.
func TestStepSizedByPercentile(t *testing.T) {
	t.Parallel()
	for pct, want := range map[float64]int64{99: 100, 99.9: 1000, 95: 20, 50: 20, 0: 20} {
		if got := ResponsesFor(pct); got != want {
			t.Errorf("ResponsesFor(%g) = %d, want %d", pct, got, want)
		}
	}
	p99 := Steadiness{MinResponses: ResponsesFor(99)}
	for n, want := range map[int]State{6: Unsettled, 7: Unsettled, 8: Steady} {
		// Skip leaves the first second out: n-1 seconds of 16 responses.
		pts := series(n, constant[int64](16), constant(10.0), constant[int64](1))
		if got := Judge(pts, 16, p99).State; got != want {
			t.Errorf("p99, %d s at 16/s (%d responses judged): %v, want %v", n, 16*(n-1), got, want)
		}
		if got := Judge(pts, 16, Steadiness{MinResponses: ResponsesFor(95)}).State; got != Steady {
			t.Errorf("p95, %d s at 16/s: %v, want steady", n, got)
		}
	}
}
