package devarray

import "sync/atomic"

// Packer gathers a strided device array into a C-contiguous one of the
// same shape and dtype on the device (Pack) and scatters it back
// (Unpack), each in one kernel launch, returning when the work is
// complete. Package kernels' Kernels is one.
type Packer interface {
	Pack(dst, src *DevArray) error
	Unpack(dst, src *DevArray) error
}

// packerFor finds the Packer for a Backend that is not one itself.
var packerFor atomic.Pointer[func(Backend) (Packer, error)]

// RegisterPacker sets the function that finds the pack kernels of a
// Backend, for the copies of strided arrays (StridedCopy): package kernels
// registers its own when it is linked in (packages transfer and interop
// link it), as image formats register with package image. devarray
// cannot import kernels, which is built on the devices that are built on
// devarray. A Backend that is a Packer itself is used as one.
func RegisterPacker(f func(Backend) (Packer, error)) {
	if f != nil {
		packerFor.Store(&f)
	}
}
