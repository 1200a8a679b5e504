package threshold

import (
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loadlab/loadlab/internal/metrics"
	"github.com/loadlab/loadlab/internal/result"
)

// Histograms are a run's histograms as thresholds read them. A nil
// histogram is one nothing was recorded in.
type Histograms interface {
	// Step is the histogram of the step at index i of Result.Steps for
	// metric Latency, ServiceTime (of one status class: "ok", "4xx", "5xx",
	// "timeout", "failed") or TTFB (class "").
	Step(i int, m Metric, class string) (*hdr.Histogram, error)
	// Connect is the histogram of connection times.
	Connect() (*hdr.Histogram, error)
	// TLS is the histogram of TLS handshake times.
	TLS() (*hdr.Histogram, error)
}

var (
	_ Histograms = Stored(nil)
	_ Histograms = Live(nil)
)

// Stored reads the histograms encoded in a result, as result.json holds
// them: for results read back, which have no others. Each is decoded when
// a threshold asks for it.
func Stored(r *result.Result) Histograms { return stored{r} }

type stored struct{ r *result.Result }

func (s stored) Step(i int, m Metric, class string) (*hdr.Histogram, error) {
	st := &s.r.Steps[i]
	where := fmt.Sprintf("%s of step %s/%s", m, st.Scenario, st.Name)
	encoded := st.Histograms.TTFB
	switch m {
	case TTFB:
	case ServiceTime:
		encoded, where = st.Histograms.Service[class], where+" ("+class+")"
	default:
		encoded, where = st.Histograms.Latency[class], where+" ("+class+")"
	}
	return decode(encoded, where)
}

func (s stored) Connect() (*hdr.Histogram, error) { return decode(s.r.Histograms.Connect, "connect") }

func (s stored) TLS() (*hdr.Histogram, error) { return decode(s.r.Histograms.TLS, "tls") }

func decode(encoded, what string) (*hdr.Histogram, error) {
	h, err := metrics.Decode(encoded)
	if err != nil {
		return nil, fmt.Errorf("cannot read the %s histogram: %w", what, err)
	}
	return h, nil
}

// Live reads the histograms of a run just made where the engine recorded
// them: totals is its merged recorder, whose steps are in the order of the
// result's. Nothing is encoded or decoded.
func Live(totals *metrics.Recorder) Histograms { return live{totals} }

type live struct{ totals *metrics.Recorder }

func (l live) Step(i int, m Metric, class string) (*hdr.Histogram, error) {
	st := &l.totals.Steps[i]
	if m == TTFB {
		return st.TTFB, nil
	}
	for c := range metrics.NumClasses {
		if c.String() != class {
			continue
		}
		if m == ServiceTime {
			return st.Service[c], nil
		}
		return st.Latency[c], nil
	}
	return nil, fmt.Errorf("no status class %q", class)
}

func (l live) Connect() (*hdr.Histogram, error) { return l.totals.Connect, nil }

func (l live) TLS() (*hdr.Histogram, error) { return l.totals.TLS, nil }
