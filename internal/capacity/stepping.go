package capacity

import (
	"errors"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// DefaultStepMax is the longest a step runs when its figures do not settle.
const DefaultStepMax = 30 * time.Second

// Cooldown is how long the search waits after a step for the server to
// work off what was still queued in it: a second, and twice the p99
// latency of the step's last second (the time its queue took to cross),
// at most MaxCooldown. Without it a step that broke leaves a queue that
// the next one would inherit.
func Cooldown(points []result.Point) time.Duration {
	d := time.Second
	for i := len(points) - 1; i >= 0; i-- {
		if points[i].Responses > 0 {
			d += 2 * time.Duration(points[i].P99*float64(time.Millisecond))
			break
		}
	}
	return min(d, MaxCooldown)
}

// MaxCooldown bounds Cooldown.
const MaxCooldown = 30 * time.Second

// ErrInterrupted is a step cut short by its context (Ctrl-C): it is not
// kept, and the search resumes with it.
var ErrInterrupted = errors.New("interrupted")

// StepReport is how a step went, beyond its Outcome.
type StepReport struct {
	// Judgement is the last word of Judge on the step's series.
	Judgement Judgement
	// Early: the step ended before StepMax, steady, growing or failing.
	Early bool
}
