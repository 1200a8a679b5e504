package server

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Two readings of /proc/stat on a 2-CPU virtual machine, 10 s apart (100
// ticks a second: 2000 ticks of CPU time in all), of a kernel that has every
// column: 900 ticks busy (user 600 of which 50 guest, nice 20, system 200,
// irq 30, softirq 50), 500 stolen by the hypervisor, 600 idle or in iowait.
const (
	procStatBefore = `cpu  10000 200 3000 50000 400 100 200 1000 500 0
cpu0 5000 100 1500 25000 200 50 100 500 250 0
cpu1 5000 100 1500 25000 200 50 100 500 250 0
intr 123456 0 0
ctxt 987654
btime 1700000000
processes 4242
procs_running 2
procs_blocked 0
softirq 1 2 3
`
	procStatAfter = `cpu  10600 220 3200 50550 450 130 250 1500 550 0
cpu0 5300 110 1600 25275 225 65 125 750 275 0
cpu1 5300 110 1600 25275 225 65 125 750 275 0
intr 123999 0 0
`
)

func TestParseProcStat(t *testing.T) {
	m, err := parseProcStat([]byte(procStatBefore))
	if err != nil {
		t.Fatal(err)
	}
	// Guest time is in user already: not added again.
	if m.CPUs != 2 || m.Busy != 10000+200+3000+100+200 || m.Steal != 1000 || m.Total != m.Busy+50000+400+1000 || m.StealUnmeasured {
		t.Errorf("%+v", m)
	}
	// A kernel before 2.6.11 has no steal column: it reads 0.
	old, err := parseProcStat([]byte("cpu  10 0 5 100 1 0 0\ncpu0 10 0 5 100 1 0 0\n"))
	if err != nil || old.Steal != 0 || old.Busy != 15 || old.Total != 116 || old.CPUs != 1 {
		t.Errorf("old kernel: %+v %v", old, err)
	}
	for _, bad := range []string{"", "intr 1 2\n", "cpu  1 2\n", "cpu  1 x 3 4 5 6 7 8\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestMachineSummary(t *testing.T) {
	a, err := parseProcStat([]byte(procStatBefore))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseProcStat([]byte(procStatAfter))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	s := machineSummary(t0, t0.Add(10*time.Second), a, b)
	// 900 of 2000 ticks busy on 2 CPUs: 0.9 CPUs; 500 of 2000 stolen: 25%.
	if math.Abs(s.BusyCores-0.9) > 1e-9 || math.Abs(s.StealShare-0.25) > 1e-9 || s.CPUs != 2 {
		t.Errorf("%+v", s)
	}

	// The sampler keeps a bounded number of readings, the first and the
	// latest among them, and summarizes between the readings in a window.
	n := 0
	ms := &MachineSampler{read: func() (MachineTimes, error) {
		n++
		return MachineTimes{Busy: float64(n), Total: 2 * float64(n), CPUs: 4}, nil
	}}
	for range 3 * maxMachineReadings {
		if err := ms.Sample(); err != nil {
			t.Fatal(err)
		}
	}
	if len(ms.readings) >= maxMachineReadings || ms.readings[0].m.Busy != 1 || ms.readings[len(ms.readings)-1].m.Busy != float64(n) {
		t.Errorf("%d readings kept, first %v, last %v of %d", len(ms.readings), ms.readings[0].m.Busy, ms.readings[len(ms.readings)-1].m.Busy, n)
	}
	if sum, ok := ms.Summary(time.Time{}, time.Now()); !ok || sum.BusyCores != 2 {
		t.Errorf("half of 4 CPUs busy: %+v %v", sum, ok)
	}
	if _, ok := ms.Summary(time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)); ok {
		t.Error("a window without readings has a summary")
	}
}

// TestMachineTimesHere: this machine's times read, from /proc/stat on Linux
// or gopsutil elsewhere; gopsutil, on Linux too, agrees on the CPUs.
func TestMachineTimesHere(t *testing.T) {
	m, err := readMachineTimes()
	if err != nil {
		t.Fatal(err)
	}
	p, err := portableMachineTimes()
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUs < 1 || m.Total <= 0 || m.Busy <= 0 || m.Busy > m.Total || p.CPUs != m.CPUs || !p.StealUnmeasured {
		t.Errorf("/proc/stat %+v, gopsutil %+v", m, p)
	}
}
