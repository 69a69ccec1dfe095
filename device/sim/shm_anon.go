//go:build !linux || !(amd64 || arm64) || sim_nomemfd

package sim

import (
	"errors"
	"fmt"
	"syscall"
)

// Where Linux's memfd_create is missing (macOS, the BSDs), device memory
// is an anonymous shared mapping: the same reserved-not-committed memory
// outside the Go heap, with real addresses, but no file another process
// can open, so sim IPC is unsupported there and freed ranges keep their
// pages until the device is closed. The build tag sim_nomemfd selects
// this file on Linux too, so the tests check it there
// (go test -tags sim_nomemfd ./...).

// errNoIPC is what IPCExport and IPCOpen return without memfd.
var errNoIPC = fmt.Errorf("sim emulates CUDA IPC with Linux's memfd and /proc, which this system lacks: %w", errors.ErrUnsupported)

// sharedMemory maps size bytes of anonymous shared memory; there is no
// file, so the descriptor is -1.
func sharedMemory(_ string, size int64) ([]byte, int, error) {
	mem, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, -1, fmt.Errorf("map %d bytes of shared memory: %w", size, err)
	}
	return mem, -1, nil
}

// punchHole does nothing without a memory file.
func punchHole(int, int64, int64) {}

// ipcSupported says whether sim IPC works here: it does not.
func ipcSupported() error { return errNoIPC }
