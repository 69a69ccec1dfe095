//go:build cuda && cudaemu && linux && !cudaemu_nobind

package emulated

import (
	"unsafe"

	"gorgonia.org/cu"
)

// init makes gorgonia.org/cu's Init take the driver from this package: a
// function it does not implement answers CUDA_ERROR_NOT_SUPPORTED, and
// cu.TakeMissing names it (Resolve).
func init() {
	cu.UseDriver(func(symbol string) unsafe.Pointer {
		if f, ok := Resolve(symbol); ok {
			return f
		}
		return cu.Unimplemented()
	})
}
