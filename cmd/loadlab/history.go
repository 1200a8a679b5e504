package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/history"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
)

// historyPath is the history database a command uses: --history, else
// $LOADLAB_HISTORY, else the user's data directory; "" when turned off.
func historyPath(flag string, off bool) (string, error) {
	if off {
		return "", nil
	}
	if flag != "" {
		return flag, nil
	}
	p, isOff, err := history.DefaultPath()
	if isOff {
		return "", nil
	}
	return p, err
}

// runRecord is the history record of one finished run, without its git
// and host, which record adds.
func runRecord(kind, planName, hash, dir string, res *result.Result, failed bool) history.Record {
	r := history.Record{Time: res.Ended, Kind: kind, Plan: planName, PlanHash: hash, Status: "done", Result: res}
	if failed || res.Summary.Interrupted {
		r.Status = "failed"
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			r.Path = abs
		}
	}
	return r
}

// quickIdentity is quick mode's plan name and hash: the method and URL
// (secrets masked), and what load was sent, so that runs of one command
// line form one history.
func quickIdentity(res *result.Result) (string, string) {
	s := res.Settings
	name := strings.TrimSpace(s.Method + " " + s.URL)
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%v", s.Method, s.URL, s.Mode, s.Headers)))
	return name, hex.EncodeToString(h[:8])
}

// record adds recs to the history. It never fails the command: a history
// that cannot be written (full disk, read-only home) is said in one line.
func record(io *stdio, f *quickFlags, recs ...history.Record) {
	if len(recs) == 0 {
		return
	}
	path, err := historyPath(f.history, f.noHistory)
	if path == "" && err == nil {
		return
	}
	if err == nil {
		var db *history.DB
		if db, err = history.Open(path); err == nil {
			wd, _ := os.Getwd()
			git := history.GitOf(wd)
			host, _ := os.Hostname()
			for i := range recs {
				recs[i].Git, recs[i].Host = git, host
			}
			err = errors.Join(db.Add(recs...), db.Close())
		}
	}
	if err != nil {
		hint := ""
		if diskFull(err) || strings.Contains(err.Error(), "disk I/O error") {
			// SQLite says "disk I/O error" when it cannot grow a file: a
			// full disk most often. Its transaction is undone, so the
			// records already there are whole.
			hint = " (is its disk full? the records already in it are kept)"
		}
		fmt.Fprintf(io.err, "loadlab: the run is not in the history: %v%s\n", err, hint)
	}
}

// experimentRecords are the runs of an experiment that this command ran
// (ran holds their directories; those done before a resume are in the
// history already) as history records.
func experimentRecords(p *plan.Plan, dir string, out *experiment.Outcome, ran map[string]bool) []history.Record {
	var recs []history.Record
	results := out.Results()
	for _, r := range out.Runs {
		i := r.Index - 1 // RunInfo counts from 1, Results from 0
		if r.Dir == "" || !ran[filepath.Join(dir, r.Dir)] || i < 0 || i >= len(results) || results[i] == nil {
			continue
		}
		rec := runRecord(history.KindExperiment, p.Name, p.Fingerprint(), filepath.Join(dir, r.Dir), results[i], r.Status != "done")
		rec.Point, rec.Rep = r.Point, r.Rep
		recs = append(recs, rec)
	}
	return recs
}

