package main

import "errors"

// Exit codes, documented in docs/reference/exit-codes.md and in `loadlab --help`.
const (
	exitOK        = 0
	exitFailed    = 1 // the run failed: target unreachable, server crashed, interrupted
	exitUsage     = 2 // invalid input: flags, plan file; no load was sent
	exitThreshold = 3 // a threshold or a compare verdict failed
)

// exitError attaches an exit code to an error.
type exitError struct {
	code   int
	err    error
	silent bool // already reported to the user
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error     { return &exitError{code: exitUsage, err: err} }
func failedError(err error) error    { return &exitError{code: exitFailed, err: err} }
func thresholdError(err error) error { return &exitError{code: exitThreshold, err: err} }

// exitCode picks the exit code of err; errors without one mean a failed run.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailed
}
