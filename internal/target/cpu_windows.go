package target

import (
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

var getThreadTimes = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetThreadTimes")

// threadCPU is the CPU time of the calling OS thread (GetThreadTimes, in
// 100 ns units; Windows counts it at the scheduler's tick).
func threadCPU() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	thread, _ := windows.GetCurrentThread()
	getThreadTimes.Call(uintptr(thread),
		uintptr(unsafe.Pointer(&creation)), uintptr(unsafe.Pointer(&exit)),
		uintptr(unsafe.Pointer(&kernel)), uintptr(unsafe.Pointer(&user)))
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
