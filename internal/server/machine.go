package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
)

// MachineTimes are the whole machine's CPU times since boot, summed over
// its CPUs, in any one unit (ticks of /proc/stat, or seconds): only their
// ratios are used.
type MachineTimes struct {
	// Busy is every CPU's time running anything: user (guests included),
	// nice, system, irq and softirq. Steal is time the hypervisor gave the
	// virtual CPUs to others while they wanted to run; Total is all of it,
	// idle and iowait included.
	Busy, Steal, Total float64
	CPUs               int // online CPUs the times are summed over
	// StealUnmeasured is set where steal time cannot be read (outside Linux).
	StealUnmeasured bool
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat (proc(5): user
// nice system idle iowait irq softirq steal guest guest_nice, in clock ticks;
// guest time is already counted in user) and counts the cpuN lines.
func parseProcStat(data []byte) (MachineTimes, error) {
	var m MachineTimes
	found := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		if fields[0] != "cpu" {
			if _, err := strconv.Atoi(fields[0][3:]); err == nil {
				m.CPUs++
			}
			continue
		}
		if len(fields) < 5 {
			return m, fmt.Errorf("/proc/stat: a cpu line of %d fields: %q", len(fields), sc.Text())
		}
		var v [8]float64 // user nice system idle iowait irq softirq steal
		for i := range v {
			if 1+i >= len(fields) {
				break // older kernels have fewer columns: the rest read 0
			}
			n, err := strconv.ParseUint(fields[1+i], 10, 64)
			if err != nil {
				return m, fmt.Errorf("/proc/stat: cpu field %d: %w", 1+i, err)
			}
			v[i] = float64(n)
		}
		m.Busy = v[0] + v[1] + v[2] + v[5] + v[6]
		m.Steal = v[7]
		m.Total = m.Busy + v[3] + v[4] + m.Steal
		found = true
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("/proc/stat: %w", err)
	}
	if !found {
		return m, errors.New("/proc/stat: no cpu line")
	}
	if m.CPUs == 0 {
		m.CPUs = 1
	}
	return m, nil
}

// portableMachineTimes reads the machine's CPU times with gopsutil, where
// there is no /proc/stat: steal is not measured there.
func portableMachineTimes() (MachineTimes, error) {
	ts, err := cpu.Times(false)
	if err != nil {
		return MachineTimes{}, fmt.Errorf("machine CPU times: %w", err)
	}
	if len(ts) == 0 {
		return MachineTimes{}, errors.New("machine CPU times: none")
	}
	t := ts[0]
	n, err := cpu.Counts(true)
	if err != nil || n <= 0 {
		n = 1
	}
	busy := t.User + t.Nice + t.System + t.Irq + t.Softirq
	return MachineTimes{Busy: busy, Total: busy + t.Idle + t.Iowait + t.Steal, CPUs: n, StealUnmeasured: true}, nil
}

// MachineSummary is what ran on the whole machine between two readings.
type MachineSummary struct {
	From, To time.Time
	CPUs     int
	// BusyCores is the average number of CPUs busy with anything (loadlab
	// and the server under test included); StealShare the share of all CPU
	// time the hypervisor stole.
	BusyCores       float64
	StealShare      float64
	StealUnmeasured bool
}

// maxMachineReadings bounds the readings a MachineSampler keeps: when it is
// reached, every other one is dropped (the first and the latest are kept),
// so a run of any length keeps at most this many, older ones sparser.
const maxMachineReadings = 4096

type machineReading struct {
	t time.Time
	m MachineTimes
}

// MachineSampler reads the machine's CPU times every interval, to tell
// what else ran during a run: other processes and the hypervisor's steal.
type MachineSampler struct {
	read func() (MachineTimes, error)

	mu       sync.Mutex
	readings []machineReading
	err      error // the first failed reading
}

// NewMachineSampler returns a sampler of this machine's CPU times: from
// /proc/stat on Linux, gopsutil elsewhere.
func NewMachineSampler() *MachineSampler { return &MachineSampler{read: readMachineTimes} }

// Sample takes one reading now.
func (s *MachineSampler) Sample() error {
	now := time.Now()
	m, err := s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return err
	}
	s.readings = append(s.readings, machineReading{now, m})
	if n := len(s.readings); n >= maxMachineReadings {
		kept := s.readings[:0]
		for i, r := range s.readings {
			if i%2 == 0 || i == n-1 {
				kept = append(kept, r)
			}
		}
		s.readings = kept
	}
	return nil
}

// Run reads every interval until ctx ends. A failed reading ends it (Err
// says why): the machine's figures are then not measured.
func (s *MachineSampler) Run(ctx context.Context, interval time.Duration) {
	_ = sampleEvery(ctx, interval, s.Sample)
}

// Err is why the machine could not be read, if it could not.
func (s *MachineSampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Summary is what ran on the machine between the first reading at or after
// from and the last at or before to; false when there are not two.
func (s *MachineSampler) Summary(from, to time.Time) (MachineSummary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := -1, -1
	for i, r := range s.readings {
		if r.t.Before(from) || r.t.After(to) {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || last <= first {
		return MachineSummary{}, false
	}
	a, b := s.readings[first], s.readings[last]
	return machineSummary(a.t, b.t, a.m, b.m), true
}

// machineSummary is what ran between two readings a and b.
func machineSummary(from, to time.Time, a, b MachineTimes) MachineSummary {
	sum := MachineSummary{From: from, To: to, CPUs: b.CPUs, StealUnmeasured: b.StealUnmeasured}
	total := b.Total - a.Total
	if total <= 0 {
		return sum
	}
	sum.BusyCores = max(0, b.Busy-a.Busy) / total * float64(b.CPUs)
	sum.StealShare = max(0, b.Steal-a.Steal) / total
	return sum
}
