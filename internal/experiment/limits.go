package experiment

import (
	"fmt"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/runner"
)

// checkLimits tries every point's server.limits before the first run, so
// that a limit this machine cannot enforce stops the experiment before any
// load rather than failing each of its runs.
func checkLimits(load func(map[string]any) (*plan.Plan, error), points []Point) error {
	for _, pt := range points {
		p, err := load(pt.Params)
		if err != nil {
			return err
		}
		if err := runner.CheckLimits(p, pt.Params); err != nil {
			return fmt.Errorf("point %s: %w", pt.Key, err)
		}
	}
	return nil
}
