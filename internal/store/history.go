package store

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// HistoryFile is the experiment database in a results directory.
const HistoryFile = "experiment.db"

// History is an experiment's runs, kept in SQLite so that an interrupted
// experiment resumes where it stopped: a run is recorded, with its result,
// in one transaction when it ends, so a run is either wholly recorded or not
// at all, whatever kills the process.
type History struct {
	db   *sql.DB
	path string
}

// RunRecord is one run of an experiment.
type RunRecord struct {
	Index   int    // position in the experiment's run order
	Point   string // the point's key, such as "threads=5"
	Rep     int    // which repeat of the point, from 1
	Status  string // "done" or "failed"
	Started time.Time
	Ended   time.Time
	Error   string
	Result  []byte // result.json
}

// Run statuses.
const (
	StatusDone   = "done"
	StatusFailed = "failed"
)

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
	idx     INTEGER PRIMARY KEY,
	point   TEXT NOT NULL,
	rep     INTEGER NOT NULL,
	status  TEXT NOT NULL,
	started TEXT NOT NULL,
	ended   TEXT NOT NULL,
	error   TEXT NOT NULL DEFAULT '',
	result  BLOB
);`

// OpenHistory opens (creating if needed) the experiment database in dir.
func OpenHistory(dir string) (*History, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, HistoryFile)
	db, err := OpenSQLite(path, schema)
	if err != nil {
		return nil, err
	}
	return &History{db: db, path: path}, nil
}

// OpenSQLite opens the SQLite database at path (creating it) in WAL mode
// with a busy timeout, one connection, and write transactions that take
// the lock when they begin (BEGIN IMMEDIATE), so that two processes writing
// at once wait for each other instead of failing; then runs schema.
func OpenSQLite(path, schema string) (*sql.DB, error) {
	// Two processes that create the same new file at once: the switch to
	// WAL (a connection's first pragma) can answer SQLITE_BUSY at once,
	// without waiting out busy_timeout, so the open is tried again, for 5 s
	// at most (seen as TestTwoProcesses failing after 0.04 s).
	deadline := time.Now().Add(5 * time.Second)
	for {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		db.SetMaxOpenConns(1)
		_, err = db.Exec(schema)
		if err == nil {
			return db, nil
		}
		db.Close()
		if !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close closes the database.
func (h *History) Close() error { return h.db.Close() }

// Path is the database file.
func (h *History) Path() string { return h.path }

// Meta reads a value recorded with SetMeta; ok is false when there is none.
func (h *History) Meta(key string) (value string, ok bool, err error) {
	err = h.db.QueryRow(`SELECT value FROM meta WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// SetMeta records a value.
func (h *History) SetMeta(key, value string) error {
	_, err := h.db.Exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// Save records a run, replacing an earlier record of the same index (a
// failed run tried again).
func (h *History) Save(r RunRecord) error {
	_, err := h.db.Exec(`INSERT INTO runs (idx, point, rep, status, started, ended, error, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(idx) DO UPDATE SET point = excluded.point, rep = excluded.rep, status = excluded.status,
		started = excluded.started, ended = excluded.ended, error = excluded.error, result = excluded.result`,
		r.Index, r.Point, r.Rep, r.Status, r.Started.UTC().Format(time.RFC3339Nano), r.Ended.UTC().Format(time.RFC3339Nano), r.Error, r.Result)
	if err != nil {
		return fmt.Errorf("record run %d in %s: %w", r.Index, h.path, err)
	}
	return nil
}

// Runs lists every recorded run, by index.
func (h *History) Runs() ([]RunRecord, error) {
	rows, err := h.db.Query(`SELECT idx, point, rep, status, started, ended, error, result FROM runs ORDER BY idx`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunRecord
	for rows.Next() {
		var r RunRecord
		var started, ended string
		if err := rows.Scan(&r.Index, &r.Point, &r.Rep, &r.Status, &started, &ended, &r.Error, &r.Result); err != nil {
			return nil, err
		}
		r.Started, _ = time.Parse(time.RFC3339Nano, started)
		r.Ended, _ = time.Parse(time.RFC3339Nano, ended)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Reset forgets every run and value: the start of a fresh experiment.
func (h *History) Reset() error {
	_, err := h.db.Exec(`DELETE FROM runs; DELETE FROM meta;`)
	return err
}
