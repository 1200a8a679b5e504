package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// envStepSummary is the file GitHub Actions shows as the job's summary.
const envStepSummary = "GITHUB_STEP_SUMMARY"

// ciOutputs writes what CI reads of a run: --junit FILE, and the job
// summary when $GITHUB_STEP_SUMMARY names one. err is the command's outcome
// so far; an output that cannot be written fails a command that had
// succeeded, and is one line on stderr otherwise.
func ciOutputs(io *stdio, f *quickFlags, err error, junit, summary func(*bytes.Buffer) error) error {
	var errs []error
	if f.junit != "" {
		var b bytes.Buffer
		werr := junit(&b)
		if werr == nil {
			werr = store.WriteFile(f.junit, b.Bytes())
		}
		if werr != nil {
			errs = append(errs, fmt.Errorf("--junit: %w", werr))
		}
	}
	if path := os.Getenv(envStepSummary); path != "" {
		var b bytes.Buffer
		werr := summary(&b)
		if werr == nil {
			werr = appendFile(path, b.Bytes())
		}
		if werr != nil {
			errs = append(errs, fmt.Errorf("$%s: %w", envStepSummary, werr))
		}
	}
	cerr := errors.Join(errs...)
	switch {
	case cerr == nil:
		return err
	case err == nil:
		return failedError(fmt.Errorf("run: %w", cerr))
	}
	fmt.Fprintf(io.err, "loadlab: %v\n", cerr)
	return err
}

func appendFile(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	return errors.Join(err, fh.Close())
}

func ciRun(io *stdio, f *quickFlags, err error, res *result.Result) error {
	return ciOutputs(io, f, err,
		func(b *bytes.Buffer) error { return report.JUnit(b, res) },
		func(b *bytes.Buffer) error { return report.StepSummary(b, res) })
}

func ciExperiment(io *stdio, f *quickFlags, err error, out *experiment.Outcome) error {
	return ciOutputs(io, f, err,
		func(b *bytes.Buffer) error { return report.ExperimentJUnit(b, out) },
		func(b *bytes.Buffer) error { return report.ExperimentStepSummary(b, out) })
}
