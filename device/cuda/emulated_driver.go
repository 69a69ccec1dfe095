//go:build cuda && cudaemu && linux

package cuda

// A build with the tag cudaemu runs this backend on the emulated CUDA
// driver (package emulated) instead of libcuda.so.1: the backend itself is
// unchanged.
import "github.com/cuarray/cuarray/device/cuda/emulated"

// UndefinedUses returns the uses of destroyed stream and event handles the
// emulated driver has seen in this process so far (emulated.Misuses):
// undefined behaviour, which killed the process on an H100. Tests fail
// when one appears (internal/testdev).
func (d *Device) UndefinedUses() []string { return emulated.Misuses() }
