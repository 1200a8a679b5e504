package history

import (
	"fmt"
	"slices"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/stats"
)

// SchemaTrend is the version of `loadlab history --json`.
const SchemaTrend = "loadlab.history/v1"

// Trend is one figure of a plan's runs across commits, and where it changed.
type Trend struct {
	Schema string `json:"schema"`
	Plan   string `json:"plan"`
	Point  string `json:"point,omitempty"`
	Figure string `json:"figure"`
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	// HigherBetter says which way is an improvement.
	HigherBetter bool `json:"higher_better"`
	// Commits are the runs grouped by the commit they ran at, in the order
	// the runs ended; repeats at one commit are one group, with their spread.
	Commits []CommitRuns `json:"commits"`
	// Changes are where the figure's distribution shifted.
	Changes []Change `json:"changes,omitempty"`
	// Method names the change-point method and its settings.
	Method string `json:"method"`
	// Skipped counts runs without the figure (failed, or no server watched).
	Skipped int `json:"skipped,omitempty"`
}

// CommitRuns are the runs at one commit.
type CommitRuns struct {
	Commit   string    `json:"commit,omitempty"`
	Branch   string    `json:"branch,omitempty"`
	Dirty    bool      `json:"dirty,omitempty"`
	PlanHash string    `json:"plan_hash"`
	Time     time.Time `json:"time"` // the first run's end
	Values   []float64 `json:"values"`
	Median   float64   `json:"median"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
	// Paths are the runs' result directories, where written.
	Paths []string `json:"paths,omitempty"`
	// PlanChanged: the plan's fingerprint differs from the group before:
	// the plan itself changed here, not only the code.
	PlanChanged bool `json:"plan_changed,omitempty"`
}

// Change is a shift of the figure, at the first commit of the new level.
type Change struct {
	At     int     `json:"at"` // index into Commits
	Commit string  `json:"commit,omitempty"`
	Before float64 `json:"before"` // the medians of the runs either side
	After  float64 `json:"after"`
	// Delta is After against Before, relative (0.31 for +31%).
	Delta float64 `json:"delta"`
	P     float64 `json:"p"`
	// Worse says the change goes the bad way for this figure.
	Worse bool `json:"worse"`
}

// ErrNoRuns is a trend asked of no runs.
var ErrNoRuns = fmt.Errorf("no runs")

// TrendOf is figure's trend over recs (one plan's, oldest first) at point
// ("" for plain runs). Change points are found by E-divisive means on the
// runs' values in the order they ran (stats.ChangePoints), with its
// defaults: at least 3 runs each side, p ≤ 0.05 by 199 permutations.
func TrendOf(recs []Record, figure, point string) (*Trend, error) {
	var fig *experiment.FigureInfo
	var known []string
	for _, f := range experiment.Figures() {
		known = append(known, string(f.ID))
		if string(f.ID) == figure {
			fig = &f
		}
	}
	if fig == nil {
		return nil, fmt.Errorf("no figure %q: the figures are %v", figure, known)
	}
	t := &Trend{Schema: SchemaTrend, Figure: figure, Name: fig.Name, Unit: fig.Unit, HigherBetter: fig.HigherBetter, Point: point,
		Method: "E-divisive means (Matteson & James 2014): at least 3 runs each side, p <= 0.05 by 199 permutations"}
	var values []float64
	var group []int // values' commit group
	for _, r := range recs {
		if r.Point != point {
			continue
		}
		t.Plan = r.Plan
		v, ok := 0.0, false
		if r.Status == "done" && r.Result != nil {
			v, ok = fig.Of(r.Result)
		}
		if !ok {
			t.Skipped++
			continue
		}
		n := len(t.Commits)
		if n == 0 || r.Commit == "" || t.Commits[n-1].Commit != r.Commit || t.Commits[n-1].Dirty != r.Dirty || t.Commits[n-1].PlanHash != r.PlanHash {
			t.Commits = append(t.Commits, CommitRuns{Commit: r.Commit, Branch: r.Branch, Dirty: r.Dirty, PlanHash: r.PlanHash, Time: r.Time,
				PlanChanged: n > 0 && t.Commits[n-1].PlanHash != r.PlanHash})
			n++
		}
		c := &t.Commits[n-1]
		c.Values = append(c.Values, v)
		if r.Path != "" {
			c.Paths = append(c.Paths, r.Path)
		}
		values = append(values, v)
		group = append(group, n-1)
	}
	if len(values) == 0 {
		return t, ErrNoRuns
	}
	for i := range t.Commits {
		c := &t.Commits[i]
		c.Median = stats.Summarize(c.Values, 0).Center
		c.Min, c.Max = slices.Min(c.Values), slices.Max(c.Values)
	}
	for _, cp := range stats.ChangePoints(values, stats.ChangePointOptions{}) {
		g := group[cp.Index]
		ch := Change{At: g, Commit: t.Commits[g].Commit, Before: cp.Before, After: cp.After, P: cp.P}
		if cp.Before != 0 {
			ch.Delta = (cp.After - cp.Before) / cp.Before
		}
		ch.Worse = (cp.After < cp.Before) == fig.HigherBetter
		t.Changes = append(t.Changes, ch)
	}
	return t, nil
}
