//go:build cuda && cudaemu && linux

package cuda

import (
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// peek copies len(b) bytes of device memory at p into b on the emulated
// driver, on a thread where the context is current (inside Device.call),
// and returns the driver's result code. The emulated driver reads the
// memory as it is now without queueing device work (emulated.Peek), so
// its stream race checker does not take this look, which a GPU makes on
// a non-blocking stream, for a racing read.
func peek(b []byte, p devarray.Ptr) int { return emulated.Peek(b, uintptr(p)) }
