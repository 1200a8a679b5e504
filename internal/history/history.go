// Package history keeps every run and experiment loadlab finishes, across
// commits, in one SQLite database (modernc.org/sqlite, the same pure-Go
// driver as the experiment database), so that a figure's trend can be drawn
// and the commit where it changed found.
//
// A record is one run: the plan's name and fingerprint, the git commit,
// branch and dirty flag of the directory loadlab ran in, the host, the time,
// the run's figures (its result without the histograms, the series and the
// plan text) and the path to the full result when one was written. An
// experiment adds one record per run, with its point and repeat.
//
// Writes are one transaction each, taken with BEGIN IMMEDIATE in WAL mode
// with a busy timeout (store.OpenSQLite, as the experiment database), so two loadlab processes that finish at once both
// get their records in, and a process killed mid-write leaves the database
// as it was before the transaction (SQLite's guarantee, tested with kill -9).
package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// EnvPath is the environment variable that names the history database;
// "off" turns history off.
const EnvPath = "LOADLAB_HISTORY"

// Record is one run in the history.
type Record struct {
	ID       int64     `json:"id"`
	Time     time.Time `json:"time"` // when the run ended
	Kind     string    `json:"kind"` // "run" or "experiment"
	Plan     string    `json:"plan"` // the plan's name; quick mode's "GET URL"
	PlanHash string    `json:"plan_hash"`
	Point    string    `json:"point,omitempty"` // an experiment run's point
	Rep      int       `json:"rep,omitempty"`   // and its repeat
	Status   string    `json:"status"`          // "done" or "failed"
	Git
	Host string `json:"host"`
	// Path is the run's result directory (absolute), when one was written.
	Path string `json:"path,omitempty"`
	// Result is the run's result without histograms, series and plan text.
	Result *result.Result `json:"-"`
}

// Git is where the run's working directory was in git, when it was in a
// checkout.
type Git struct {
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
}

// Kinds of records.
const (
	KindRun        = "run"
	KindExperiment = "experiment"
)

// DB is an open history database.
type DB struct {
	db   *sql.DB
	path string
}

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', 'loadlab.history/v1');
CREATE TABLE IF NOT EXISTS runs (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	time      TEXT NOT NULL,
	kind      TEXT NOT NULL,
	plan      TEXT NOT NULL,
	plan_hash TEXT NOT NULL,
	point     TEXT NOT NULL DEFAULT '',
	rep       INTEGER NOT NULL DEFAULT 0,
	status    TEXT NOT NULL,
	git_commit TEXT NOT NULL DEFAULT '',
	branch    TEXT NOT NULL DEFAULT '',
	dirty     INTEGER NOT NULL DEFAULT 0,
	host      TEXT NOT NULL DEFAULT '',
	path      TEXT NOT NULL DEFAULT '',
	result    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_plan ON runs (plan, time);`

// Open opens the history database at path, creating it and its directory.
func Open(path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	db, err := store.OpenSQLite(path, schema)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &DB{db: db, path: path}, nil
}

// Close closes the database.
func (h *DB) Close() error { return h.db.Close() }

// Path is the database file.
func (h *DB) Path() string { return h.path }

// Add records runs, all or none, in one transaction.
func (h *DB) Add(recs ...Record) error {
	tx, err := h.db.Begin()
	if err != nil {
		return fmt.Errorf("history: %s: %w", h.path, err)
	}
	defer tx.Rollback()
	for _, r := range recs {
		res, err := json.Marshal(trim(r.Result))
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		if _, err := tx.Exec(`INSERT INTO runs (time, kind, plan, plan_hash, point, rep, status, git_commit, branch, dirty, host, path, result)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Time.UTC().Format(time.RFC3339Nano), r.Kind, r.Plan, r.PlanHash, r.Point, r.Rep, r.Status,
			r.Commit, r.Branch, r.Dirty, r.Host, r.Path, string(res)); err != nil {
			return fmt.Errorf("history: %s: %w", h.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %s: %w", h.path, err)
	}
	return nil
}

// trim is what a record keeps of a result: its figures, not the histograms,
// the series or the plan (the full result stays in its directory).
func trim(r *result.Result) *result.Result {
	if r == nil {
		return &result.Result{}
	}
	t := *r
	t.Histograms, t.Series, t.Plan = result.RunHistograms{}, nil, ""
	t.Steps = make([]result.Step, len(r.Steps))
	for i, s := range r.Steps {
		s.Histograms = result.StepHistograms{}
		t.Steps[i] = s
	}
	if r.Server != nil {
		sv := *r.Server
		sv.Series = nil
		t.Server = &sv
	}
	return &t
}

