//go:build !linux

package server

// readMachineTimes has no /proc/stat here: gopsutil's times, without steal.
func readMachineTimes() (MachineTimes, error) { return portableMachineTimes() }
