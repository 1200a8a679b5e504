package server

import (
	"context"
	"sync"
	"time"
)

// Sample is the resource use of a process tree at one instant. Byte figures are bytes.
type Sample struct {
	Time time.Time

	// User and System are cumulative CPU time since the tree started, including members
	// that already exited.
	User, System time.Duration
	// CPU is the percentage of one core used since the previous sample (0 for the first);
	// MachineCPU is the same as a percentage of the capacity (online CPUs or cgroup quota).
	CPU, MachineCPU float64

	RSS, PSS, Swap int64
	// PSSFromRSS is set when smaps_rollup was unreadable for some member and its RSS
	// stands in for its PSS.
	PSSFromRSS bool
	// PSSEstimated is set when some member's PSS was not read at this sample but carried
	// from its last smaps_rollup read by its change in RSS (see the package comment).
	PSSEstimated bool

	MajorFaults int64 // cumulative, like User and System
	// Waited is the time the tree's threads spent runnable but waiting for
	// a CPU (the run-queue delay of /proc/PID/task/TID/schedstat), summed
	// over threads and cumulative like User and System; 0 where it is not
	// measured (FigureWait).
	Waited  time.Duration
	Threads int
	FDs     int
	// FDsUnknown is set when some member's /proc/PID/fd was unreadable (not counted).
	FDsUnknown bool
	Processes  int // live members; zombies are not counted

	// A sample folded from n raw ones (see series) keeps their sums for
	// exact averages, and the peak of PSS + swap; n is 0 for a raw sample.
	n                      int
	rssSum, pssSum, memSum float64
	memPeak                int64
}

// Summary condenses the samples of a window.
type Summary struct {
	From, To time.Time // times of the first and last sample used
	Samples  int       // samples taken in the window (a folded one counts all it holds)

	// User and System are the CPU time spent between From and To.
	User, System time.Duration
	// CPU figures are percentages of one core; Machine figures of Capacity CPUs.
	// Averages are taken over the whole window; peaks over single sampling intervals.
	CPUAverage, CPUPeak         float64
	MachineAverage, MachinePeak float64
	Capacity                    float64

	RSSAverage, RSSPeak int64
	PSSAverage, PSSPeak int64
	PSSFromRSS          bool // some PSS figures are RSS (see Sample.PSSFromRSS)
	// Unmeasured is the figures this platform cannot measure: they read 0 here
	// (PSS reads RSS) but are unknown, not zero. None on Linux, where /proc has
	// them all.
	Unmeasured  Figures
	SwapPeak    int64
	MajorFaults int64 // faults between From and To
	// Waited is the run-queue wait between From and To (Sample.Waited).
	Waited        time.Duration
	ThreadsPeak   int
	FDsPeak       int
	ProcessesPeak int

	Quota QuotaCheck
}

// QuotaCheck compares the memory of a summary with Spec.MemoryQuota, as a hosting
// platform's memory alarm does (Heroku's R14 counts RAM and swap): the basis is PSS
// plus swap, sample by sample. PSS because summed RSS counts the pages forked workers
// share once per worker; swap because a server pushed into swap to stay under the
// quota is still over it.
type QuotaCheck struct {
	Quota           int64 // bytes; 0: no quota, nothing else is set
	Peak, Average   int64 // PSS + swap, bytes
	PeakExceeded    bool
	PeakOver        int64 // bytes of PSSPeak above Quota, 0 when under
	AverageExceeded bool
	AverageOver     int64 // bytes of PSSAverage above Quota, 0 when under
}

// Figures is a set of a sample's figures, for saying which are not measured.
type Figures uint8

// The figures that some platforms cannot measure.
const (
	FigurePSS Figures = 1 << iota
	FigureSwap
	FigureMajorFaults
	FigureFDs
	FigureWait
)

var figureNames = []string{"pss", "swap", "major_faults", "fds", "cpu_wait"}

