package drive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/loadlab/loadlab/internal/capacity"
	"github.com/loadlab/loadlab/internal/result"
)

// server is a fake step maker: a server that holds every rate up to most,
// its steps counted; interruptAt, when set, is the step it is interrupted
// in (the user's Ctrl-C).
type server struct {
	most        float64
	made        []float64
	interruptAt int
}

func (s *server) Step(ctx context.Context, level float64, phase capacity.Phase, dir string) (capacity.Outcome, *result.Result, capacity.StepReport, error) {
	s.made = append(s.made, level)
	if s.interruptAt == len(s.made) {
		return capacity.Outcome{}, nil, capacity.StepReport{}, capacity.ErrInterrupted
	}
	o := capacity.Outcome{Rate: level, Phase: phase, Holds: level <= s.most}
	if !o.Holds {
		o.Clause = "p95(latency) < 100ms (p95 latency: 250 ms)"
	}
	res := &result.Result{Schema: result.SchemaResult, Summary: result.Summary{ThroughputRPS: min(level, s.most), Requests: int64(10 * level), Responses: int64(10 * level)}}
	return o, res, capacity.StepReport{}, nil
}

func newSearch(t *testing.T, dir string, steps Steps) *Search {
	t.Helper()
	opts, err := capacity.Options{Start: 10, Precision: 0.05, Confirm: 1}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	doc := &capacity.Document{Schema: capacity.Schema, Name: "fake", SLO: []string{"p95(latency) < 100ms"},
		Search: capacity.Settings{By: "rate", Start: opts.Start, Factor: opts.Factor, Precision: opts.Precision, Confirm: opts.Confirm, StepMaxS: 30, MaxSteps: opts.MaxSteps(), Fingerprint: "f"},
		Steps:  []capacity.StepRecord{}}
	return &Search{Dir: dir, Doc: doc, Opts: opts, Steps: steps}
}

// TestSearchResumes: a search interrupted in its fifth step keeps the four
// it finished in capacity.json; run again, it replays them through
// capacity.Next, makes only the steps left, and reaches the answer of a
// search never interrupted, in the same steps.
func TestSearchResumes(t *testing.T) {
	t.Parallel()
	whole := &server{most: 187}
	ws := newSearch(t, t.TempDir(), whole)
	want, err := ws.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want.Rate <= 0 || want.Rate > 187 || len(whole.made) < 6 {
		t.Fatalf("whole search: answer %+v after %v", want, whole.made)
	}

	dir := t.TempDir()
	cut := &server{most: 187, interruptAt: 5}
	_, err = newSearch(t, dir, cut).Run(context.Background())
	if !errors.Is(err, capacity.ErrInterrupted) {
		t.Fatalf("interrupted: %v", err)
	}
	again := &server{most: 187}
	rs := newSearch(t, dir, again)
	if err := rs.Resume(false); err != nil {
		t.Fatal(err)
	}
	if len(rs.Doc.Steps) != 4 {
		t.Fatalf("resumed with %d steps kept, want the 4 finished", len(rs.Doc.Steps))
	}
	got, err := rs.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != want.Rate || fmt.Sprint(append(cut.made[:4:4], again.made...)) != fmt.Sprint(whole.made) {
		t.Errorf("resumed: answer %v after %v then %v; whole: %v after %v", got.Rate, cut.made[:4], again.made, want.Rate, whole.made)
	}
	for _, f := range []string{capacity.File, "report.html", "report.md", filepath.Join("steps", "001", "result.json")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if len(rs.Results) != len(rs.Doc.Steps) || rs.Results[0] == nil {
		t.Errorf("results %d for %d steps", len(rs.Results), len(rs.Doc.Steps))
	}
}

// TestSearchRefusesAnotherSearch: a directory whose capacity.json holds a
// search with other settings is an InputError (exit 2), unless fresh.
func TestSearchRefusesAnotherSearch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := newSearch(t, dir, &server{most: 50}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := newSearch(t, dir, &server{most: 50})
	other.Doc.Search.Precision = 0.1
	var ie *InputError
	if err := other.Resume(false); !errors.As(err, &ie) {
		t.Errorf("another search's directory: %v, want an InputError", err)
	}
	if err := other.Resume(true); err != nil || len(other.Doc.Steps) != 0 {
		t.Errorf("fresh: %v, %d steps", err, len(other.Doc.Steps))
	}
}
