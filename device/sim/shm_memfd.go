//go:build linux && (amd64 || arm64) && !sim_nomemfd

package sim

import (
	"fmt"
	"syscall"
	"unsafe"
)

// On Linux, device memory is a memory file (memfd) mapped shared, so
// another process can open it through /proc/PID/fd for IPC, and freed
// ranges give their pages back by punching holes in the file.

const (
	fallocKeepSize  = 0x1 // FALLOC_FL_KEEP_SIZE
	fallocPunchHole = 0x2 // FALLOC_FL_PUNCH_HOLE
	mfdCloexec      = 0x1 // MFD_CLOEXEC
)

// sharedMemory makes a memory file of size bytes and maps all of it,
// reserved rather than committed.
func sharedMemory(name string, size int64) ([]byte, int, error) {
	fd, err := memfdCreate(name)
	if err != nil {
		return nil, -1, err
	}
	if err := syscall.Ftruncate(fd, size); err != nil {
		syscall.Close(fd)
		return nil, -1, fmt.Errorf("size the memory file: %w", err)
	}
	mem, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_NORESERVE)
	if err != nil {
		syscall.Close(fd)
		return nil, -1, fmt.Errorf("map the memory file: %w", err)
	}
	return mem, fd, nil
}

func memfdCreate(name string) (int, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	fd, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(p)), mfdCloexec, 0)
	if errno != 0 {
		return -1, fmt.Errorf("memfd_create: %w", errno)
	}
	return int(fd), nil
}

// punchHole gives the pages of a freed range of the memory file back to
// the OS; failure only costs memory, so it is ignored.
func punchHole(fd int, off, size int64) {
	_ = syscall.Fallocate(fd, fallocPunchHole|fallocKeepSize, off, size)
}

// ipcSupported says whether sim IPC works here: it does on Linux.
func ipcSupported() error { return nil }
