package shop

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// worker runs next in one of the shop's worker slots. A request waits for a
// free slot in arrival order (Go wakes blocked channel senders first in, first
// out), as it would in an app server's backlog, and gives up if its client
// goes away first. It also logs the request and turns a panic into a 500.
func (s *Shop) worker(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		select {
		case s.slots <- struct{}{}:
		case <-r.Context().Done():
			s.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "client left while queued",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Duration("queued", time.Since(arrived)))
			return
		}
		defer func() { <-s.slots }()
		s.enterWorker()
		defer s.busy.Add(-1)

		tw := &timedWriter{ResponseWriter: w, arrived: arrived, started: time.Now()}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { // net/http's way to abort a response quietly
					panic(v)
				}
				s.opts.Logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
					slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
				if tw.status == 0 {
					http.Error(tw, "500 internal server error", http.StatusInternalServerError)
				}
			}
			s.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", tw.status), slog.Int64("bytes", tw.bytes),
				slog.Duration("queued", tw.started.Sub(arrived)), slog.Duration("took", time.Since(tw.started)))
		}()
		next.ServeHTTP(tw, r)
	})
}

// enterWorker counts a request that took a slot and keeps the peak.
func (s *Shop) enterWorker() {
	n := s.busy.Add(1)
	for {
		peak := s.peak.Load()
		if n <= peak || s.peak.CompareAndSwap(peak, n) {
			return
		}
	}
}

// timedWriter records the status and size of a response and, when its
// header is written, adds a Server-Timing header with the time queued for a
// worker and the time spent in it so far (the shop's handlers write their
// whole body at once, so that is nearly all of it).
type timedWriter struct {
	http.ResponseWriter
	arrived, started time.Time
	status           int
	bytes            int64
}

func (w *timedWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.Header().Set("Server-Timing", fmt.Sprintf("queue;dur=%.3f, app;dur=%.3f",
		milliseconds(w.started.Sub(w.arrived)), milliseconds(time.Since(w.started))))
	w.ResponseWriter.WriteHeader(status)
}

func (w *timedWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
