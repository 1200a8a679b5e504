package drive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/capacity"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/threshold"
)

// Steps makes a capacity search's steps: a *Stepper, which runs the plan,
// or a fake in tests of the search itself.
type Steps interface {
	Step(ctx context.Context, level float64, phase capacity.Phase, dir string) (capacity.Outcome, *result.Result, capacity.StepReport, error)
}

// SearchObserver hears a capacity search as it goes (the dashboard). A
// step kept is one resumed from the directory.
type SearchObserver interface {
	SearchStarted()
	StepStarted(index int, level float64, phase capacity.Phase)
	StepDone(r capacity.StepRecord, kept bool)
	// StepEnded follows every step made, kept in the document or not.
	StepEnded()
	SearchEnded()
}

// InputError is an error of what the user gave, no load sent for it: a
// directory that holds another search, a plan that a step finds invalid.
// cmd/loadlab exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Search is a capacity search with its directory: capacity.json, which
// keeps every step as it ends (so that an interrupted search resumes by
// replaying them through capacity.Next), steps/NNN/result.json, and, at
// the end, the reports.
type Search struct {
	Dir  string
	Doc  *capacity.Document
	Opts capacity.Options
	SLO  []*threshold.Threshold
	// Steps makes each step; MinStep is a step's least duration, for the
	// search's first log line.
	Steps   Steps
	MinStep time.Duration
	// Check, if set, refuses a step's level before it runs (the open-file
	// limit against its VUs): the search then fails, the steps made kept.
	Check func(index int, level float64) error
	// Log receives the search's lines: its plan, each step; nil: none.
	Log func(format string, args ...any)
	// Observer, if set, hears the steps.
	Observer SearchObserver
	// Results are each step's result once Run has found the answer (nil
	// for a step whose result cannot be read).
	Results []*result.Result
}

func (s *Search) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

// Resume takes the steps that Dir's capacity.json keeps of the same search;
// fresh starts over instead. A document of another search is an InputError.
func (s *Search) Resume(fresh bool) error {
	path := filepath.Join(s.Dir, capacity.File)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || fresh {
		return nil
	}
	if err != nil {
		return err
	}
	var kept capacity.Document
	if err := json.Unmarshal(data, &kept); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if kept.Schema != capacity.Schema || kept.Search != s.Doc.Search || strings.Join(kept.SLO, "\n") != strings.Join(s.Doc.SLO, "\n") {
		return &InputError{fmt.Errorf("capacity: %s holds a search with another plan, SLO or settings: give another --out, or --fresh to start over", s.Dir)}
	}
	s.Doc.Steps = kept.Steps
	return nil
}

// Save writes the document as it stands.
func (s *Search) Save() error {
	data, err := json.MarshalIndent(s.Doc, "", "  ")
	if err != nil {
		return err
	}
	return store.WriteFile(filepath.Join(s.Dir, capacity.File), append(data, '\n'))
}

func (s *Search) outcomes() []capacity.Outcome {
	out := make([]capacity.Outcome, len(s.Doc.Steps))
	for i, r := range s.Doc.Steps {
		out[i] = r.Outcome
	}
	return out
}

// Run makes the search's steps from where it stands to its answer, saving
// the document after each, then finishes it (the answer, the ranking of
// the steps) and writes capacity.json and its reports (report.html,
// report.md). The error wraps capacity.ErrInterrupted when ctx ended a
// step; the steps finished are kept, and running again resumes.
func (s *Search) Run(ctx context.Context) (capacity.Answer, error) {
	if s.Observer != nil {
		s.Observer.SearchStarted()
	}
	s.logf("capacity %s: %s", s.Doc.Name, s.Doc.Search.Plan(s.MinStep.Seconds()))
	if n := len(s.Doc.Steps); n > 0 {
		s.logf("resuming: %d steps kept in %s", n, s.Dir)
	}
	s.logf("step  phase        rate  throughput       p95   time  verdict")
	for _, r := range s.Doc.Steps {
		s.logf("%s", capacity.StepLine(r))
		if s.Observer != nil {
			s.Observer.StepDone(r, true)
		}
	}
	var answer capacity.Answer
	began := time.Now()
	for {
		d, err := capacity.Next(s.Opts, s.outcomes())
		if err != nil {
			return answer, &InputError{fmt.Errorf("capacity: %s: %w; give another --out, or --fresh", s.Dir, err)}
		}
		if d.Done {
			answer = d.Answer
			break
		}
		if len(s.Doc.Steps) >= s.Doc.Search.MaxSteps {
			return answer, fmt.Errorf("capacity: no answer after the %d steps stated", len(s.Doc.Steps)) // cannot happen: Next ends by then
		}
		index := len(s.Doc.Steps) + 1
		if s.Check != nil {
			if err := s.Check(index, d.Rate); err != nil {
				return answer, fmt.Errorf("capacity: %w; the finished steps are kept in %s", err, s.Dir)
			}
		}
		rel := filepath.Join("steps", fmt.Sprintf("%03d", index))
		stepDir := filepath.Join(s.Dir, rel)
		if err := os.MkdirAll(stepDir, 0o755); err != nil {
			return answer, fmt.Errorf("capacity: %w", err)
		}
		if s.Observer != nil {
			s.Observer.StepStarted(index, d.Rate, d.Phase)
		}
		o, res, rep, err := s.Steps.Step(ctx, d.Rate, d.Phase, stepDir)
		if s.Observer != nil {
			s.Observer.StepEnded()
		}
		if errors.Is(err, capacity.ErrInterrupted) {
			return answer, fmt.Errorf("capacity: %w in step %d; %d finished steps are kept in %s: run the same command again to resume", err, index, len(s.Doc.Steps), s.Dir)
		}
		if err != nil {
			var perr plan.Errors
			if errors.As(err, &perr) {
				return answer, &InputError{err}
			}
			return answer, fmt.Errorf("capacity: step %d at %s: %w", index, s.Opts.Unit(d.Rate), err)
		}
		resultPath := ""
		if res != nil {
			if err := store.WriteResult(stepDir, res); err != nil {
				return answer, fmt.Errorf("capacity: %w", err)
			}
			resultPath = filepath.ToSlash(filepath.Join(rel, store.ResultFile))
		}
		rec := capacity.Record(index, o, res, rep, resultPath)
		s.Doc.Steps = append(s.Doc.Steps, rec)
		if err := s.Save(); err != nil {
			return answer, fmt.Errorf("capacity: %w", err)
		}
		if s.Observer != nil {
			s.Observer.StepDone(rec, false)
		}
		s.logf("%s  [%d of at most %d, %s]", capacity.StepLine(rec), index, s.Doc.Search.MaxSteps, time.Since(began).Round(time.Second))
	}
	// Every step's result, for the ranking and the charts; one that cannot
	// be read leaves its step out of them.
	results := make([]*result.Result, len(s.Doc.Steps))
	for i, st := range s.Doc.Steps {
		if st.Result != "" {
			results[i], _ = store.ReadResult(filepath.Join(s.Dir, filepath.FromSlash(st.Result)))
		}
	}
	s.Doc.Finish(answer, results, s.SLO)
	if err := s.Save(); err != nil {
		return answer, fmt.Errorf("capacity: %w", err)
	}
	s.Results = results
	if err := report.WriteCapacityFiles(s.Dir, &report.Capacity{Doc: s.Doc, Results: results}); err != nil {
		return answer, fmt.Errorf("capacity: %w", err)
	}
	if s.Observer != nil {
		s.Observer.SearchEnded()
	}
	return answer, nil
}
