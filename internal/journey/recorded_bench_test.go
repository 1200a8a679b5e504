package journey

import (
	"testing"

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
	benchAfter(b, func(st *Step) (Recorder, func(b *testing.B)) {
		r := metrics.NewRecorder(st.ID + 1)
		r.CountChecks(append(make([]int, st.ID), len(st.CheckNames())+3))
		return metricsRecorder{r}, func(b *testing.B) {
			if got := r.Steps[st.ID].Checks; got.Passed+got.Failed != int64(b.N)*3 {
				b.Fatalf("%+v checks after %d responses", got, b.N)
			}
		}
	})
}
