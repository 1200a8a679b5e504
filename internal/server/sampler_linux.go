//go:build linux

package server

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// Sampler samples one process, or its tree, for a caller that did not start it.
type Sampler struct {
	pid    int
	series *series

	mu   sync.Mutex // one collection at a time
	tree *tree
}

// NewSampler returns a sampler of pid; it takes no sample yet.
func NewSampler(pid int, scope Scope) (*Sampler, error) {
	if scope != OneProcess && scope != ProcessTree {
		return nil, fmt.Errorf("server: sampler of pid %d: unknown scope %d", pid, int(scope))
	}
	st, err := newProcReader().stat(pid)
	if err != nil {
		return nil, fmt.Errorf("server: sampler of pid %d: %w", pid, err)
	}
	t := newTree(treeOptions{root: pid, rootStart: st.start, single: scope == OneProcess},
		scope == ProcessTree && !childrenFileWorks())
	return &Sampler{pid: pid, series: newSeries(cpuCapacity(pid), 0), tree: t}, nil
}

// SampleSelf returns a sampler of the calling process alone.
func SampleSelf() (*Sampler, error) { return NewSampler(os.Getpid(), OneProcess) }

// Sample takes one sample now and adds it to the series. Once nothing of the process
// is left it returns a *GoneError.
func (s *Sampler) Sample() (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	u, err := s.tree.collect()
	if err != nil {
		return Sample{}, fmt.Errorf("server: sampling pid %d: %w", s.pid, err)
	}
	if s.tree.empty() {
		return Sample{}, &GoneError{PID: s.pid}
	}
	return s.series.add(now, u), nil
}

// Run samples every interval (DefaultSampleInterval if zero) until ctx ends, which
// returns nil, or the process is gone, which returns a *GoneError.
func (s *Sampler) Run(ctx context.Context, interval time.Duration) error {
	return sampleEvery(ctx, interval, func() error {
		_, err := s.Sample()
		return err
	})
}

// Samples returns the time series so far.
func (s *Sampler) Samples() []Sample { return s.series.all() }

// Summary condenses the samples taken between from and to; zero times leave that end
// open.
func (s *Sampler) Summary(from, to time.Time) Summary { return s.series.summary(from, to) }