// Names lists the figures of f by their result.json names, in a fixed order.
func (f Figures) Names() []string {
	var names []string
	for i, name := range figureNames {
		if f&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return names
}

// usage is what one collection of a tree adds up, before it becomes a Sample.
type usage struct {
	user, system   time.Duration
	rss, pss, swap int64
	pssFromRSS     bool
	pssEstimated   bool
	majorFaults    int64
	waited         time.Duration
	threads, fds   int
	fdsUnknown     bool
	processes      int
}

// maxSamples bounds the samples a series keeps: 14,400 is an hour at the
// default interval, about 2 MiB. Past it, neighbouring samples fold in pairs
// (and later ones are taken in pairs as they come), so a run of any length
// keeps at most this many, each covering twice the time of before.
const maxSamples = 14400

// series is the time series of one tree; it is written by one goroutine and read by any.
//
// A folded sample covers several intervals: its time and cumulative figures
// (CPU time, major faults) are those of its last, its CPU, memory, thread,
// FD and process figures the highest of them (so peaks stay exact), and it
// keeps the sums that make averages exact.
type series struct {
	capacity float64 // CPUs; > 0
	quota    int64

	unmeasured Figures // Summary.Unmeasured

	mu      sync.Mutex
	samples []Sample
	span    int     // intervals per kept sample: 1, then 2, 4... after folds
	pending *Sample // the intervals of the next kept sample so far, when span > 1
	last    Sample  // the last raw sample, which the next one's CPU is measured from
	taken   int
}

func newSeries(capacity float64, quota int64) *series {
	if capacity <= 0 {
		capacity = 1
	}
	return &series{capacity: capacity, quota: quota, span: 1}
}

// add turns u, measured at t, into the next Sample.
func (s *series) add(t time.Time, u usage) Sample {
	sample := Sample{
		Time: t, User: u.user, System: u.system,
		RSS: u.rss, PSS: u.pss, Swap: u.swap, PSSFromRSS: u.pssFromRSS, PSSEstimated: u.pssEstimated,
		MajorFaults: u.majorFaults, Waited: u.waited, Threads: u.threads, FDs: u.fds, FDsUnknown: u.fdsUnknown,
		Processes: u.processes,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken > 0 {
		sample.CPU = cpuPercent(s.last, sample)
		sample.MachineCPU = sample.CPU / s.capacity
	}
	s.last = sample
	s.taken++
	if s.span == 1 {
		s.samples = append(s.samples, sample)
	} else {
		if s.pending == nil {
			p := sample
			s.pending = &p
		} else {
			*s.pending = fold(*s.pending, sample)
		}
		if s.pending.count() == s.span {
			s.samples = append(s.samples, *s.pending)
			s.pending = nil
		}
	}
	if len(s.samples) >= maxSamples {
		for i := range len(s.samples) / 2 {
			s.samples[i] = fold(s.samples[2*i], s.samples[2*i+1])
		}
		s.samples = s.samples[:len(s.samples)/2]
		s.span *= 2
	}
	return sample
}

// fold makes one sample of a and the later b.
func fold(a, b Sample) Sample {
	f := b
	f.n = a.count() + b.count()
	ar, ap, am := a.totals()
	br, bp, bm := b.totals()
	f.rssSum, f.pssSum, f.memSum = ar+br, ap+bp, am+bm
	f.CPU, f.MachineCPU = max(a.CPU, b.CPU), max(a.MachineCPU, b.MachineCPU)
	f.RSS, f.PSS, f.Swap = max(a.RSS, b.RSS), max(a.PSS, b.PSS), max(a.Swap, b.Swap)
	f.memPeak = max(a.memMax(), b.memMax())
	f.Threads, f.FDs, f.Processes = max(a.Threads, b.Threads), max(a.FDs, b.FDs), max(a.Processes, b.Processes)
	f.PSSFromRSS = a.PSSFromRSS || b.PSSFromRSS
	f.PSSEstimated = a.PSSEstimated || b.PSSEstimated
	f.FDsUnknown = a.FDsUnknown || b.FDsUnknown
	return f
}

// count is how many raw samples s stands for.
func (s Sample) count() int { return max(s.n, 1) }

// memMax is the highest PSS + swap of the samples s stands for.
func (s Sample) memMax() int64 {
	if s.n > 0 {
		return s.memPeak
	}
	return s.PSS + s.Swap
}

// totals adds up the RSS, PSS and PSS + swap of the raw samples s stands for.
func (s Sample) totals() (rss, pss, mem float64) {
	if s.n > 0 {
		return s.rssSum, s.pssSum, s.memSum
	}
	return float64(s.RSS), float64(s.PSS), float64(s.PSS + s.Swap)
}

// kept is the samples with the one being folded, if any.
func (s *series) kept() []Sample {
	if s.pending == nil {
		return s.samples
	}
	return append(s.samples[:len(s.samples):len(s.samples)], *s.pending)
}

func (s *series) setUnmeasured(figures Figures) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unmeasured = figures
}

func (s *series) all() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.kept()...)
}

