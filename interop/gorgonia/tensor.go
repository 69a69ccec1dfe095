package gorgonia

import (
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"

	"gorgonia.org/tensor"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/interop"
)

// A DevArray is a gorgonia tensor.Memory: Uintptr and MemSize.
var _ tensor.Memory = (*devarray.DevArray)(nil)

// tensorDTypes pairs gorgonia's element types with cuarray's. Go's int
// and uint are 64 bits wide on the platforms cuarray builds for.
var tensorDTypes = []struct {
	t tensor.Dtype
	d devarray.DType
}{
	{tensor.Bool, devarray.Bool},
	{tensor.Int8, devarray.Int8}, {tensor.Int16, devarray.Int16}, {tensor.Int32, devarray.Int32}, {tensor.Int64, devarray.Int64},
	{tensor.Uint8, devarray.Uint8}, {tensor.Uint16, devarray.Uint16}, {tensor.Uint32, devarray.Uint32}, {tensor.Uint64, devarray.Uint64},
	{tensor.Float32, devarray.Float32}, {tensor.Float64, devarray.Float64},
	{tensor.Complex64, devarray.Complex64}, {tensor.Complex128, devarray.Complex128},
	{tensor.Int, devarray.Int64}, {tensor.Uint, devarray.Uint64}, // read only: Int64 and Uint64 map back to the sized types
}

func dtypeFromTensor(t tensor.Dtype) (devarray.DType, error) {
	for _, p := range tensorDTypes {
		if p.t.Type == t.Type {
			return p.d, nil
		}
	}
	return devarray.Invalid, fmt.Errorf("gorgonia dtype %v has no cuarray dtype: %w", t, devarray.ErrDType)
}

func dtypeToTensor(d devarray.DType) (tensor.Dtype, error) {
	for _, p := range tensorDTypes {
		if p.d == d {
			return p.t, nil
		}
	}
	return tensor.Dtype{}, fmt.Errorf("%v has no gorgonia dtype: %w", d, devarray.ErrDType)
}

// FromDense borrows a *tensor.Dense's memory as a DevArray, without copying
// and without counting an allocation. A host tensor becomes an array of
// kind cpu with no backend (a descriptor to compute on in place or to hand
// on); the array keeps the tensor, and so its Go memory, reachable until it
// is freed. A tensor made by ToDense over device memory becomes an array on
// that device again. Strides are converted from elements to bytes.
func FromDense(t *tensor.Dense) (*devarray.DevArray, error) {
	if t == nil {
		return nil, fmt.Errorf("gorgonia: from tensor: nil *tensor.Dense: %w", interop.ErrInterface)
	}
	dtype, err := dtypeFromTensor(t.Dtype())
	if err != nil {
		return nil, fmt.Errorf("gorgonia: from tensor: %w", err)
	}
	var b devarray.Backend
	dev := devarray.DeviceID{Kind: devarray.CPU}
	if e, ok := t.Engine().(*DeviceEngine); ok {
		b, dev = e.backend, e.backend.DeviceID()
	} else if !t.IsNativelyAccessible() {
		return nil, fmt.Errorf("gorgonia: from tensor: memory of engine %T is not host memory and not cuarray's: %w", t.Engine(), devarray.ErrDevice)
	}
	shape := append([]int(nil), t.Shape()...)
	strides := make([]int64, len(shape))
	for i, s := range t.Strides() {
		if i < len(strides) {
			strides[i] = int64(s) * dtype.Size()
		}
	}
	if len(t.Strides()) != len(shape) {
		strides = nil // a scalar, or a shape gorgonia keeps without strides: C order
	}
	var ptr, size uintptr
	if t.Size() > 0 {
		ptr, size = t.Uintptr(), t.MemSize()
	}
	d := devarray.Descriptor{Ptr: devarray.Ptr(ptr), Shape: shape, Strides: strides, DType: dtype, Device: dev}
	keep := func() error { runtime.KeepAlive(t); return nil } // the array keeps the tensor reachable
	a, err := devarray.Wrap(b, d, devarray.WithBounds(devarray.Ptr(ptr), int64(size)), devarray.OnFree(keep))
	if err != nil {
		return nil, fmt.Errorf("gorgonia: from tensor: %w", err)
	}
	return a, nil
}

// ToDense makes a *tensor.Dense over a's memory without copying. Memory
// the CPU can read (cpu, cuda_host, managed) gives an ordinary tensor. Device
// memory (cuda, and sim, which stands in for it) gives a tensor whose
// engine is a DeviceEngine and which gorgonia marks NativelyInaccessible,
// so it does not read the memory from Go. Gorgonia tensors are dense in C
// order: a view with other strides must be copied first. The array must
// stay allocated while the tensor is used.
func ToDense(a *devarray.DevArray) (*tensor.Dense, error) {
	if err := a.Err(); err != nil {
		return nil, fmt.Errorf("gorgonia: to tensor: %w", err)
	}
	if !a.IsContiguous() {
		return nil, fmt.Errorf("gorgonia: to tensor: strides %v are not C order, and gorgonia tensors have no strides of their own (copy to a contiguous array first): %w", a.Strides(), interop.ErrInterface)
	}
	dt, err := dtypeToTensor(a.DType())
	if err != nil {
		return nil, fmt.Errorf("gorgonia: to tensor: %w", err)
	}
	if a.Size() == 0 {
		return nil, fmt.Errorf("gorgonia: to tensor: an empty array has no memory for a tensor to point at: %w", interop.ErrInterface)
	}
	opts := []tensor.ConsOpt{tensor.Of(dt), tensor.WithShape(a.Shape()...), tensor.FromMemory(a.Uintptr(), a.MemSize())}
	if kind := a.Device().Kind; kind == devarray.CUDA || kind == devarray.Sim {
		opts = append(opts, tensor.WithEngine(&DeviceEngine{backend: a.Backend()}))
	}
	var t *tensor.Dense
	if err := catch(func() { t = tensor.New(opts...) }); err != nil {
		return nil, fmt.Errorf("gorgonia: to tensor: %w", err)
	}
	return t, nil
}

