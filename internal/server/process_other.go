//go:build !linux

package server

import (
	"context"
	"os"
)

// Process is a started server: its process tree, its log and its samples.
// Outside Linux it is the portable watcher (see the package comment).
type Process = portableProcess

// Start writes spec's files, starts the server and waits until it is ready;
// see the Linux version for the whole contract, and the package comment for
// what differs outside Linux.
func Start(ctx context.Context, spec Spec) (*Process, error) { return startPortable(ctx, spec) }

// Sampler samples one process, or its tree, for a caller that did not start it.
type Sampler = portableSampler

// NewSampler returns a sampler of pid; it takes no sample yet.
func NewSampler(pid int, scope Scope) (*Sampler, error) { return newPortableSampler(pid, scope) }

// SampleSelf returns a sampler of the calling process alone.
func SampleSelf() (*Sampler, error) { return NewSampler(os.Getpid(), OneProcess) }
