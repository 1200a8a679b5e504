package server

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// processTable returns the parent and name of every process, from one
// sysctl (asking gopsutil for each process's parent is a sysctl per process).
func processTable(context.Context) (map[int]tableEntry, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	table := make(map[int]tableEntry, len(procs))
	for i := range procs {
		k := &procs[i]
		table[int(k.Proc.P_pid)] = tableEntry{parent: int(k.Eproc.Ppid), name: unix.ByteSliceToString(k.Proc.P_comm[:])}
	}
	return table, nil
}
