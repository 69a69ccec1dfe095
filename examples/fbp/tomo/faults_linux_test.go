//go:build linux

package tomo_test

import (
	"os"
	"syscall"
	"unsafe"
)

// minorFaults returns the process's minor page faults so far (getrusage
// RUSAGE_SELF, ru_minflt): every thread's, the Go runtime's and sim's
// stream workers' included.
func minorFaults() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Minflt, true
}

// residentPages returns how many of the pages that hold v are mapped in
// memory now (mincore), and how many pages hold it.
func residentPages(v []float32) (resident, pages int, ok bool) {
	ps := uintptr(os.Getpagesize())
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	lo, hi := addr&^(ps-1), (addr+uintptr(len(v))*4+ps-1)&^(ps-1)
	vec := make([]byte, (hi-lo)/ps)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, lo, hi-lo, uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		return 0, 0, false
	}
	for _, b := range vec {
		resident += int(b & 1)
	}
	return resident, len(vec), true
}
