package journey

import (
	"testing"

	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/failure"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
)

// metricsRecorder hands checks to a metrics.Recorder as the engine's VU
// does once the step's first failure is kept.
type metricsRecorder struct{ r *metrics.Recorder }

func (m metricsRecorder) Check(step, check int, passed bool) { m.r.Check(step, check, passed) }
func (m metricsRecorder) KeepsFailure(int) bool              { return false }
func (m metricsRecorder) CheckFailed(step, check int, _ string, _ *httpx.Exchange, _ error, _ failure.Sought) {
	m.r.CheckFailed(step, check, nil)
}

// BenchmarkAfterRecorded is BenchmarkAfter's step with its checks counted
// where the engine counts them, a metrics.Recorder sized for the step's
// checks: what counting them by name costs a response.
func BenchmarkAfterRecorded(b *testing.B) {
	f := newFixture(&testing.T{})
	c, _ := expr.NewCapture(expr.FromCSS, "input[name=authenticity_token]", "value")
	st := f.step(&Step{Path: f.tpl("/"),
		Checks:   []Check{StatusCheck([]Status{{Code: 200}}), ContainsCheck(f.tpl("order-number"))},
		Captures: []Capture{{Slot: f.token, Capture: c, Name: "token"}}})
	s := f.state(0, 0)
	page := []byte(`<html><body><p>order-number 12</p><form><input name="authenticity_token" value="Xk2f"></form></body></html>`)
	for _, bc := range []struct {
		name   string
		status int
		body   []byte
	}{{"pass", 200, page}, {"fail", 500, page}, {"capture finds nothing", 422, []byte("422 invalid authenticity token")}} {
		b.Run(bc.name, func(b *testing.B) {
			r := metrics.NewRecorder(st.ID + 1)
			r.CountChecks(append(make([]int, st.ID), len(st.CheckNames())+3))
			rec := metricsRecorder{r}
			x := httpx.Exchange{Status: bc.status, Header: []byte("Content-Type: text/html\r\n"), Body: bc.body}
			b.ReportAllocs()
			for b.Loop() {
				st.After(s, rec, &x)
			}
			if got := r.Steps[st.ID].Checks; got.Passed+got.Failed != int64(b.N)*3 {
				b.Fatalf("%+v checks after %d responses", got, b.N)
			}
		})
	}
}
