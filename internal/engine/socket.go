package engine

import (
	"time"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/metrics"
)

// SocketStep is a step that opens a socket of its own and talks over it for
// a while: a WebSocket step. Run is called on a goroutine of its own while
// the VU waits; it may use the VU's State (nothing else touches it then)
// but not the VU's recording methods, which belong to the loop. It returns
// Record, which the loop then runs with the VU: it records samples and
// checks, and says whether the iteration goes on. Run must end by itself:
// every read and write it does has a deadline.
type SocketStep struct {
	Run func(v *VU) (record func(v *VU) bool)
}

// Record records one sample of a step, as an exchange's would be: for a
// socket step's Record.
func (v *VU) Record(step, status int, failure httpx.Failure, err error, latency, connect time.Duration, bytes int64) {
	s := &v.w.sample
	*s = metrics.Sample{Step: step, Status: status, Failure: failure, Err: err, Latency: latency, Service: latency, Connect: connect, Bytes: bytes}
	v.w.rec.Record(s)
}

// runSocket runs a socket step off the loop and picks the iteration up
// where it left off when the step is done.
func (v *VU) runSocket(st *SocketStep) {
	w := v.w
	w.inflight++
	go func() {
		record := st.Run(v)
		w.loop.Post(func() {
			w.inflight--
			ok := record == nil || record(v)
			v.step++
			if !ok {
				w.iterationDone(v, false)
				return
			}
			v.due = w.loop.Now()
			v.next()
		})
	}()
}