// catch runs f, turning a panic of gorgonia's constructors into an error.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gorgonia.org/tensor: %v: %w", r, interop.ErrInterface)
		}
	}()
	f()
	return nil
}

// DeviceEngine is the gorgonia tensor.Engine of tensors over cuarray device
// memory: it allocates, frees, clears and copies through the device's
// backend (so the ledger counts it), and tells gorgonia that the memory is
// not accessible from Go.
type DeviceEngine struct {
	backend devarray.Backend
	clrErr  atomic.Pointer[error] // the last failure of Memclr, which cannot return it
}

// NewDeviceEngine returns the engine for tensors on b's device.
func NewDeviceEngine(b devarray.Backend) *DeviceEngine { return &DeviceEngine{backend: b} }

// deviceMemory is a tensor.Memory in device memory.
type deviceMemory struct {
	ptr  devarray.Ptr
	size int64
}

func (m deviceMemory) Uintptr() uintptr { return uintptr(m.ptr) }
func (m deviceMemory) MemSize() uintptr { return uintptr(m.size) }

var (
	_ tensor.Engine       = (*DeviceEngine)(nil)
	_ tensor.NonStdEngine = (*DeviceEngine)(nil)
)

// NonStdAlloc marks the engine as not using Go's allocator.
func (e *DeviceEngine) NonStdAlloc() {}

// AllocAccessible returns false: device memory is not Go memory.
func (e *DeviceEngine) AllocAccessible() bool { return false }

// Alloc allocates size bytes of device memory, counted in the ledger.
func (e *DeviceEngine) Alloc(size int64) (tensor.Memory, error) {
	p, err := e.backend.Malloc(size)
	if err != nil {
		return nil, fmt.Errorf("gorgonia: device engine: %w", err)
	}
	return deviceMemory{p, size}, nil
}

// Free frees memory from Alloc.
func (e *DeviceEngine) Free(mem tensor.Memory, size int64) error {
	if err := e.backend.Free(devarray.Ptr(mem.Uintptr())); err != nil {
		return fmt.Errorf("gorgonia: device engine: %w", err)
	}
	return nil
}

// Memset sets every byte of mem to zero when val is a zero value of its
// type; the device sets bytes, so other values are refused.
func (e *DeviceEngine) Memset(mem tensor.Memory, val any) error {
	if val == nil || !reflect.ValueOf(val).IsZero() {
		return fmt.Errorf("gorgonia: device engine: memset to %v: only zero is supported: %w", val, interop.ErrInterface)
	}
	return e.backend.Memset(devarray.Ptr(mem.Uintptr()), 0, int64(mem.MemSize()))
}

// Memclr sets every byte of mem to zero. gorgonia's interface has no error
// to return (a tensor's Zero calls it): a failure (after a sticky device
// fault, say, when nothing is cleared) is kept for Err.
func (e *DeviceEngine) Memclr(mem tensor.Memory) {
	if err := e.backend.Memset(devarray.Ptr(mem.Uintptr()), 0, int64(mem.MemSize())); err != nil {
		err = fmt.Errorf("gorgonia: device engine: clear %d bytes at %#x: %w", mem.MemSize(), mem.Uintptr(), err)
		e.clrErr.Store(&err)
	}
}

// Err returns the error of the last Memclr that failed, and forgets it:
// nil when every clear since the last call of Err was done.
func (e *DeviceEngine) Err() error {
	if p := e.clrErr.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// Memcpy copies src to dst within the device (the smaller of the two sizes).
func (e *DeviceEngine) Memcpy(dst, src tensor.Memory) error {
	n := int64(min(dst.MemSize(), src.MemSize()))
	return e.backend.Memcpy2D(devarray.Memcpy2D{
		Dst: devarray.Place{Dev: devarray.Ptr(dst.Uintptr())}, Src: devarray.Place{Dev: devarray.Ptr(src.Uintptr())},
		DstPitch: n, SrcPitch: n, Width: n, Height: 1,
	})
}

// Accessible refuses: device memory cannot be read from Go in place (copy
// it to the host with transfer or devarray.ToHost).
func (e *DeviceEngine) Accessible(mem tensor.Memory) (tensor.Memory, error) {
	return nil, fmt.Errorf("gorgonia: device engine: memory at %#x is device memory: %w", mem.Uintptr(), devarray.ErrDevice)
}

// WorksWith reports that the engine works with C-order data.
func (e *DeviceEngine) WorksWith(order tensor.DataOrder) bool { return order.IsRowMajor() }
