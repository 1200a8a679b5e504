package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

func TestPartNote(t *testing.T) {
	at := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		p    *result.Part
		want string
	}{
		{nil, ""},
		{&result.Part{Segments: []int{2}, N: 4, StartAt: &at, StartLatenessMS: 0.31, ClockOffset: result.NoClockOffset}, "segment 2 of 4 of the plan, started 0.3 ms after --start-at 2026-12-01T16:00:00Z; clock offset: none estimated"},
		{&result.Part{Segments: []int{1, 2, 3}, N: 3, StartLatenessMS: 2, ClockOffset: result.NoClockOffset, Parts: make([]result.PartSummary, 3)}, "merged from 3 parts: segments 1, 2, 3 of 3, the latest start 2.0 ms late; clock offset: none estimated"},
	} {
		if got := PartNote(&result.Result{Part: c.p}); got != c.want {
			t.Errorf("PartNote = %q, want %q", got, c.want)
		}
	}
	var b bytes.Buffer
	r := &result.Result{Schema: result.SchemaResult, Part: &result.Part{Segments: []int{1}, N: 2}}
	if err := Text(&b, r); err != nil || !strings.Contains(b.String(), "segment 1 of 2 of the plan") {
		t.Errorf("text report %v:\n%s", err, b.String())
	}
	b.Reset()
	if err := HTML(&b, r); err != nil || !strings.Contains(b.String(), "segment 1 of 2 of the plan") {
		t.Errorf("HTML report %v", err)
	}
}
