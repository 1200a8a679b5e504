package server

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// processTable returns the parent and name of every process, from one
// snapshot (asking gopsutil for each process's parent takes a snapshot per
// process).
func processTable(context.Context) (map[int]tableEntry, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("process snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	table := make(map[int]tableEntry)
	var entry windows.ProcessEntry32
	entry.Size = uint32(unsafe.Sizeof(entry))
	for err = windows.Process32First(snap, &entry); err == nil; err = windows.Process32Next(snap, &entry) {
		table[int(entry.ProcessID)] = tableEntry{
			parent: int(entry.ParentProcessID),
			name:   windows.UTF16ToString(entry.ExeFile[:]),
		}
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, fmt.Errorf("process snapshot: %w", err)
	}
	return table, nil
}
