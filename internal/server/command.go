package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// DefaultCommandTimeout bounds a command run by [Run] when no timeout is given.
const DefaultCommandTimeout = 2 * time.Minute

// Run runs a command to its end (a plan's before_each_run or after_each_run: reset a
// database, restore a snapshot) with the care the server gets: spec's files are
// written first, it starts in a process group of its own, and on Linux under a
// watchdog, with its output in spec.LogPath. Its whole tree is stopped (StopSignal,
// then SIGKILL after Grace) when ctx ends, when timeout passes (zero:
// DefaultCommandTimeout), and once the command has exited, so that nothing it started
// outlives it. spec.Ready is ignored.
//
// It returns nil when the command exited with status 0; a *CommandError when it failed
// or timed out, with the tail of its output, secrets masked; an error wrapping ctx's
// when ctx ended first; the error of Start when it could not start.
func Run(ctx context.Context, spec Spec, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	spec.Ready = ""
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := Start(runCtx, spec)
	if err != nil {
		return err
	}
	exited := false
	select {
	case <-p.rootDone:
		exited = true
	case <-runCtx.Done():
	}
	stopErr := p.Stop() // what the command left running, or the command itself
	fail := &CommandError{Command: p.command, After: time.Since(p.started), LogPath: p.logPath}
	switch {
	case !exited && ctx.Err() != nil:
		return fmt.Errorf("%s: stopped with its process tree: %w", p.command, context.Cause(ctx))
	case !exited:
		fail.TimedOut = timeout
	case p.rootState == nil:
		fail.Status = ExitStatus{Code: -1} // someone else reaped it: nothing known
	default:
		if ws, ok := p.rootState.Sys().(syscall.WaitStatus); ok {
			fail.Status = exitStatusOf(ws)
		}
		if fail.Status.Success() {
			if stopErr != nil {
				return fmt.Errorf("%s exited, but what it started could not be stopped: %w", p.command, stopErr)
			}
			if p.tempLog {
				os.Remove(p.logPath)
			}
			return nil
		}
	}
	// A temporary log is kept: the error points to it.
	fail.LogTail = readTail(p.logPath, tailLines, p.spec.Secrets)
	if stopErr != nil {
		return errors.Join(fail, stopErr)
	}
	return fail
}

// CommandError is a command run by [Run] that failed: it exited with a non-zero
// status or by a signal, or did not end within its timeout and was stopped.
type CommandError struct {
	Command  string
	Status   ExitStatus    // how it exited, when it did
	TimedOut time.Duration // non-zero: it was still running after this long, and stopped
	After    time.Duration // from its start to the end of the wait
	LogPath  string
	LogTail  []string // the last lines of its output, secrets masked
}

func (e *CommandError) Error() string {
	what := e.Status.String()
	if e.TimedOut > 0 {
		what = fmt.Sprintf("still running after %v (the timeout): stopped with its process tree", e.TimedOut)
	}
	return e.Command + ": " + what + formatTail(e.LogPath, e.LogTail)
}
