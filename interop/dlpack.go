package interop

/*
#include <stdlib.h>
#include "dlpack.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime/cgo"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/transfer"
)

// The DLPack version ExportDLPack writes, and the flags cuarray reads and writes.
const (
	DLPackMajor = C.CUARRAY_DLPACK_MAJOR
	DLPackMinor = C.CUARRAY_DLPACK_MINOR

	DLPackReadOnly = uint64(C.CUARRAY_DLPACK_FLAG_READ_ONLY) // DLPACK_FLAG_BITMASK_READ_ONLY
	DLPackIsCopied = uint64(C.CUARRAY_DLPACK_FLAG_IS_COPIED) // DLPACK_FLAG_BITMASK_IS_COPIED
)

// DLPackMaxDims is the most dimensions a DLPack tensor may have on import.
const DLPackMaxDims = 64

// DLPackOption configures a DLPack export.
type DLPackOption func(*dlpackConfig)

type dlpackConfig struct{ copy bool }

// DLPackCopy makes the export hand over a new C-contiguous copy of the
// array, owned by the tensor, with the IS_COPIED flag (the Python array
// API's __dlpack__(copy=True)). The copy is a counted device-to-device copy.
func DLPackCopy() DLPackOption { return func(c *dlpackConfig) { c.copy = true } }

// dlpackOwner is what a cuarray export's manager_ctx keeps alive until the
// consumer calls the deleter.
type dlpackOwner struct {
	release func() error       // the Hold on the exported memory
	copied  *devarray.DevArray // the copy made for DLPackCopy, freed with the tensor
}

//export cuarrayDLPackRelease
func cuarrayDLPackRelease(h C.uintptr_t) {
	handle := cgo.Handle(h)
	o := handle.Value().(*dlpackOwner)
	handle.Delete()
	// A deleter returns nothing: the hold's release and the copy's free
	// cannot fail on memory that is still allocated, which the hold ensures.
	_ = o.release()
	if o.copied != nil {
		_ = o.copied.Free()
	}
}

// ExportDLPack hands a to a DLPack consumer as a DLManagedTensorVersioned
// (version 1.1) allocated in C memory, returned as an unsafe.Pointer to
// put in a "dltensor_versioned" capsule or pass to C. Strides are written
// in elements; READ_ONLY is set for a read-only array. The memory stays
// allocated, even if its owner calls Free, until the consumer calls the
// tensor's deleter, which also frees the C memory. Nothing is copied or
// allocated on the device unless DLPackCopy is given.
func ExportDLPack(a *devarray.DevArray, opts ...DLPackOption) (unsafe.Pointer, error) {
	var b *C.cuarray_dlpack_versioned
	err := exportTensor(a, opts, func(src *devarray.DevArray, owner *dlpackOwner) (*C.DLTensor, *C.uintptr_t, unsafe.Pointer) {
		if b = C.cuarray_dlpack_new_versioned(C.int32_t(src.NDim())); b == nil {
			return nil, nil, nil
		}
		if src.ReadOnly() {
			b.t.flags |= C.CUARRAY_DLPACK_FLAG_READ_ONLY
		}
		if owner.copied != nil {
			b.t.flags |= C.CUARRAY_DLPACK_FLAG_IS_COPIED
		}
		return &b.t.dl_tensor, &b.handle, unsafe.Pointer(b)
	})
	if err != nil {
		return nil, fmt.Errorf("interop: export DLPack: %w", err)
	}
	return unsafe.Pointer(&b.t), nil
}

// ExportDLPackLegacy is ExportDLPack for consumers of the pre-1.0 ABI: a
// DLManagedTensor for a "dltensor" capsule. It has no flags, so a
// read-only array is refused rather than handed over as writable.
func ExportDLPackLegacy(a *devarray.DevArray, opts ...DLPackOption) (unsafe.Pointer, error) {
	if a.ReadOnly() {
		return nil, fmt.Errorf("interop: export legacy DLPack: the array is read-only and the legacy ABI cannot say so (use the versioned one): %w", ErrInterface)
	}
	var b *C.cuarray_dlpack_legacy
	err := exportTensor(a, opts, func(src *devarray.DevArray, _ *dlpackOwner) (*C.DLTensor, *C.uintptr_t, unsafe.Pointer) {
		if b = C.cuarray_dlpack_new_legacy(C.int32_t(src.NDim())); b == nil {
			return nil, nil, nil
		}
		return &b.t.dl_tensor, &b.handle, unsafe.Pointer(b)
	})
	if err != nil {
		return nil, fmt.Errorf("interop: export legacy DLPack: %w", err)
	}
	return unsafe.Pointer(&b.t), nil
}

// exportTensor holds the array to export (a or its copy), has newBlock
// allocate the C block of one ABI (returning its DLTensor, its handle
// field and the block, or nils when out of C memory), and fills it in.
// On error nothing is held and no C memory is left.
func exportTensor(a *devarray.DevArray, opts []DLPackOption,
	newBlock func(src *devarray.DevArray, owner *dlpackOwner) (*C.DLTensor, *C.uintptr_t, unsafe.Pointer)) error {
	src, owner, err := exportSource(a, opts)
	if err != nil {
		return err
	}
	t, handle, block := newBlock(src, owner)
	if block == nil {
		owner.drop()
		return fmt.Errorf("out of C memory: %w", ErrInterface)
	}
	if err := fillTensor(t, src); err != nil {
		C.free(block)
		owner.drop()
		return err
	}
	*handle = C.uintptr_t(cgo.NewHandle(owner))
	return nil
}

// exportSource returns the array to describe (a, or a fresh copy of it)
// and the owner that keeps its memory until the deleter runs.
func exportSource(a *devarray.DevArray, opts []DLPackOption) (*devarray.DevArray, *dlpackOwner, error) {
	var cfg dlpackConfig
	for _, o := range opts {
		o(&cfg)
	}
	if a.NDim() > DLPackMaxDims {
		return nil, nil, fmt.Errorf("%d dimensions: at most %d: %w", a.NDim(), DLPackMaxDims, ErrInterface)
	}
	if err := checkOpen(a); err != nil {
		return nil, nil, err
	}
	src := a
	owner := &dlpackOwner{}
	if cfg.copy {
		c, err := devarray.Empty(a.Backend(), a.DType(), a.Shape()...)
		if err != nil {
			return nil, nil, fmt.Errorf("copy for export: %w", err)
		}
		if err := transfer.Copy(transfer.Dev(c), transfer.Dev(a)); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("copy for export: %w", err), c.Free())
		}
		src, owner.copied = c, c
	}
	release, err := src.Hold()
	if err != nil {
		owner.drop()
		return nil, nil, err
	}
	owner.release = release
	return src, owner, nil
}

// drop undoes exportSource when the export fails after it.
func (o *dlpackOwner) drop() {
	if o.release != nil {
		_ = o.release()
	}
	if o.copied != nil {
		_ = o.copied.Free()
	}
}

// fillTensor writes a's descriptor into t, whose shape and strides arrays
// have room for a.NDim() entries.
func fillTensor(t *C.DLTensor, a *devarray.DevArray) error {
	d, err := a.Descriptor()
	if err != nil {
		return err
	}
	devType, err := dlpackDeviceType(a, d.Device.Kind)
	if err != nil {
		return err
	}
	code, nbits, lanes, err := d.DType.DLPack()
	if err != nil {
		return err
	}
	item := d.DType.Size()
	n := len(d.Shape)
	shape := unsafe.Slice(t.shape, n)
	strides := unsafe.Slice(t.strides, n)
	for i := range n {
		shape[i] = C.int64_t(d.Shape[i])
		if d.Strides[i]%item != 0 {
			return fmt.Errorf("stride %d of axis %d is not a multiple of the %d-byte element, which DLPack's element strides cannot say: %w", d.Strides[i], i, item, ErrInterface)
		}
		strides[i] = C.int64_t(d.Strides[i] / item)
	}
	// The pointer goes in data with byte_offset 0: CUDA consumers expect
	// data to be the address of element 0, and it need not be aligned.
	*(*uintptr)(unsafe.Pointer(&t.data)) = uintptr(d.Ptr) // a device address, not Go memory
	t.device = C.DLDevice{device_type: C.int32_t(devType), device_id: C.int32_t(d.Device.Ordinal)}
	t.dtype = C.DLDataType{code: C.uint8_t(code), bits: C.uint8_t(nbits), lanes: C.uint16_t(lanes)}
	t.byte_offset = 0
	return nil
}

// dlpackDeviceType is the DLPack device type a's memory is exported as:
// its device kind's, except that managed memory of a CUDA device is
// kDLCUDAManaged ("CUDA managed/unified memory allocated by
// cudaMallocManaged", dlpack.h), which a consumer may also read on the
// host. sim's memory, managed or not, is host memory: kDLCPU.
func dlpackDeviceType(a *devarray.DevArray, k devarray.DeviceKind) (int32, error) {
	t, err := k.DLPack()
	if err == nil && t == devarray.DLCUDA && a.Managed() {
		t = devarray.DLCUDAManaged
	}
	return t, err
}

// sameDLPackDevice reports whether a tensor of DLPack device type got may
// be imported into a backend whose memory is of type want: the same type,
// or managed memory into a CUDA device (its pointer is valid there).
func sameDLPackDevice(got, want int32) bool {
	return got == want || (got == devarray.DLCUDAManaged && want == devarray.DLCUDA)
}

// ImportDLPack borrows the memory of a DLManagedTensorVersioned (a pointer
// from a "dltensor_versioned" capsule or C) as a DevArray, without copying
// and without counting an allocation. With a backend b the tensor's device
// must be b's; with b nil the array is a descriptor of the tensor's own
// device (kDLCPU memory from NumPy, say) with nothing to move it. Every
// field is checked: version 1.x, the device type, ndim, the shape, element
// strides (converted to bytes without overflow), byte_offset, the dtype.
// On success the array owns the tensor: its Free calls the deleter, once.
// On error nothing was taken: the caller still owns the tensor and calls
// DeleteDLPack when done with it.
func ImportDLPack(b devarray.Backend, p unsafe.Pointer, opts ...devarray.WrapOption) (*devarray.DevArray, error) {
	if p == nil {
		return nil, fmt.Errorf("interop: import DLPack: null tensor: %w", ErrInterface)
	}
	t := (*C.DLManagedTensorVersioned)(p)
	if t.version.major != DLPackMajor {
		return nil, fmt.Errorf("interop: import DLPack: version %d.%d: want %d.x: %w", t.version.major, t.version.minor, DLPackMajor, ErrInterface)
	}
	readonly := uint64(t.flags)&DLPackReadOnly != 0
	release := func() error { C.cuarray_dlpack_delete_versioned(t); return nil }
	a, err := importTensor(b, &t.dl_tensor, readonly, release, opts)
	if err != nil {
		return nil, fmt.Errorf("interop: import DLPack: %w", err)
	}
	return a, nil
}

// ImportDLPackLegacy is ImportDLPack for a pre-1.0 DLManagedTensor (a
// "dltensor" capsule). The legacy ABI has no flags, so the array is writable.
func ImportDLPackLegacy(b devarray.Backend, p unsafe.Pointer, opts ...devarray.WrapOption) (*devarray.DevArray, error) {
	if p == nil {
		return nil, fmt.Errorf("interop: import legacy DLPack: null tensor: %w", ErrInterface)
	}
	t := (*C.DLManagedTensor)(p)
	release := func() error { C.cuarray_dlpack_delete_legacy(t); return nil }
	a, err := importTensor(b, &t.dl_tensor, false, release, opts)
	if err != nil {
		return nil, fmt.Errorf("interop: import legacy DLPack: %w", err)
	}
	return a, nil
}

// DeleteDLPack calls a DLManagedTensorVersioned's deleter, if it has one:
// what a producer does with a tensor no consumer took, and a consumer with
// one it could not import.
func DeleteDLPack(p unsafe.Pointer) {
	C.cuarray_dlpack_delete_versioned((*C.DLManagedTensorVersioned)(p))
}

// DeleteDLPackLegacy is DeleteDLPack for a legacy DLManagedTensor.
func DeleteDLPackLegacy(p unsafe.Pointer) { C.cuarray_dlpack_delete_legacy((*C.DLManagedTensor)(p)) }

// importTensor checks a DLTensor and wraps it.
func importTensor(b devarray.Backend, t *C.DLTensor, readonly bool, release func() error, opts []devarray.WrapOption) (*devarray.DevArray, error) {
	kind, err := devarray.KindFromDLPack(int32(t.device.device_type))
	if err != nil {
		return nil, err
	}
	dev := devarray.DeviceID{Kind: kind, Ordinal: int(t.device.device_id)}
	if t.device.device_id < 0 {
		return nil, fmt.Errorf("device id %d is negative: %w", t.device.device_id, ErrInterface)
	}
	if b != nil {
		want, err := b.DeviceID().Kind.DLPack()
		if err != nil {
			return nil, err
		}
		if !sameDLPackDevice(int32(t.device.device_type), want) || int(t.device.device_id) != b.DeviceID().Ordinal {
			return nil, fmt.Errorf("tensor on DLPack device (%d, %d), backend %v is (%d, %d): %w",
				t.device.device_type, t.device.device_id, b.DeviceID(), want, b.DeviceID().Ordinal, devarray.ErrDevice)
		}
		dev = b.DeviceID()
	}
	dtype, err := devarray.ParseDLPack(uint8(t.dtype.code), uint8(t.dtype.bits), uint16(t.dtype.lanes))
	if err != nil {
		return nil, err
	}
	ndim := int(t.ndim)
	if ndim < 0 || ndim > DLPackMaxDims {
		return nil, fmt.Errorf("ndim %d: want 0 to %d: %w", ndim, DLPackMaxDims, ErrInterface)
	}
	if ndim > 0 && t.shape == nil {
		return nil, fmt.Errorf("ndim %d with a null shape: %w", ndim, ErrInterface)
	}
	shape := make([]int, ndim)
	for i, n := range unsafe.Slice(t.shape, ndim) {
		if n < 0 {
			return nil, fmt.Errorf("shape[%d] = %d is negative: %w", i, n, ErrInterface)
		}
		shape[i] = int(n)
	}
	var strides []int64
	if t.strides != nil && ndim > 0 {
		item := dtype.Size()
		strides = make([]int64, ndim)
		for i, s := range unsafe.Slice(t.strides, ndim) {
			hi, lo := bits.Mul64(uint64(abs64(int64(s))), uint64(item))
			if hi != 0 || lo > math.MaxInt64 {
				return nil, fmt.Errorf("stride[%d] = %d elements of %d bytes overflows: %w", i, s, item, ErrInterface)
			}
			strides[i] = int64(s) * item
		}
	}
	ptr := uint64(uintptr(t.data))
	off := uint64(t.byte_offset)
	if ptr+off < ptr {
		return nil, fmt.Errorf("data %#x + byte_offset %d overflows: %w", ptr, off, ErrInterface)
	}
	d := devarray.Descriptor{Ptr: devarray.Ptr(ptr + off), Shape: shape, Strides: strides, DType: dtype, Device: dev, ReadOnly: readonly}
	return devarray.Wrap(b, d, append(opts, devarray.OnFree(release))...)
}

func abs64(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // -MinInt64 wraps to 1<<63, which is its absolute value as a uint64
	}
	return uint64(x)
}