// Query selects records. Zero fields select everything.
type Query struct {
	Plan   string    // the plan's name
	Branch string    // only runs on this branch
	Since  time.Time // only runs that ended at or after this
	Kind   string    // only runs of this kind
}

// Runs are the records that match q, oldest first.
func (h *DB) Runs(q Query) ([]Record, error) {
	where, args := []string{"1=1"}, []any{}
	if q.Plan != "" {
		where, args = append(where, "plan = ?"), append(args, q.Plan)
	}
	if q.Branch != "" {
		where, args = append(where, "branch = ?"), append(args, q.Branch)
	}
	if q.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, q.Kind)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "time >= ?"), append(args, q.Since.UTC().Format(time.RFC3339Nano))
	}
	rows, err := h.db.Query(`SELECT id, time, kind, plan, plan_hash, point, rep, status, git_commit, branch, dirty, host, path, result
		FROM runs WHERE `+strings.Join(where, " AND ")+` ORDER BY time, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", h.path, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var at, res string
		if err := rows.Scan(&r.ID, &at, &r.Kind, &r.Plan, &r.PlanHash, &r.Point, &r.Rep, &r.Status,
			&r.Commit, &r.Branch, &r.Dirty, &r.Host, &r.Path, &res); err != nil {
			return nil, fmt.Errorf("history: %s: %w", h.path, err)
		}
		r.Time, _ = time.Parse(time.RFC3339Nano, at)
		r.Result = &result.Result{}
		if err := json.Unmarshal([]byte(res), r.Result); err != nil {
			return nil, fmt.Errorf("history: %s: record %d: %w", h.path, r.ID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// PlanCount is a plan's number of records and its latest.
type PlanCount struct {
	Plan string    `json:"plan"`
	Runs int       `json:"runs"`
	Last time.Time `json:"last"`
}

// Plans lists the plans in the history, the latest run first.
func (h *DB) Plans() ([]PlanCount, error) {
	rows, err := h.db.Query(`SELECT plan, COUNT(*), MAX(time) FROM runs GROUP BY plan ORDER BY MAX(time) DESC`)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", h.path, err)
	}
	defer rows.Close()
	var out []PlanCount
	for rows.Next() {
		var p PlanCount
		var at string
		if err := rows.Scan(&p.Plan, &p.Runs, &at); err != nil {
			return nil, err
		}
		p.Last, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, p)
	}
	return out, rows.Err()
}

// IntegrityCheck runs SQLite's PRAGMA integrity_check.
func (h *DB) IntegrityCheck() error {
	var s string
	if err := h.db.QueryRow("PRAGMA integrity_check").Scan(&s); err != nil {
		return err
	}
	if s != "ok" {
		return errors.New(s)
	}
	return nil
}

// DefaultPath is where the history lives unless told: $LOADLAB_HISTORY, or
// history.db in the user's data directory ($XDG_DATA_HOME/loadlab, or
// ~/.local/share/loadlab; ~/Library/Application Support/loadlab on macOS;
// %LOCALAPPDATA%\loadlab on Windows). "" with off true means history is off.
func DefaultPath() (path string, off bool, err error) {
	if v, ok := os.LookupEnv(EnvPath); ok && v != "" {
		if v == "off" {
			return "", true, nil
		}
		return v, false, nil
	}
	var dir string
	switch runtime.GOOS {
	case "windows":
		dir = os.Getenv("LOCALAPPDATA")
	case "darwin":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false, err
		}
		dir = filepath.Join(home, "Library", "Application Support")
	default:
		dir = os.Getenv("XDG_DATA_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", false, err
			}
			dir = filepath.Join(home, ".local", "share")
		}
	}
	if dir == "" {
		return "", false, errors.New("no user data directory: set " + EnvPath)
	}
	return filepath.Join(dir, "loadlab", "history.db"), false, nil
}

// GitOf is the git commit, branch and dirty flag of dir, when dir is in a
// git checkout and git is installed; the zero Git otherwise. In CI, where
// the checkout is often a detached HEAD, the branch comes from the CI's
// variables (GITHUB_HEAD_REF, GITHUB_REF_NAME, CI_COMMIT_REF_NAME).
func GitOf(dir string) Git {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	git := func(args ...string) (string, bool) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	commit, ok := git("rev-parse", "HEAD")
	if !ok || commit == "" {
		return Git{}
	}
	g := Git{Commit: commit}
	if b, ok := git("symbolic-ref", "--short", "-q", "HEAD"); ok && b != "" {
		g.Branch = b
	} else {
		for _, v := range []string{"GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"} {
			if b := os.Getenv(v); b != "" {
				g.Branch = b
				break
			}
		}
	}
	if s, ok := git("status", "--porcelain", "--untracked-files=no"); ok && s != "" {
		g.Dirty = true
	}
	return g
}
