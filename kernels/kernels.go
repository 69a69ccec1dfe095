// Package kernels runs cuarray's GPU kernels on DevArrays: fill, scale,
// axpy, sum, a checksum, pack/unpack (gather a strided view into a
// contiguous buffer and scatter it back), and the two steps of filtered
// backprojection, RampFilter and Backproject (fbp.cu), which take scratch
// memory from an accounting.Workspace. Its slab methods (methods.go) are
// registered with package plan. On the cuda backend the kernels are
// CUDA C (kernels.cu, fbp.cu, radon.cu, compiled by `make ptx` into a
// fatbin with sm_90 machine code and compute_70 PTX, embedded); on the
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
// Every method returns only when its work is complete on the device and
// visible to the caller, on the device's default stream or on the stream
// given to WithStream. Kernels from Async(s) only queue their work on s
// and return at once (Sum and Checksum still wait, for their result):
// synchronize s, or record an event on it, before using what they write.
package kernels

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
)

// blockSize is the threads per block of every launch (a multiple of the
// warp size, which the reductions need).
const blockSize = 256

// maxBlocks caps the grid; the kernels' grid-stride loops cover the rest.
const maxBlocks = 8192

// Kernels runs kernels on one device. It is safe for concurrent use.
type Kernels struct {
	dev    driver.Device
	gpu    *kernel.Module      // the kernels' module, where they run from PTX (package kernel), or nil
	host   driver.MemoryAccess // the sim backend running the Go references, or nil
	stream driver.Stream       // nil: the default stream
	async  bool                // queue on stream and return at once
	// deflt is the device's default stream, which work launched with a
	// nil stream runs on: what a synchronous call without a stream waits for.
	deflt driver.Stream
}

// New prepares kernels for dev: on a GPU, and wherever the kernels run
// from their PTX, it loads the embedded module through package kernel,
// the public path a program's own kernels take (the driver compiles the
// PTX for the GPU at hand); on sim, which runs the Go references by
// default, it needs nothing.
func New(dev driver.Device) (*Kernels, error) {
	if dev == nil {
		return nil, fmt.Errorf("kernels: no device: %w", driver.ErrInvalidValue)
	}
	deflt, err := dev.ExternalStream(driver.LegacyDefaultStream)
	if err != nil {
		return nil, fmt.Errorf("kernels: the default stream of %v: %w", dev.DeviceID(), err)
	}
	k := &Kernels{dev: dev, deflt: deflt}
	switch b := dev.(type) {
	case driver.KernelRunner:
		if !driver.RunsModules(dev) {
			if h, ok := dev.(driver.MemoryAccess); ok {
				k.host = h
				break
			}
		}
		mod, err := kernel.Load(dev, moduleImage)
		if err != nil {
			return nil, fmt.Errorf("kernels: %w", err)
		}
		k.gpu = mod
	case driver.MemoryAccess:
		k.host = b
	default:
		return nil, fmt.Errorf("kernels: device %v can neither load PTX nor expose its memory: %w", dev.DeviceID(), driver.ErrInvalidValue)
	}
	return k, nil
}

// Image returns the module image the kernels load on a GPU: the embedded
// fatbin of kernels.cu, fbp.cu and radon.cu (sm_90 machine code and
// compute_70 PTX).
func Image() string { return moduleImage }

// WithStream returns kernels that run their work on s (nil: the default
// stream), after the work queued on s before it, and wait for it.
//
// Nil Kernels stay nil: their methods return driver.ErrInvalidValue.
func (k *Kernels) WithStream(s driver.Stream) *Kernels {
	if k == nil {
		return nil
	}
	c := *k
	c.stream, c.async = s, false
	return &c
}

// Async returns kernels that queue their work on s (nil: the device's
// default stream) and return at once, before the device has done it:
// synchronize s, or record an event on it, before reading what they
// write or freeing what they use. Scratch memory from a workspace is
// handed back while the work may still be queued, so a workspace used
// with Async kernels must only be used on s. Sum and Checksum wait for
// their result all the same.
func (k *Kernels) Async(s driver.Stream) *Kernels {
	if k == nil {
		return nil
	}
	c := *k
	c.stream, c.async = s, true
	return &c
}

// queue returns the stream the kernels' work runs on.
func (k *Kernels) queue() driver.Stream {
	if k.stream != nil {
		return k.stream
	}
	return k.deflt
}

// settle waits for the work queued so far on the kernels' stream, unless
// the kernels are Async: what makes every method synchronous.
func (k *Kernels) settle() error {
	if k.async {
		return nil
	}
	return k.queue().Synchronize()
}

