// Package kernels runs cuarray's GPU kernels on DevArrays: fill, scale,
// axpy, sum, a checksum, pack/unpack (gather a strided view into a
// contiguous buffer and scatter it back), and the two steps of filtered
// backprojection, RampFilter and Backproject (fbp.cu), which take scratch
// memory from an accounting.Workspace. Its slab methods (methods.go) are
// registered with package plan. On the cuda backend the kernels are
// CUDA C (kernels.cu, compiled to PTX by `make ptx` and embedded); on the
// sim backend the same operations run as Go references on the emulated
// device memory. Arrays may have any strides, negative ones included, and
// up to MaxDims axes.
//
//	k, err := kernels.New(dev)
//	if err != nil { ... }
//	defer k.Close()
//	err = k.Fill(a, 1.5)
//	sum, err := k.Sum(a)
//
// Kernels are queued on the device's default stream (or the stream given
// to WithStream) and return before the GPU finishes, except Sum and
// Checksum, which wait for their result.
package kernels

import (
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// blockSize is the threads per block of every launch (a multiple of the
// warp size, which the reductions need).
const blockSize = 256

// maxBlocks caps the grid; the kernels' grid-stride loops cover the rest.
const maxBlocks = 8192

// Kernels runs kernels on one device. It is safe for concurrent use.
type Kernels struct {
	dev    driver.Device
	gpu    driver.KernelRunner // the cuda backend, or nil
	host   driver.MemoryAccess // the sim backend, or nil
	stream driver.Stream       // nil: the default stream
	shared *module
}

// module is the loaded PTX and the functions looked up so far.
type module struct {
	mu    sync.Mutex
	mod   driver.Module
	funcs map[string]driver.Function
}

// New prepares kernels for dev: on a GPU it loads the embedded PTX (the
// driver compiles it for the GPU at hand); on sim it needs nothing.
func New(dev driver.Device) (*Kernels, error) {
	k := &Kernels{dev: dev, shared: &module{funcs: make(map[string]driver.Function)}}
	switch b := dev.(type) {
	case driver.KernelRunner:
		mod, err := b.LoadModule(ptx)
		if err != nil {
			return nil, fmt.Errorf("kernels: %w", err)
		}
		k.gpu, k.shared.mod = b, mod
	case driver.MemoryAccess:
		k.host = b
	default:
		return nil, fmt.Errorf("kernels: device %v can neither load PTX nor expose its memory: %w", dev.DeviceID(), driver.ErrInvalidValue)
	}
	return k, nil
}

// WithStream returns kernels that queue their work on s.
func (k *Kernels) WithStream(s driver.Stream) *Kernels {
	c := *k
	c.stream = s
	return &c
}

// Close unloads the module.
func (k *Kernels) Close() error {
	if k.shared.mod == nil {
		return nil
	}
	k.shared.mu.Lock()
	defer k.shared.mu.Unlock()
	return k.shared.mod.Close()
}

func (k *Kernels) function(name string) (driver.Function, error) {
	k.shared.mu.Lock()
	defer k.shared.mu.Unlock()
	if f, ok := k.shared.funcs[name]; ok {
		return f, nil
	}
	f, err := k.shared.mod.Function(name)
	if err != nil {
		return nil, err
	}
	k.shared.funcs[name] = f
	return f, nil
}

// launch runs kernel name over n items.
func (k *Kernels) launch(name string, n int64, args *driver.KernelArgs) error {
	f, err := k.function(name)
	if err != nil {
		return err
	}
	blocks := min((n+blockSize-1)/blockSize, maxBlocks)
	return f.Launch([3]uint32{uint32(max(blocks, 1)), 1, 1}, [3]uint32{blockSize, 1, 1}, 0, k.stream, args)
}

// span is the device memory an array touches, for MemoryAccess, and the
// offset of element 0 inside it.
func span(a *devarray.DevArray) (driver.Range, int64) {
	lo, hi := a.Extent()
	return driver.Range{Ptr: a.Ptr() + devarray.Ptr(lo), N: hi - lo}, -lo
}

// access runs a Go reference on the memory of arrays.
func (k *Kernels) access(f func(mem [][]byte, base []int64) error, arrays ...*devarray.DevArray) error {
	ranges := make([]driver.Range, len(arrays))
	bases := make([]int64, len(arrays))
	for i, a := range arrays {
		ranges[i], bases[i] = span(a)
	}
	return k.hostAccess(ranges, func(mem [][]byte) error { return f(mem, bases) })
}

// hostAccess runs f on device ranges through sim's MemoryAccess, after the
// work already queued on the kernels' stream.
func (k *Kernels) hostAccess(ranges []driver.Range, f func([][]byte) error) error {
	if k.stream != nil {
		if err := k.stream.Synchronize(); err != nil {
			return err
		}
	}
	return k.host.Access(ranges, f)
}

// floatKind returns the element type of a float32 or float64 array and the
// kernel name suffix for it.
func floatKind(op string, a *devarray.DevArray) (element, string, error) {
	switch a.DType() {
	case devarray.Float32:
		return element{4}, "f32", nil
	case devarray.Float64:
		return element{8}, "f64", nil
	}
	return element{}, "", fmt.Errorf("kernels: %s: dtype %v: want float32 or float64: %w", op, a.DType(), devarray.ErrDType)
}

// check makes the checks every kernel shares: the array is on this device
// and, when written, not read-only.
func (k *Kernels) check(op string, a *devarray.DevArray, written bool) error {
	if a.Device() != k.dev.DeviceID() {
		return fmt.Errorf("kernels: %s: array on %v, kernels on %v: %w", op, a.Device(), k.dev.DeviceID(), devarray.ErrDevice)
	}
	if written && a.ReadOnly() {
		return fmt.Errorf("kernels: %s: %w", op, devarray.ErrReadOnly)
	}
	return nil
}

// scalar appends v to args as the kernel's float type.
func scalar(args *driver.KernelArgs, e element, v float64) *driver.KernelArgs {
	if e.size == 4 {
		return args.F32(float32(v))
	}
	return args.F64(v)
}

// Device returns the device the kernels run on.
func (k *Kernels) Device() driver.Device { return k.dev }
