//go:build !windows && !darwin

package server

import (
	"context"

	"github.com/shirou/gopsutil/v4/process"
)

// processTable returns the parent of every process.
func processTable(ctx context.Context) (map[int]tableEntry, error) {
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		return nil, err
	}
	table := make(map[int]tableEntry, len(pids))
	for _, pid := range pids {
		p := process.Process{Pid: pid}
		if parent, err := p.PpidWithContext(ctx); err == nil {
			table[int(pid)] = tableEntry{parent: int(parent)}
		}
	}
	return table, nil
}