// Close unloads the module.
func (k *Kernels) Close() error {
	if k == nil || k.gpu == nil {
		return nil
	}
	return k.gpu.Close()
}

// launch runs kernel name over n items on the GPU, and waits for it unless
// the kernels are Async.
func (k *Kernels) launch(name string, n int64, args ...kernel.Arg) error {
	blocks := min((n+blockSize-1)/blockSize, maxBlocks)
	cfg := kernel.Config{Grid: kernel.Dim3{uint32(max(blocks, 1)), 1, 1}, Block: kernel.Dim3{blockSize, 1, 1}}
	return k.launchConfig(name, cfg, args)
}

// launchConfig runs kernel name on the GPU with the launch shape cfg,
// through package kernel, on the kernels' stream, and waits for it unless
// the kernels are Async.
func (k *Kernels) launchConfig(name string, cfg kernel.Config, args []kernel.Arg) error {
	f, err := k.gpu.Kernel(name)
	if err != nil {
		return err
	}
	if k.async {
		return f.Queue(k.stream, cfg, args...) // the caller keeps the arrays, as Async documents
	}
	return f.LaunchOn(k.stream, cfg, args...)
}

// span is the device memory an array touches, for MemoryAccess, and the
// offset of element 0 inside it.
func span(a *devarray.DevArray) (driver.Range, int64) {
	lo, hi := a.Extent()
	return driver.Range{Ptr: a.Ptr() + devarray.Ptr(lo), N: hi - lo}, -lo
}

// access runs the Go reference of kernel name on the memory of arrays, of
// which the first written may be written and the rest are only read (the
// declaration sim's stream race checker judges the launch by).
func (k *Kernels) access(name string, f func(mem [][]byte, base []int64) error, written int, arrays ...*devarray.DevArray) error {
	return k.accessBytes(name, -1, -1, f, written, arrays...)
}

// accessBytes is access for a reference whose bytes of device memory read
// and written are known (read, written; -1 when not), as the PTX
// interpreter would count the kernel's loads and stores: the ledger counts
// them with the launch.
func (k *Kernels) accessBytes(name string, read, written int64, f func(mem [][]byte, base []int64) error, writable int, arrays ...*devarray.DevArray) error {
	ranges := make([]driver.Range, len(arrays))
	bases := make([]int64, len(arrays))
	for i, a := range arrays {
		ranges[i], bases[i] = span(a)
		ranges[i].ReadOnly = i >= writable
	}
	return k.hostAccessBytes(name, read, written, ranges, func(mem [][]byte) error { return f(mem, bases) })
}

// hostAccess launches f, kernel name's Go reference, on device ranges
// through sim's MemoryAccess, on the kernels' stream as a GPU launches the
// kernel, and waits for it unless the kernels are Async. The ledger counts
// the launch under the kernel's name, without bytes: a reference's
// accesses are not counted, unless hostAccessBytes is told them.
func (k *Kernels) hostAccess(name string, ranges []driver.Range, f func([][]byte) error) error {
	return k.hostAccessBytes(name, -1, -1, ranges, f)
}

// hostAccessBytes is hostAccess with the bytes the kernel reads and
// writes (-1: not known), which the ledger counts with the launch as it
// counts an interpreted kernel's.
func (k *Kernels) hostAccessBytes(name string, read, written int64, ranges []driver.Range, f func([][]byte) error) error {
	if err := k.host.Launch(k.stream, ranges, f); err != nil {
		return err
	}
	k.dev.Ledger().RecordLaunch(name, read, written)
	return k.settle()
}

// misaligned is, on sim, the launch of a kernel whose access what is not
// aligned to its type: sim faults as the GPU does (a sticky
// CUDA_ERROR_MISALIGNED_ADDRESS), and the call returns that error.
func (k *Kernels) misaligned(what string) error {
	f, ok := k.host.(interface {
		LaunchMisaligned(s driver.Stream, what string) error
	})
	if !ok {
		return fmt.Errorf("kernels: misaligned access: %s: %w", what, driver.ErrInvalidValue)
	}
	if err := f.LaunchMisaligned(k.stream, what); err != nil {
		return err
	}
	return k.settle()
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

// scalar is v as the kernel's float type.
func scalar(e element, v float64) kernel.Arg {
	if e.size == 4 {
		return kernel.F32(float32(v))
	}
	return kernel.F64(v)
}

// Device returns the device the kernels run on.
func (k *Kernels) Device() driver.Device {
	if k == nil {
		return nil
	}
	return k.dev
}
