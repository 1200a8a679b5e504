package metrics

import (
	"fmt"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loadlab/loadlab/internal/result"
)

// Percentiles summarizes a histogram of microseconds in milliseconds.
func Percentiles(h *hdr.Histogram) result.Percentiles {
	if h == nil || h.TotalCount() == 0 {
		return result.Percentiles{}
	}
	return result.Percentiles{
		Count: h.TotalCount(),
		Min:   ms(h.Min()),
		Mean:  h.Mean() / 1000,
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P95:   ms(h.ValueAtQuantile(95)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

// merged returns the merge of the non-nil histograms of the given classes.
func merged(hs []*hdr.Histogram) *hdr.Histogram {
	out := NewHistogram()
	for _, h := range hs {
		if h != nil {
			out.Merge(h)
		}
	}
	return out
}

// responses picks a step's histograms of the classes that count in latency:
// every response, and every request that timed out.
func responses(hs *[NumClasses]*hdr.Histogram) []*hdr.Histogram {
	return []*hdr.Histogram{hs[ClassOK], hs[Class4xx], hs[Class5xx], hs[ClassTimeout]}
}

// Summarize computes the figures of a set of steps measured over elapsed.
// Latency and service time cover every response, whatever its status, and
// every timeout (at the time the request gave up: a lower bound of what it
// would have taken); other failures (refused, reset) are not latencies and
// are counted in Errors only. TTFB covers responses.
func Summarize(r *Recorder, steps []int, elapsed time.Duration) result.Summary {
	var lat, svc, ttfb, conn, hand []*hdr.Histogram
	s := result.Summary{Schema: result.SchemaSummary, Resolution: Resolution}
	for _, i := range steps {
		st := &r.Steps[i]
		lat = append(lat, responses(&st.Latency)...)
		svc = append(svc, responses(&st.Service)...)
		ttfb = append(ttfb, st.TTFB)
		conn, hand = append(conn, st.Connect), append(hand, st.TLS)
		s.TLSResumed += st.Resumed
		for _, c := range st.Statuses {
			if s.Status == nil {
				s.Status = map[int]int64{}
			}
			s.Status[c.Code] += c.N
		}
		for c := range NumClasses {
			s.Requests += st.Count[c]
		}
		s.Responses += st.Count[ClassOK] + st.Count[Class4xx] + st.Count[Class5xx]
		s.Errors.Status4xx += st.Count[Class4xx]
		s.Errors.Status5xx += st.Count[Class5xx]
		s.Errors.Connect += st.Failures[result.FailureConnect]
		s.Errors.Timeout += st.Failures[result.FailureTimeout]
		s.Errors.Reset += st.Failures[result.FailureReset]
		s.Errors.Protocol += st.Failures[result.FailureProtocol]
		s.Errors.TLS += st.Failures[result.FailureTLS]
		s.Errors.Stream += st.Failures[result.FailureStream]
		s.Errors.Goaway += st.Failures[result.FailureGoaway]
		for i, code := range st.FirstStatus {
			name := [2]string{"status_4xx", "status_5xx"}[i]
			if code == 0 || s.Errors.Examples[name] != "" {
				continue
			}
			if s.Errors.Examples == nil {
				s.Errors.Examples = map[string]string{}
			}
			// The server's own words: "413 Request Entity Too Large" is Go's.
			s.Errors.Examples[name] = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", code, st.FirstReason[i]))
		}
		for c, msg := range st.Example {
			if msg == "" {
				continue
			}
			if s.Errors.Examples == nil {
				s.Errors.Examples = map[string]string{}
			}
			if _, ok := s.Errors.Examples[result.Failure(c).String()]; !ok {
				s.Errors.Examples[result.Failure(c).String()] = msg
			}
		}
		s.BytesReceived += st.Bytes
		if st.Decoded > 0 {
			s.BytesDecoded += st.Bytes - st.CodedBytes + st.DecodedBytes
			s.Decoded += st.Decoded
		}
		s.Checks.Passed += st.Checks.Passed
		s.Checks.Failed += st.Checks.Failed
	}
	e := &s.Errors
	e.Total = e.Connect + e.Timeout + e.Reset + e.Protocol + e.TLS + e.Stream + e.Goaway + e.Status4xx + e.Status5xx
	s.DurationS = elapsed.Seconds()
	if s.DurationS > 0 {
		// What the server answered, of any status: a request that got no
		// response (refused, reset, timed out) is an error, not throughput,
		// or a server that refuses connections quickly would look fast.
		s.ThroughputRPS = float64(s.Responses) / s.DurationS
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(e.Total) / float64(s.Requests)
	}
	s.Latency = Percentiles(merged(lat))
	s.Service = Percentiles(merged(svc))
	s.TTFB = Percentiles(merged(ttfb))
	if h := merged(conn); h.TotalCount() > 0 {
		c := Percentiles(h)
		s.Connect = &c
	}
	if h := merged(hand); h.TotalCount() > 0 {
		c := Percentiles(h)
		s.TLS = &c
	}
	return s
}

// RunSummary is Summarize over every step, plus the run-wide figures.
func RunSummary(r *Recorder, elapsed time.Duration) result.Summary {
	all := make([]int, len(r.Steps))
	for i := range all {
		all[i] = i
	}
	s := Summarize(r, all, elapsed)
	if r.Connect.TotalCount() > 0 {
		c := Percentiles(r.Connect)
		s.Connect = &c
	}
	s.Late = result.Late{Count: r.Counters.Late}
	if r.Lateness.TotalCount() > 0 {
		s.Late.P50 = ms(r.Lateness.ValueAtQuantile(50))
		s.Late.P99 = ms(r.Lateness.ValueAtQuantile(99))
		s.Late.Max = ms(r.Lateness.Max())
	}
	s.Late.Waited = r.Counters.Waited
	s.Unsent = r.Counters.Unsent
	s.Iterations = r.Counters.Iterations
	s.Aborted = r.Counters.Aborted
	s.Dropped = r.Counters.Dropped
	return s
}

// Window sets s's window figures: the load's own window (at most the
// elapsed time), the drain after it, and the responses that finished within
// it, over which throughput is counted, as wrk counts it: a journey that
// overran the load's end into the grace period adds its latency, not
// requests per second.
func Window(s *result.Summary, window time.Duration, responses int64) {
	elapsed := s.DurationS
	w := min(window.Seconds(), elapsed)
	if w <= 0 {
		return
	}
	s.WindowS, s.WindowResponses = w, min(responses, s.Responses)
	if drain := elapsed - w; drain > 0 {
		s.DrainS = drain
	}
	s.ThroughputRPS = float64(s.WindowResponses) / w
}

// Encode returns h in HdrHistogram's V2 compressed base64 encoding, or "" for
// an empty or missing histogram.
func Encode(h *hdr.Histogram) (string, error) {
	if h == nil || h.TotalCount() == 0 {
		return "", nil
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// Decode reads a histogram written by Encode.
func Decode(s string) (*hdr.Histogram, error) {
	if s == "" {
		return NewHistogram(), nil
	}
	h, err := hdr.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// StepHistograms encodes a step's histograms for result.json.
func StepHistograms(st *StepTotals) (result.StepHistograms, error) {
	var out result.StepHistograms
	for c := range NumClasses {
		if st.Latency[c] == nil || st.Latency[c].TotalCount() == 0 {
			continue
		}
		lat, err := Encode(st.Latency[c])
		if err != nil {
			return out, err
		}
		svc, err := Encode(st.Service[c])
		if err != nil {
			return out, err
		}
		if out.Latency == nil {
			out.Latency, out.Service = map[string]string{}, map[string]string{}
		}
		out.Latency[c.String()], out.Service[c.String()] = lat, svc
	}
	ttfb, err := Encode(st.TTFB)
	out.TTFB = ttfb
	return out, err
}
