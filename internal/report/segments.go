package report

import (
	"fmt"
	"strings"

	"github.com/loadlab/loadlab/internal/result"
)

// PartNote says which execution segments a result holds and how they
// started ("segment 2 of 4 of the plan, started 0.3 ms after --start-at
// 2026-12-01T16:00:00Z"; "merged: segments 1, 2, 3, 4 of 4 ..."), or ""
// for a run of the whole plan without --start-at.
func PartNote(r *result.Result) string {
	p := r.Part
	if p == nil {
		return ""
	}
	ks := make([]string, len(p.Segments))
	for i, k := range p.Segments {
		ks[i] = fmt.Sprint(k)
	}
	var b strings.Builder
	switch {
	case len(p.Parts) > 0:
		fmt.Fprintf(&b, "merged from %d parts: segments %s of %d", len(p.Parts), strings.Join(ks, ", "), p.N)
	case p.N > 1:
		fmt.Fprintf(&b, "segment %s of %d of the plan", strings.Join(ks, ", "), p.N)
	default:
		b.WriteString("the whole plan")
	}
	if p.StartAt != nil && len(p.Parts) > 0 {
		fmt.Fprintf(&b, ", each started at most %.1f ms after --start-at %s", p.StartLatenessMS, p.StartAt.Format("2006-01-02T15:04:05.999Z07:00"))
	} else if p.StartAt != nil {
		fmt.Fprintf(&b, ", started %.1f ms after --start-at %s", p.StartLatenessMS, p.StartAt.Format("2006-01-02T15:04:05.999Z07:00"))
	} else if len(p.Parts) > 0 {
		fmt.Fprintf(&b, ", the latest start %.1f ms late", p.StartLatenessMS)
	}
	if p.ClockOffset != "" {
		fmt.Fprintf(&b, "; clock offset: %s", p.ClockOffset)
	}
	return b.String()
}
