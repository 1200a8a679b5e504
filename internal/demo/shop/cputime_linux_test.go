package shop

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// machineCPU is the CPU time all processes on the machine have used (busy
// time from /proc/stat), so a benchmark can tell when others competed for
// the CPU.
func machineCPU() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	fields := strings.Fields(sc.Text()) // cpu user nice system idle iowait irq softirq steal ...
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	var ticks int64
	for i, field := range fields[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(field, 10, 64)
		ticks += n
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ticks) * time.Second / ticksPerSecond
}
