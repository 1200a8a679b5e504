// Package store keeps results on disk: each run's directory (result.json and
// the files beside it), written atomically so that an interrupted run or a
// full disk never leaves a half-written file, and the SQLite history of an
// experiment's runs.
package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/loadlab/loadlab/internal/result"
)

// ResultFile is the name of a run's result in its directory.
const ResultFile = "result.json"

// CheckWritable makes sure dir exists (creating it) and that a file can be
// written in it, so that a run fails before any load rather than after.
func CheckWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create output directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".loadlab-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in output directory: %w", err)
	}
	name := f.Name()
	_, werr := f.Write([]byte("ok"))
	cerr := f.Close()
	os.Remove(name)
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("cannot write in output directory %s: %w", dir, err)
	}
	return nil
}

// WriteFile writes data to path atomically: to a temporary file in the same
// directory, synced, then renamed over path. On any error path is untouched.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return &WriteError{Path: path, Err: err}
	}
	return nil
}

// WriteError is a file that could not be written; path is left as it was.
type WriteError struct {
	Path string
	Err  error
}

// Error names the file and the root cause ("no space left on device"), not
// the temporary file it was written through.
func (e *WriteError) Error() string { return "write " + e.Path + ": " + rootCause(e.Err).Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// rootCause is the system's own error inside err, if there is one.
func rootCause(err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// WritesFailed condenses the errors of writing several files into one line:
// "could not write report.html and report.md: no space left on device". Nil
// errors are skipped; nil if all are. Errors other than WriteError are kept
// as they are.
func WritesFailed(errs ...error) error {
	var names, causes []string
	var others []error
	var walk func(err error)
	walk = func(err error) {
		if err == nil {
			return
		}
		var we *WriteError
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		if !errors.As(err, &we) {
			others = append(others, err)
			return
		}
		names = append(names, filepath.Base(we.Path))
		if c := rootCause(we.Err).Error(); !slices.Contains(causes, c) {
			causes = append(causes, c)
		}
	}
	for _, err := range errs {
		walk(err)
	}
	if len(names) == 0 {
		return errors.Join(others...)
	}
	list := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	err := fmt.Errorf("could not write %s: %s", list, strings.Join(causes, "; "))
	if len(others) > 0 {
		return errors.Join(append([]error{err}, others...)...)
	}
	return err
}

// WriteResult writes r as dir/result.json, atomically, then the failing
// responses its steps kept (dir/failures/STEP.http), each atomically.
func WriteResult(dir string, r *result.Result) error {
	var buf bytes.Buffer
	if err := result.Encode(&buf, r); err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if err := WriteFile(filepath.Join(dir, ResultFile), buf.Bytes()); err != nil {
		return err
	}
	return writeFailures(dir, r)
}

// writeFailures writes each kept failing response where its FailedCheck's
// File says.
func writeFailures(dir string, r *result.Result) error {
	var errs []error
	made := false
	for _, st := range r.Steps {
		f := st.FailedCheck
		if f == nil || f.Response == "" || f.File == "" {
			continue
		}
		if !made {
			if err := os.MkdirAll(filepath.Join(dir, result.FailuresDir), 0o755); err != nil {
				return fmt.Errorf("%s is written, but not the failing responses: %w", ResultFile, err)
			}
			made = true
		}
		errs = append(errs, WriteFile(filepath.Join(dir, filepath.FromSlash(f.File)), []byte(f.Response)))
	}
	if err := WritesFailed(errs...); err != nil {
		return fmt.Errorf("%s is written, but %w", ResultFile, err)
	}
	return nil
}

// ReadResult reads a result from a run directory or a result file.
func ReadResult(path string) (*result.Result, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ResultFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := result.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// tempFile matches the temporary files WriteFile and CheckWritable write
// through: ".result.json.tmp-123", ".loadlab-check-456".
func tempFile(name string) bool {
	return strings.HasPrefix(name, ".") && (strings.Contains(name, ".tmp-") || strings.HasPrefix(name, ".loadlab-check-"))
}

// RemoveTemp removes, in dir and the directories below it, the temporary
// files a killed loadlab left before it could rename them into place
// (".experiment.json.tmp-*", "runs/NNN/.report.html.tmp-*"). Nothing else
// is touched. A resumed experiment calls it first.
func RemoveTemp(dir string) error {
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, os.ErrNotExist) {
				return filepath.SkipDir
			}
			errs = append(errs, err)
			return nil
		}
		if d.Type().IsRegular() && tempFile(d.Name()) {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove a temporary file: %w", err))
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}
