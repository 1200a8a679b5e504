package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// The files a results directory gets beside result.json or experiment.json.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "report.md"
)

func writeFile(dir, name string, render func(w io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		var we *store.WriteError
		if errors.As(err, &we) { // a file it writes beside failed, so this one is not written either
			return errors.Join(err, &store.WriteError{Path: filepath.Join(dir, name), Err: fmt.Errorf("not written: %w", errors.Unwrap(we))})
		}
		return err
	}
	return store.WriteFile(filepath.Join(dir, name), b.Bytes())
}

// WriteRunFiles writes a run's reports into its directory: report.html,
// report.md with its PNG charts, steps.csv and series.csv.
func WriteRunFiles(dir string, r *result.Result) error {
	return store.WritesFailed(
		writeFile(dir, HTMLFile, func(w io.Writer) error { return HTML(w, r) }),
		writeFile(dir, MarkdownFile, func(w io.Writer) error { return Markdown(w, dir, r) }),
		writeFile(dir, "steps.csv", func(w io.Writer) error { return StepsCSV(w, r) }),
		writeFile(dir, "series.csv", func(w io.Writer) error { return SeriesCSV(w, r) }),
	)
}

// WriteExperimentFiles writes an experiment's reports into its results
// directory: report.html, report.md with its PNG charts, runs.csv and
// points.csv.
func WriteExperimentFiles(dir string, o *experiment.Outcome) error {
	return store.WritesFailed(
		writeFile(dir, HTMLFile, func(w io.Writer) error { return ExperimentHTML(w, o) }),
		writeFile(dir, MarkdownFile, func(w io.Writer) error { return ExperimentMarkdown(w, dir, o) }),
		writeFile(dir, "runs.csv", func(w io.Writer) error { return RunsCSV(w, o) }),
		writeFile(dir, "points.csv", func(w io.Writer) error { return PointsCSV(w, o) }),
	)
}

// WriteRunPage writes only a run's report.html: what each run of an
// experiment gets, linked from the experiment's report.
func WriteRunPage(dir string, r *result.Result) error {
	return writeFile(dir, HTMLFile, func(w io.Writer) error { return HTML(w, r) })
}
