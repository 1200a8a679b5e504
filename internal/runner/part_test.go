package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// TestStartWarning: a start later than LateStart after --start-at warns;
// an on-time one, or a run without --start-at, does not.
func TestStartWarning(t *testing.T) {
	at := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	if _, ok := startWarning(&result.Part{StartAt: &at, StartLatenessMS: 3}); ok {
		t.Error("3 ms late warns")
	}
	if _, ok := startWarning(&result.Part{StartLatenessMS: 500}); ok {
		t.Error("no --start-at warns")
	}
	w, ok := startWarning(&result.Part{StartAt: &at, StartLatenessMS: 120})
	if !ok || w.Code != "late_start" || !strings.Contains(w.Message, "120 ms after --start-at 2026-12-01T16:00:00Z") {
		t.Errorf("%+v %v", w, ok)
	}
}
