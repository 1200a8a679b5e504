package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// What starting and stopping a server does on every platform.

const (
	// readyPollInterval is the pause between readiness probes.
	readyPollInterval = 50 * time.Millisecond
	// maxProbeTime bounds one probe, so a server that accepts and never answers is
	// probed again rather than waited on until ReadyTimeout.
	maxProbeTime = time.Second
	// stopPollInterval is how often Stop looks for what is left of the tree.
	stopPollInterval = 20 * time.Millisecond
	// killWait is how long SIGKILL may take: only a process stuck in the kernel
	// (uninterruptible I/O) outlives it.
	killWait = 5 * time.Second
)

func writeFiles(spec Spec) error {
	for _, f := range spec.Files {
		path := f.Path
		if !filepath.IsAbs(path) && spec.Dir != "" {
			path = filepath.Join(spec.Dir, path)
		}
		mode := f.Mode
		if mode == 0 {
			mode = DefaultFileMode
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.WriteFile(path, f.Content, mode); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		// WriteFile keeps the mode of a file that already exists.
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// openLog opens the server log for appending, which keeps the writes of several
// processes sharing it from overwriting each other.
func openLog(path string) (f *os.File, name string, temp bool, err error) {
	if path == "" {
		f, err = os.CreateTemp("", "loadlab-server-*.log")
		if err != nil {
			return nil, "", false, fmt.Errorf("creating a temporary log: %w", err)
		}
		f.Close()
		path, temp = f.Name(), true
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, "", false, fmt.Errorf("creating the log's directory: %w", err)
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		if temp {
			os.Remove(path)
		}
		return nil, "", false, fmt.Errorf("opening the log: %w", err)
	}
	return f, path, temp, nil
}

// environment returns loadlab's environment with env added, in a stable order; later
// entries win in exec.Cmd, so env overrides inherited variables.
func environment(env map[string]string) []string {
	if len(env) == 0 {
		return nil // inherit
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := os.Environ()
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// awaitReady probes the server until it answers, and returns when that was. Otherwise
// it returns why it gave up, with the cause: the server ended (done closed; ended
// says why), ctx ended, or ReadyTimeout passed since started.
func awaitReady(ctx context.Context, probe readyProbe, started time.Time, timeoutAfter time.Duration, done <-chan struct{}, ended func() error) (time.Time, StartFailure, error) {
	client := newProbeClient()
	defer client.CloseIdleConnections()
	deadline := started.Add(timeoutAfter)
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	poll := time.NewTicker(readyPollInterval)
	defer poll.Stop()
	var lastErr error
	for {
		if remaining := time.Until(deadline); remaining > 0 {
			err := probe.check(ctx, client, min(remaining, maxProbeTime))
			if err == nil {
				select {
				case <-done:
					// Something answered, but our server has already ended.
				default:
					return time.Now(), 0, nil
				}
			}
			lastErr = err
		}
		select {
		case <-done:
			return time.Time{}, ExitedEarly, ended()
		case <-ctx.Done():
			return time.Time{}, Canceled, context.Cause(ctx)
		case <-timeout.C:
			if lastErr == nil {
				lastErr = errors.New("no probe finished")
			}
			return time.Time{}, NotReady, fmt.Errorf("last probe: %w", lastErr)
		case <-poll.C:
		}
	}
}