func (s *series) summary(from, to time.Time) Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := summarize(s.kept(), s.capacity, s.quota, from, to)
	sum.Unmeasured = s.unmeasured
	return sum
}

// cpuPercent is the CPU used between two samples as a percentage of one core. A
// negative delta (an exited member counted from stale figures) reads as zero.
func cpuPercent(prev, cur Sample) float64 {
	elapsed := cur.Time.Sub(prev.Time).Seconds()
	if elapsed <= 0 {
		return 0
	}
	used := (cur.User + cur.System - prev.User - prev.System).Seconds()
	return max(0, 100*used/elapsed)
}

// summarize condenses the samples whose time is within [from, to]; a zero from or to
// leaves that end open. The CPU figure of the first sample in the window covers time
// before the window, so CPU peaks start at the second one.
func summarize(samples []Sample, capacity float64, quota int64, from, to time.Time) Summary {
	sum := Summary{Capacity: capacity, Quota: QuotaCheck{Quota: quota}}
	// Samples are in time order, so the window is one run of them.
	start := 0
	for start < len(samples) && !from.IsZero() && samples[start].Time.Before(from) {
		start++
	}
	end := start
	for end < len(samples) && (to.IsZero() || !samples[end].Time.After(to)) {
		end++
	}
	window := samples[start:end]
	if len(window) == 0 {
		return sum
	}
	first, last := window[0], window[len(window)-1]
	sum.From, sum.To, sum.Samples = first.Time, last.Time, len(window)
	sum.User = max(0, last.User-first.User)
	sum.System = max(0, last.System-first.System)
	sum.MajorFaults = max(0, last.MajorFaults-first.MajorFaults)
	sum.Waited = max(0, last.Waited-first.Waited)
	if len(window) > 1 {
		sum.CPUAverage = cpuPercent(first, last)
		sum.MachineAverage = sum.CPUAverage / capacity
	}
	var rssTotal, pssTotal, memTotal float64
	var memPeak int64
	raw := 0
	for i, s := range window {
		rss, pss, mem := s.totals()
		rssTotal, pssTotal, memTotal = rssTotal+rss, pssTotal+pss, memTotal+mem
		raw += s.count()
		memPeak = max(memPeak, s.memMax())
		if i > 0 {
			sum.CPUPeak = max(sum.CPUPeak, s.CPU)
		}
		sum.RSSPeak = max(sum.RSSPeak, s.RSS)
		sum.PSSPeak = max(sum.PSSPeak, s.PSS)
		sum.PSSFromRSS = sum.PSSFromRSS || s.PSSFromRSS
		sum.SwapPeak = max(sum.SwapPeak, s.Swap)
		sum.ThreadsPeak = max(sum.ThreadsPeak, s.Threads)
		sum.FDsPeak = max(sum.FDsPeak, s.FDs)
		sum.ProcessesPeak = max(sum.ProcessesPeak, s.Processes)
	}
	sum.MachinePeak = sum.CPUPeak / capacity
	sum.Samples = raw
	sum.RSSAverage = int64(rssTotal / float64(raw))
	sum.PSSAverage = int64(pssTotal / float64(raw))
	if quota > 0 {
		sum.Quota.Peak, sum.Quota.Average = memPeak, int64(memTotal/float64(raw))
		sum.Quota.PeakOver = max(0, sum.Quota.Peak-quota)
		sum.Quota.PeakExceeded = sum.Quota.PeakOver > 0
		sum.Quota.AverageOver = max(0, sum.Quota.Average-quota)
		sum.Quota.AverageExceeded = sum.Quota.AverageOver > 0
	}
	return sum
}

// sampleEvery calls sample at once and then every interval
// (DefaultSampleInterval if zero, never under minSampleInterval) until ctx
// ends, which returns nil, or sample fails, which returns its error: the
// loop of every Sampler's Run, whatever the platform.
func sampleEvery(ctx context.Context, interval time.Duration, sample func() error) error {
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	interval = max(interval, minSampleInterval)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := sample(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// WaitShare is the share of the time the tree's threads wanted a CPU that
// they spent waiting for one: Waited over Waited plus the CPU time used, 0
// when nothing ran. A neighbour on the same CPUs raises it; so does a
// server with more busy threads than CPUs, alike in every run of it.
func (s Summary) WaitShare() float64 {
	want := s.Waited + s.User + s.System
	if want <= 0 {
		return 0
	}
	return float64(s.Waited) / float64(want)
}
