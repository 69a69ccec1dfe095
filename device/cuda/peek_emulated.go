//go:build cuda && cudaemu && linux

package cuda

import (
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// peekState is what Peek reads through; on the emulated driver, nothing.
type peekState struct{}

// peek copies len(b) bytes of device memory at p into b on the emulated
// driver, on a thread where the context is current (inside Device.call).
// The emulated driver reads the memory as it is now without queueing
// device work (emulated.Peek), as a GPU's copy into page-locked memory on a
// non-blocking stream of its own reads it (peek_driver.go), so its stream
// race checker (check=streams) does not take this look, which a test makes
// while a held stream still has work queued, for a racing read.
func (peekState) peek(b []byte, p devarray.Ptr) error {
	return check(emulated.Peek(b, uintptr(p)))
}

// release frees nothing on the emulated driver.
func (peekState) release() error { return nil }
