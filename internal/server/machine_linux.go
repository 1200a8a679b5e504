//go:build linux

package server

import "os"

// readMachineTimes reads /proc/stat, which has steal time.
func readMachineTimes() (MachineTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineTimes{}, err
	}
	return parseProcStat(data)
}
