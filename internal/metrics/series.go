package metrics

import "github.com/loadlab/loadlab/internal/result"

// MaxPoints bounds the time series a run keeps, so that its memory does not
// grow with the length of the run: two hours at one point a second. When a
// longer run reaches the bound, neighbouring points are folded in pairs and
// every later point covers twice as many seconds (2 s, then 4 s, ...).
const MaxPoints = 7200

// series is a time series of per-second points folded to stay within
// MaxPoints. A folded point sums the counts of its seconds; its latency
// percentiles and maximum are the highest of its seconds' (a coarse point
// never hides a bad second); its Active is that of its last second.
type series struct {
	points []result.Point
	span   int // seconds per point: 1, 2, 4, ...
	fill   int // seconds already in the last point
}

func (s *series) add(p result.Point) {
	if s.span == 0 {
		s.span = 1
	}
	if n := len(s.points); n > 0 && s.fill < s.span {
		s.points[n-1] = fold(s.points[n-1], p)
		s.fill++
		return
	}
	s.points = append(s.points, p)
	s.fill = 1
	if len(s.points) > MaxPoints {
		s.halve()
	}
}

// halve folds the points in pairs and doubles the span.
func (s *series) halve() {
	n := len(s.points)
	lastPaired := n%2 == 0 // the partial last point joins a full one
	out := s.points[:0]
	for i := 0; i < n; i += 2 {
		p := s.points[i]
		if i+1 < n {
			p = fold(p, s.points[i+1])
		}
		out = append(out, p)
	}
	clear(s.points[len(out):])
	s.points = out
	if lastPaired {
		s.fill += s.span
	}
	s.span *= 2
}

// fold merges b, the later interval, into a.
func fold(a, b result.Point) result.Point {
	p := result.Point{
		T:          b.T,
		Len:        a.Len + b.Len,
		Requests:   a.Requests + b.Requests,
		Responses:  a.Responses + b.Responses,
		Errors:     a.Errors + b.Errors,
		P50:        max(a.P50, b.P50),
		P90:        max(a.P90, b.P90),
		P95:        max(a.P95, b.P95),
		P99:        max(a.P99, b.P99),
		Max:        max(a.Max, b.Max),
		Late:       a.Late + b.Late,
		Dropped:    a.Dropped + b.Dropped,
		Iterations: a.Iterations + b.Iterations,
		Active:     b.Active,
		Bytes:      a.Bytes + b.Bytes,
	}
	if p.Len > 0 {
		p.RPS = float64(p.Responses) / p.Len
	}
	if a.Hist != "" && b.Hist != "" {
		MergedPercentiles(&p, []string{a.Hist, b.Hist})
	}
	return p
}

// MergedPercentiles sets p's percentiles, maximum and Hist from the merge of
// the encoded histograms hists, exactly. When one of them cannot be decoded
// p is left as it was (its percentiles the bound the caller set).
func MergedPercentiles(p *result.Point, hists []string) {
	m := NewHistogram()
	for _, s := range hists {
		h, err := Decode(s)
		if err != nil {
			return
		}
		m.Merge(h)
	}
	enc, err := Encode(m)
	if err != nil || m.TotalCount() == 0 {
		return
	}
	p.P50 = ms(m.ValueAtQuantile(50))
	p.P90 = ms(m.ValueAtQuantile(90))
	p.P95 = ms(m.ValueAtQuantile(95))
	p.P99 = ms(m.ValueAtQuantile(99))
	p.Max = ms(m.Max())
	p.Hist = enc
}
