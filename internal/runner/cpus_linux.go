package runner

import "golang.org/x/sys/unix"

// usableCPUs is how many CPUs this process may run on (its affinity mask).
func usableCPUs() (float64, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, err
	}
	return float64(set.Count()), nil
}