func newHistoryCommand(io *stdio) *cobra.Command {
	var (
		file, figure, since, branch, point, format string
		asJSON                                     bool
	)
	c := &cobra.Command{
		Use:   "history [PLAN.yaml | NAME]",
		Short: "List the runs of a plan across commits, and the commits where a figure changed",
		Long: `Every run and experiment that loadlab run finishes is recorded in a SQLite
database: the plan's name and fingerprint, the git commit, branch and dirty
flag of the directory it ran in, the host, the time, its figures and where its
result is. --history FILE or LOADLAB_HISTORY chooses the database (default:
history.db in the user's data directory, ~/.local/share/loadlab on Linux);
LOADLAB_HISTORY=off or run's --no-history records nothing.

With no argument, history lists the plans it holds. With a plan file or a
plan's name, it shows one figure (--figure, default p95) of that plan's runs,
the runs at one commit grouped with their spread, and marks the change points:
the commits from which the figure's distribution shifted, found by E-divisive
means (Matteson and James 2014, as in MongoDB's and Apache Otava's
performance CI) with at least 3 runs each side and p <= 0.05 by a permutation
test. A change needs runs on both sides: 5 runs each side (5 commits of one
run, or fewer commits run several times) are the fewest that can make a
clean shift significant; 4 and 4 seldom, 3 and 3 never.

Figures: throughput, p50, p95, p99, error_rate, elapsed, cpu, rss_peak,
rss_avg, pss_peak, pss_avg.`,
		Example: `  loadlab history
  loadlab history checkout.yaml --figure p95 --branch main
  loadlab history checkout --since 30d --format md >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				if c.Flags().Changed("format") && format != "json" {
					return usageError(errors.New("history: give --json or --format, not both"))
				}
				format = "json"
			}
			switch format {
			case "text", "json", "csv", "md", "html":
			default:
				return usageError(fmt.Errorf("history: --format %q: want text, json, csv, md or html", format))
			}
			var from time.Time
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return usageError(fmt.Errorf("history: --since: %w", err))
				}
				from = t
			}
			path, err := historyPath(file, false)
			if err != nil {
				return usageError(fmt.Errorf("history: %w", err))
			}
			if path == "" {
				return usageError(errors.New("history: LOADLAB_HISTORY=off: there is no history to read"))
			}
			if _, err := os.Stat(path); err != nil {
				return usageError(fmt.Errorf("history: no history at %s yet: loadlab run records every run there", path))
			}
			db, err := history.Open(path)
			if err != nil {
				return failedError(err)
			}
			defer db.Close()
			if len(args) == 0 {
				plans, err := db.Plans()
				if err != nil {
					return failedError(err)
				}
				switch format {
				case "json":
					return report.HistoryPlansJSON(io.out, path, plans)
				case "text":
				default:
					return usageError(fmt.Errorf("history: --format %s needs a plan (the trend of its figure); without one, the plans are listed as text or --json", format))
				}
				fmt.Fprintf(io.out, "%d plans in %s\n", len(plans), path)
				for _, p := range plans {
					fmt.Fprintf(io.out, "  %-40s %s, last %s\n", p.Plan, report.Counted(p.Runs, "run"), p.Last.Local().Format("2006-01-02 15:04"))
				}
				return nil
			}
			name := args[0]
			if st, err := os.Stat(name); err == nil && !st.IsDir() {
				p, err := plan.Load(name, plan.Options{LookupEnv: os.LookupEnv})
				if err != nil {
					return usageError(fmt.Errorf("history: %w", err))
				}
				name = p.Name
			}
			recs, err := db.Runs(history.Query{Plan: name, Branch: branch, Since: from})
			if err != nil {
				return failedError(err)
			}
			if len(recs) == 0 {
				return usageError(fmt.Errorf("history: no runs of %q in %s%s", name, path, filterText(branch, since)))
			}
			if point == "" {
				points := map[string]bool{}
				for _, r := range recs {
					points[r.Point] = true
				}
				if !points[""] {
					var names []string
					for p := range points {
						names = append(names, p)
					}
					slices.Sort(names)
					return usageError(fmt.Errorf("history: %q is an experiment: give --point, one of %s", name, strings.Join(names, ", ")))
				}
			}
			t, err := history.TrendOf(recs, figure, point)
			if errors.Is(err, history.ErrNoRuns) {
				return failedError(fmt.Errorf("history: none of the %d runs of %q%s has the figure %s", len(recs), name, pointText(point), figure))
			}
			if err != nil {
				return usageError(fmt.Errorf("history: --figure: %w", err))
			}
			switch format {
			case "json":
				err = report.HistoryJSON(io.out, t)
			case "csv":
				err = report.HistoryCSV(io.out, t)
			case "md":
				err = report.HistoryMarkdown(io.out, t)
			case "html":
				err = report.HistoryHTML(io.out, t)
			default:
				err = report.HistoryText(io.out, t)
			}
			if err != nil {
				return failedError(fmt.Errorf("history: %w", err))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&file, "history", "", "the history database (default $LOADLAB_HISTORY, else history.db in the user's data directory)")
	fl.StringVar(&figure, "figure", "p95", "the figure to show")
	fl.StringVar(&since, "since", "", "only runs since a time: 7d, 12h, 2026-11-01 or an RFC 3339 time")
	fl.StringVar(&branch, "branch", "", "only runs on this git branch")
	fl.StringVar(&point, "point", "", "an experiment's point, such as threads=4")
	fl.StringVar(&format, "format", "text", "text, json (schema loadlab.history/v1), csv, md (with a Mermaid chart) or html")
	fl.BoolVar(&asJSON, "json", false, "the same as --format json")
	return c
}

func filterText(branch, since string) string {
	var s []string
	if branch != "" {
		s = append(s, "on branch "+branch)
	}
	if since != "" {
		s = append(s, "since "+since)
	}
	if len(s) == 0 {
		return ""
	}
	return " " + strings.Join(s, " ")
}

func pointText(p string) string {
	if p == "" {
		return ""
	}
	return " at " + p
}

// parseSince reads --since: a duration back from now (7d, 12h, 90m), a
// date (2026-11-01, local midnight) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d >= 0 {
			return now.AddDate(0, 0, -d), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want a duration back from now (7d, 12h), a date (2026-11-01) or an RFC 3339 time", s)
}

// historySide is side A of `compare --baseline history[:BRANCH] B`: the
// last runs (at most last) of B's plan at B's point in the history, on
// BRANCH when given, B's own runs left out.
func historySide(spec string, b experiment.Side, bPath string, last int, file string) (experiment.Side, error) {
	branch := ""
	if rest, ok := strings.CutPrefix(spec, "history:"); ok {
		branch = rest
	} else if spec != "history" {
		return experiment.Side{}, fmt.Errorf("--baseline %q: want history or history:BRANCH", spec)
	}
	if last < 1 {
		return experiment.Side{}, fmt.Errorf("--last %d: want 1 or more", last)
	}
	path, err := historyPath(file, false)
	if err != nil {
		return experiment.Side{}, err
	}
	if path == "" {
		return experiment.Side{}, errors.New("--baseline history: LOADLAB_HISTORY=off: there is no history to read")
	}
	if _, err := os.Stat(path); err != nil {
		return experiment.Side{}, fmt.Errorf("--baseline history: no history at %s", path)
	}
	db, err := history.Open(path)
	if err != nil {
		return experiment.Side{}, err
	}
	defer db.Close()
	first := b.Results[0]
	name, point := first.Name, first.Settings.Extra["point"]
	if first.Plan == "" { // quick mode
		name, _ = quickIdentity(first)
	}
	recs, err := db.Runs(history.Query{Plan: name, Branch: branch})
	if err != nil {
		return experiment.Side{}, err
	}
	own, _ := filepath.Abs(bPath)
	var keep []history.Record
	for _, r := range recs {
		if r.Status != "done" || r.Point != point || r.Path != "" && (r.Path == own || strings.HasPrefix(r.Path, own+string(filepath.Separator))) {
			continue
		}
		keep = append(keep, r)
	}
	where := ""
	if branch != "" {
		where = " on branch " + branch
	}
	if len(keep) == 0 {
		return experiment.Side{}, fmt.Errorf("--baseline history: no earlier runs of %q%s%s in %s", name, pointText(point), where, path)
	}
	if len(keep) > last {
		keep = keep[len(keep)-last:]
	}
	side := experiment.Side{Label: fmt.Sprintf("history%s: the last %d runs of %s%s", where, len(keep), name, pointText(point))}
	commits := map[string]bool{}
	for _, r := range keep {
		side.Results = append(side.Results, r.Result)
		commits[r.Commit] = true
	}
	if len(commits) > 1 || !commits[""] {
		side.Label += fmt.Sprintf(" (%d commits, the last %s)", len(commits), shortSHA(keep[len(keep)-1].Commit))
	}
	return side, nil
}

func shortSHA(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}
