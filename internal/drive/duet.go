package drive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/store"
)

// DuetOptions tune a duet of two plans (Duet).
type DuetOptions struct {
	Runs int
	// Dir receives run-N/A and run-N/B: each side's result.json and
	// server.log.
	Dir     string
	Workers int // event loops of each side's load (0: the runner's default)
	Warmup  time.Duration
	Version string
	// Seed is every run's, the same on both sides (0: one at random).
	Seed uint64
	// RunPoint, if set, runs one side instead of runner.Plan (a test's fake).
	RunPoint func(context.Context, *plan.Plan, runner.Options) (*result.Result, error)
	// OnRun, if set, hears of each run once both sides are done (a side
	// nil when it was not measured), from 1.
	OnRun func(run int, a, b *result.Result, errA, errB error)
}

// DuetRuns are the results of a duet's runs, side by side: A[i] and B[i]
// are run i+1's, nil where a side was not measured.
type DuetRuns struct {
	A, B []*result.Result
	Seed uint64
	// Interrupted is set when ctx ended a run: the runs before it are
	// whole, that one's partial results are on disk but not in A and B.
	Interrupted bool
}

// errOtherSide ends a side's run before its load when the other side ended
// before it was ready: a duet of one side is no duet.
var errOtherSide = errors.New("the other side of the duet ended before its load began")

// meeting is where a duet's two sides wait for each other once their
// servers are ready: the second to arrive sets the instant both schedules
// start, a little ahead, so that both engines are running by then.
type meeting struct {
	mu      sync.Mutex
	arrived int
	at      time.Time
	ready   chan struct{}
	gone    chan struct{}
	leave   sync.Once
}

// startAhead is how far ahead of the second arrival the schedules start.
const startAhead = 20 * time.Millisecond

func newMeeting() *meeting {
	return &meeting{ready: make(chan struct{}), gone: make(chan struct{})}
}

func (m *meeting) arrive(ctx context.Context) (time.Time, error) {
	m.mu.Lock()
	m.arrived++
	if m.arrived == 2 {
		m.at = time.Now().Add(startAhead)
		close(m.ready)
	}
	m.mu.Unlock()
	select {
	case <-m.ready:
		return m.at, nil
	default:
	}
	select {
	case <-m.ready:
		return m.at, nil
	case <-m.gone:
		return time.Time{}, errOtherSide
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// left is called by a side whose run ended: if it never arrived, the
// other stops waiting.
func (m *meeting) left() { m.leave.Do(func() { close(m.gone) }) }

// Duet runs the plans a and b at the same time, opts.Runs times: each run
// starts both plans' servers (as a run of each does), waits until both are
// ready, then sends both loads from this one process with the same seed,
// their schedules starting at the same instant. The interference of the
// machine then hits both sides alike, and the verdict
// (experiment.DuetOfSides) is on each run's ratio B/A (Bulej et al., Duet
// Benchmarking, ICPE 2020).
//
// A run in which a side failed (its server did not start, or exited) is
// kept on disk and left out (nil in DuetRuns). An error is returned when
// the first run, or two runs in a row, measured neither side (the next
// would fail alike), when every run failed, or when results could not be
// written.
func Duet(ctx context.Context, a, b *plan.Plan, opts DuetOptions) (*DuetRuns, error) {
	if opts.Runs < 1 {
		return nil, fmt.Errorf("a duet of %d runs", opts.Runs)
	}
	out := &DuetRuns{Seed: opts.Seed}
	if out.Seed == 0 {
		out.Seed = rand.Uint64()%1_000_000_000 + 1
	}
	run1 := runner.Plan
	if opts.RunPoint != nil {
		run1 = opts.RunPoint
	}
	var errs []error
	unmeasured := 0 // runs in a row that neither side measured
	for i := 1; i <= opts.Runs && ctx.Err() == nil; i++ {
		m := newMeeting()
		var wg sync.WaitGroup
		var res [2]*result.Result
		var err [2]error
		for s, p := range []*plan.Plan{a, b} {
			dir := filepath.Join(opts.Dir, fmt.Sprintf("run-%d", i), string(rune('A'+s)))
			if e := os.MkdirAll(dir, 0o755); e != nil {
				return out, e
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer m.left()
				ro := runner.Options{Dir: dir, Workers: opts.Workers, Warmup: opts.Warmup, Seed: out.Seed, Version: opts.Version, BeforeLoad: m.arrive}
				res[s], err[s] = run1(ctx, p, ro)
				if res[s] != nil {
					if werr := store.WriteResult(dir, res[s]); werr != nil && err[s] == nil {
						err[s] = werr
					}
				}
			}()
		}
		wg.Wait()
		if opts.OnRun != nil {
			opts.OnRun(i, res[0], res[1], err[0], err[1])
		}
		interrupted := ctx.Err() != nil
		for s := range res {
			if res[s] != nil && res[s].Summary.Interrupted {
				interrupted = true
			}
		}
		if interrupted {
			out.Interrupted = true
			break
		}
		if err[0] != nil || err[1] != nil {
			e := fmt.Errorf("run %d: %w", i, errors.Join(err[0], err[1]))
			if res[0] == nil && res[1] == nil {
				// Neither side sent load (a server did not start, say). In
				// the first run, or twice running, the next would do the
				// same: the duet ends with why.
				unmeasured++
				if i == 1 || unmeasured == 2 {
					return out, errors.Join(append(errs, e)...)
				}
			} else {
				unmeasured = 0
			}
			res = [2]*result.Result{}
			errs = append(errs, e)
		} else {
			unmeasured = 0
		}
		out.A, out.B = append(out.A, res[0]), append(out.B, res[1])
	}
	if len(errs) > 0 && len(errs) == len(out.A) {
		return out, errors.Join(errs...)
	}
	return out, nil
}
