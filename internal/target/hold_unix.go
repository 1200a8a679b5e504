//go:build !windows

package target

import "golang.org/x/sys/unix"

// allocate returns n bytes outside the Go heap (an anonymous mapping), so
// that held memory is exactly what was asked: on the heap, the garbage
// collector would let garbage grow in proportion to it.
func allocate(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}
