package main

import (
	"golang.org/x/sys/unix"

	"github.com/loadlab/loadlab/internal/limits"
)

// duetCPUs is how a plan duet pins both servers when the plans pin
// neither: to the first half of the CPUs loadlab may use (at least one),
// the same for both sides; n is the count for server.limits.cpus, list
// the CPUs it names, for the message. bench/noise.sh measured two servers on one CPU
// set against a random CPU hog: 10 of 10 A/Bs found and no A/A false
// positive, against 2 of 10 on split sets and 4 of 10 left to the
// scheduler (docs/benchmarks.md). n is 0 when the affinity cannot be read.
func duetCPUs() (n int, list string) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, ""
	}
	var cpus []int
	for i := 0; i < 8192 && len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return 0, ""
	}
	n = (len(cpus) + 1) / 2
	return n, limits.FormatList(cpus[:n])
}
