//go:build !cgo

package interop

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// Without cgo (CGO_ENABLED=0, as when cross-compiling for macOS from
// Linux) there is no C memory to build DLPack tensors in: the DLPack
// functions keep their signatures, so code that calls them builds, and
// return an error wrapping errors.ErrUnsupported. Everything else in the package works.

// errNoCgo is what the DLPack functions return in a build without cgo.
// It wraps errors.ErrUnsupported.
var errNoCgo = fmt.Errorf("DLPack needs cgo, and this program was built with CGO_ENABLED=0: %w", errors.ErrUnsupported)

// The DLPack version ExportDLPack writes, and the flags cuarray reads and
// writes (the values of dlpack.h).
const (
	DLPackMajor = 1
	DLPackMinor = 1

	DLPackReadOnly = uint64(1) << 0 // DLPACK_FLAG_BITMASK_READ_ONLY
	DLPackIsCopied = uint64(1) << 1 // DLPACK_FLAG_BITMASK_IS_COPIED
)

// DLPackMaxDims is the most dimensions a DLPack tensor may have on import.
const DLPackMaxDims = 64

// DLPackOption configures a DLPack export.
type DLPackOption func(*dlpackConfig)

type dlpackConfig struct{ copy bool }

// DLPackCopy makes the export hand over a new C-contiguous copy of the
// array (with cgo).
func DLPackCopy() DLPackOption { return func(c *dlpackConfig) { c.copy = true } }

// ExportDLPack returns errNoCgo: a build without cgo cannot make a DLPack
// tensor.
func ExportDLPack(*devarray.DevArray, ...DLPackOption) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("interop: export DLPack: %w", errNoCgo)
}

// ExportDLPackLegacy returns errNoCgo.
func ExportDLPackLegacy(*devarray.DevArray, ...DLPackOption) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("interop: export legacy DLPack: %w", errNoCgo)
}

// ImportDLPack returns errNoCgo; the tensor is not taken.
func ImportDLPack(devarray.Backend, unsafe.Pointer, ...devarray.WrapOption) (*devarray.DevArray, error) {
	return nil, fmt.Errorf("interop: import DLPack: %w", errNoCgo)
}

// ImportDLPackLegacy returns errNoCgo; the tensor is not taken.
func ImportDLPackLegacy(devarray.Backend, unsafe.Pointer, ...devarray.WrapOption) (*devarray.DevArray, error) {
	return nil, fmt.Errorf("interop: import legacy DLPack: %w", errNoCgo)
}

// DeleteDLPack does nothing without cgo: calling a C deleter needs cgo,
// and no tensor can have come from this package.
func DeleteDLPack(unsafe.Pointer) {}

// DeleteDLPackLegacy does nothing without cgo.
func DeleteDLPackLegacy(unsafe.Pointer) {}
