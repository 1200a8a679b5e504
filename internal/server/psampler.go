package server

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// portableSampler is Sampler outside Linux; it builds and is tested on
// Linux too.
type portableSampler struct {
	pid    int
	series *series

	mu   sync.Mutex // one collection at a time
	tree *psTree
}

func newPortableSampler(pid int, scope Scope) (*portableSampler, error) {
	if scope != OneProcess && scope != ProcessTree {
		return nil, fmt.Errorf("server: sampler of pid %d: unknown scope %d", pid, int(scope))
	}
	t, err := newPSTree(pid, scope == OneProcess)
	if err != nil {
		return nil, fmt.Errorf("server: sampler of pid %d: %w", pid, err)
	}
	s := &portableSampler{pid: pid, series: newSeries(float64(runtime.NumCPU()), 0), tree: t}
	s.series.setUnmeasured(portableUnmeasured)
	return s, nil
}

// Sample takes one sample now and adds it to the series. Once nothing of the
// process is left it returns a *GoneError.
func (s *portableSampler) Sample() (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	u, err := s.tree.collect(context.Background())
	if err != nil {
		return Sample{}, fmt.Errorf("server: sampling pid %d: %w", s.pid, err)
	}
	if s.tree.empty() {
		return Sample{}, &GoneError{PID: s.pid}
	}
	s.series.setUnmeasured(s.tree.unmeasured())
	return s.series.add(now, u), nil
}

// Run samples every interval (DefaultSampleInterval if zero) until ctx ends,
// which returns nil, or the process is gone, which returns a *GoneError.
func (s *portableSampler) Run(ctx context.Context, interval time.Duration) error {
	return sampleEvery(ctx, interval, func() error {
		_, err := s.Sample()
		return err
	})
}

// Samples returns the time series so far.
func (s *portableSampler) Samples() []Sample { return s.series.all() }

// Summary condenses the samples taken between from and to.
func (s *portableSampler) Summary(from, to time.Time) Summary { return s.series.summary(from, to) }
