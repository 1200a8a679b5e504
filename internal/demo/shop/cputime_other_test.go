//go:build !linux

package shop

import "time"

// processCPU and machineCPU are measured on Linux only.
func processCPU() time.Duration { return 0 }
func machineCPU() time.Duration { return 0 }
