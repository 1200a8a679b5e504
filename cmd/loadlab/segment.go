package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/runner"
	execseg "github.com/loadlab/loadlab/internal/segment"
)

// parseStartAt reads --start-at: an RFC 3339 instant, or +DURATION from
// now. An instant that is not after now is refused.
func parseStartAt(s string, now time.Time) (time.Time, error) {
	var at time.Time
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return time.Time{}, fmt.Errorf("--start-at %q: %w", s, err)
		}
		at = now.Add(d)
	} else {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("--start-at %q: want an RFC 3339 time (2026-12-01T16:00:00Z) or +DURATION (+30s): %w", s, err)
		}
		at = t
	}
	if !at.After(now) {
		return time.Time{}, fmt.Errorf("--start-at %s is in the past (it is now %s): every segment must be started before it", at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	return at, nil
}

// segmentOptions reads --segment and --start-at into the run's options,
// and checks that the plan's loads split into that many segments.
func segmentOptions(p *plan.Plan, f *quickFlags, opts *runner.Options) error {
	if f.segment != "" {
		seg, err := execseg.Parse(f.segment)
		if err != nil {
			return fmt.Errorf("run: --segment: %w", err)
		}
		if err := runner.SegmentsFit(p, seg); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		opts.Segment = seg
	}
	if f.startAt != "" {
		at, err := parseStartAt(f.startAt, time.Now())
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		opts.StartAt = at
	}
	return nil
}
