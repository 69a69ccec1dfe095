package devarray

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// buffer is the memory behind an array and all its views.
type buffer struct {
	backend Backend // nil only for a borrowed array without one
	device  DeviceID
	base    Ptr
	size    int64 // bytes; -1 when a borrowed array's allocation is unknown
	owned   bool
	release func() error // borrowed arrays: called once by Free
	// stream, for memory from a stream-ordered pool (EmptyAsync), is the
	// stream it is freed on: the allocating one, or FreeAsync's. b.mu
	// guards it.
	stream AsyncStream
	// managed: the memory is managed (EmptyManaged), valid on the host too.
	managed bool
	// pageable: the memory is a Go slice the device uses in place
	// (FromPageable), pinned until Free.
	pageable bool

	// mu guards freed, holds and deferred; it is never held while data
	// moves. Use and copies hold the buffer (holds) instead, so memory is
	// never freed under a copy and never touched after Free.
	mu    sync.Mutex
	freed bool
	// holds counts the Holds not yet released; while there are any, Free
	// only marks the array freed and the last release frees the memory.
	holds    int
	deferred bool
}

// DevArray is an n-dimensional array in device memory: a pointer, a shape,
// strides in bytes, an element type and a device, like the CUDA Array
// Interface describes. Views (Slice, Index, Reshape, Permute, ...) share the
// memory of the array they come from and never copy or allocate.
//
// An array made by Empty, Zeros or FromHost owns its memory and Free releases
// it. An array made by Wrap borrows memory owned elsewhere: it counts no
// allocation and its Free only calls the release function it was given.
// After the memory is freed, every operation that would touch it returns
// ErrFreed. A DevArray's metadata is immutable, so it can be shared between
// goroutines; concurrent writes to overlapping memory are the caller's to order.
type DevArray struct {
	buf      *buffer
	offset   int64 // byte offset of element 0 from buf.base
	lay      layout
	dtype    DType
	readonly bool
	view     bool
}

// Empty allocates an uninitialised C-contiguous array of the given shape on b.
func Empty(b Backend, dtype DType, shape ...int) (*DevArray, error) {
	if b == nil {
		return nil, fmt.Errorf("devarray: empty: %w", ErrNoBackend)
	}
	if !dtype.Valid() {
		return nil, fmt.Errorf("devarray: empty: %v: %w", dtype, ErrDType)
	}
	lay, err := newLayout(shape, nil, dtype.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: empty: %w", err)
	}
	nbytes := lay.size * dtype.Size()
	p, err := b.Malloc(nbytes)
	if err != nil {
		return nil, fmt.Errorf("devarray: allocate %v %v (%d bytes): %w", shape, dtype, nbytes, err)
	}
	buf := &buffer{backend: b, device: b.DeviceID(), base: p, size: nbytes, owned: true}
	return &DevArray{buf: buf, lay: lay, dtype: dtype}, nil
}

// Zeros allocates a C-contiguous array of the given shape filled with zero bytes.
func Zeros(b Backend, dtype DType, shape ...int) (*DevArray, error) {
	a, err := Empty(b, dtype, shape...)
	if err != nil {
		return nil, err
	}
	if n := a.NBytes(); n > 0 {
		if err := b.Memset(a.buf.base, 0, n); err != nil {
			return nil, joinFree(fmt.Errorf("devarray: zeros: %w", err), a)
		}
	}
	return a, nil
}

// joinFree frees a after a failure half-way, so nothing stays allocated.
func joinFree(err error, a *DevArray) error {
	if ferr := a.Free(); ferr != nil {
		return fmt.Errorf("%w (and freeing after it: %v)", err, ferr)
	}
	return err
}

// WrapOption configures Wrap.
type WrapOption func(*wrapConfig)

type wrapConfig struct {
	bounded bool
	base    Ptr
	size    int64
	release func() error
}

// WithBounds tells Wrap the allocation the memory lies in (base address and
// size in bytes), so that a descriptor reaching outside it is refused.
func WithBounds(base Ptr, size int64) WrapOption {
	return func(c *wrapConfig) { c.bounded, c.base, c.size = true, base, size }
}

// OnFree gives Wrap a function that Free calls once, for example a DLPack
// deleter or an IPC close.
func OnFree(release func() error) WrapOption {
	return func(c *wrapConfig) { c.release = release }
}

// Wrap borrows memory described by d without copying and without counting
// an allocation. b may be nil when no data will be moved through the array;
// when it is not, d.Device must be b's device. Unless the memory is
// pageable host memory (kind CPU), its address and strides must be
// multiples of the dtype's alignment (DType.Align: the item size, half of
// it for complex types, as NumPy aligns them), else Wrap returns an error
// wrapping ErrMisaligned: a kernel cannot load such elements on a GPU.
func Wrap(b Backend, d Descriptor, opts ...WrapOption) (*DevArray, error) {
	cfg := wrapConfig{size: -1}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if !d.DType.Valid() {
		return nil, fmt.Errorf("devarray: wrap: %v: %w", d.DType, ErrDType)
	}
	if b != nil && b.DeviceID() != d.Device {
		return nil, fmt.Errorf("devarray: wrap: memory on %v cannot be used through a backend for %v: %w", d.Device, b.DeviceID(), ErrDevice)
	}
	lay, err := newLayout(d.Shape, d.Strides, d.DType.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: wrap: %w", err)
	}
	if d.Ptr == 0 && lay.size > 0 {
		return nil, fmt.Errorf("devarray: wrap: null pointer for %d elements: %w", lay.size, ErrBounds)
	}
	if err := checkAlign(d, lay); err != nil {
		return nil, fmt.Errorf("devarray: wrap: %w", err)
	}
	base, offset := d.Ptr, int64(0)
	if cfg.bounded && cfg.size < 0 {
		return nil, fmt.Errorf("devarray: wrap: allocation size %d is negative: %w", cfg.size, ErrBounds)
	}
	if cfg.bounded {
		base = cfg.base
		if d.Ptr < base {
			return nil, fmt.Errorf("devarray: wrap: pointer %v lies before its allocation at %v: %w", d.Ptr, base, ErrBounds)
		}
		offset = int64(d.Ptr - base)
		if !lay.within(offset, cfg.size) {
			return nil, fmt.Errorf("devarray: wrap: bytes [%d, %d) from %v reach outside the %d-byte allocation at %v: %w",
				offset+lay.lo, offset+lay.hi, base, cfg.size, base, ErrBounds)
		}
	}
	buf := &buffer{backend: b, device: d.Device, base: base, size: cfg.size, release: cfg.release}
	return &DevArray{buf: buf, offset: offset, lay: lay, dtype: d.DType, readonly: d.ReadOnly}, nil
}

// checkAlign refuses a descriptor of memory a kernel may read (any kind
// but pageable host memory) whose address, or the stride of an axis of
// more than one element, is not a multiple of the dtype's alignment: on a
// GPU, a kernel's load of such an element is CUDA_ERROR_MISALIGNED_ADDRESS,
// a sticky error that ends the context and every library's work on it.
func checkAlign(d Descriptor, lay layout) error {
	align := d.DType.Align()
	if d.Device.Kind == CPU || align <= 1 || lay.size == 0 {
		return nil
	}
	if int64(d.Ptr)%align != 0 {
		return fmt.Errorf("%v at %v: the address must be a multiple of its alignment, %d bytes: %w", d.DType, d.Ptr, align, ErrMisaligned)
	}
	for i, n := range lay.shape {
		if n > 1 && lay.strides[i]%align != 0 {
			return fmt.Errorf("%v with strides %v: each stride must be a multiple of its alignment, %d bytes: %w", d.DType, lay.strides, align, ErrMisaligned)
		}
	}
	return nil
}

// Free releases the array's memory. For an owned array it frees the device
// memory (an array EmptyAsync made: in the order of the stream that
// allocated it, as FreeAsync on that stream); for a borrowed one it calls
// the release function given to Wrap.
// Free is idempotent. Calling it on a view returns ErrNotOwner and frees nothing.
// While a Hold on the memory is unreleased, Free only marks the array freed
// (its operations return ErrFreed) and the last release frees the memory.
// When the backend fails to free it (after a device fault, an error
// wrapping driver.ErrContextFailed), Free returns that error and the array
// counts as freed all the same: a second Free returns nil and frees
// nothing, and the memory stays the device's until the device is closed.
//
// A nil DevArray's Free returns nil; a zero one's returns ErrNil.
func (a *DevArray) Free() error {
	if a == nil {
		return nil
	}
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: free: %w", err)
	}
	if a.view {
		return fmt.Errorf("devarray: free: this array is a view; free the array it was made from: %w", ErrNotOwner)
	}
	b := a.buf
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil
	}
	b.freed = true
	if b.holds > 0 {
		b.deferred = true // the last Hold's release frees the memory
		return nil
	}
	return b.releaseMemory()
}

// releaseMemory frees an owned buffer's memory or calls a borrowed one's
// release function. b.mu is held.
func (b *buffer) releaseMemory() error {
	switch {
	case b.owned && b.stream != nil:
		if err := b.stream.FreeAsync(b.base); err != nil {
			return fmt.Errorf("devarray: free %v on a stream: %w", b.base, err)
		}
	case b.owned:
		if err := b.backend.Free(b.base); err != nil {
			return fmt.Errorf("devarray: free %v: %w", b.base, err)
		}
	case b.release != nil:
		if err := b.release(); err != nil {
			return fmt.Errorf("devarray: release borrowed %v: %w", b.base, err)
		}
	}
	return nil
}

// Err returns ErrFreed once the memory behind the array was freed, ErrNil
// for a nil or zero DevArray, else nil.
func (a *DevArray) Err() error {
	if err := a.check(); err != nil {
		return err
	}
	a.buf.mu.Lock()
	defer a.buf.mu.Unlock()
	if a.buf.freed {
		return ErrFreed
	}
	return nil
}

// check returns ErrNil for a nil DevArray and for a zero one, whose
// memory is no buffer at all.
func (a *DevArray) check() error {
	if a == nil || a.buf == nil {
		return ErrNil
	}
	return nil
}

// The accessors below return zero values for a nil or zero DevArray
// (check), so that describing a bad array never panics.

// Shape returns a copy of the array's shape.
func (a *DevArray) Shape() []int {
	if a == nil {
		return nil
	}
	return append([]int(nil), a.lay.shape...)
}

// Strides returns a copy of the array's strides in bytes.
func (a *DevArray) Strides() []int64 {
	if a == nil {
		return nil
	}
	return append([]int64(nil), a.lay.strides...)
}

// NDim returns the number of dimensions.
func (a *DevArray) NDim() int {
	if a == nil {
		return 0
	}
	return len(a.lay.shape)
}

// Size returns the number of elements.
func (a *DevArray) Size() int64 {
	if a.check() != nil {
		return 0
	}
	return a.lay.size
}

// NBytes returns the number of bytes the elements occupy when packed
// (Size × element size); a strided view spans more, see Extent.
func (a *DevArray) NBytes() int64 {
	if a.check() != nil {
		return 0
	}
	return a.lay.size * a.dtype.Size()
}

// DType returns the element type.
func (a *DevArray) DType() DType {
	if a == nil {
		return Invalid
	}
	return a.dtype
}

// Device returns the device the memory is on.
func (a *DevArray) Device() DeviceID {
	if a.check() != nil {
		return DeviceID{}
	}
	return a.buf.device
}

// Backend returns the backend that moves the array's data (nil for a
// borrowed array wrapped without one).
func (a *DevArray) Backend() Backend {
	if a.check() != nil {
		return nil
	}
	return a.buf.backend
}

// Ptr returns the address of element 0 (all indices zero). It is a number,
// not a reference: it is valid only while the memory is not freed.
func (a *DevArray) Ptr() Ptr {
	if a.check() != nil {
		return 0
	}
	return a.buf.base + Ptr(a.offset)
}

// ReadOnly reports whether writes through this array are refused.
func (a *DevArray) ReadOnly() bool { return a != nil && a.readonly }

// Owned reports whether the memory was allocated by this package (Empty,
// Zeros, FromHost) rather than borrowed (Wrap).
func (a *DevArray) Owned() bool { return a.check() == nil && a.buf.owned }

// IsView reports whether the array was made from another by a view operation.
func (a *DevArray) IsView() bool { return a != nil && a.view }

// IsContiguous reports whether the elements are packed in row-major (C) order.
func (a *DevArray) IsContiguous() bool {
	if a.check() != nil {
		return false
	}
	return isCContiguous(a.lay.shape, a.lay.strides, a.dtype.Size())
}

// IsFContiguous reports whether the elements are packed in column-major (Fortran) order.
func (a *DevArray) IsFContiguous() bool {
	if a.check() != nil {
		return false
	}
	return isFContiguous(a.lay.shape, a.lay.strides, a.dtype.Size())
}

// Extent returns the lowest byte the array touches and one past the highest,
// relative to Ptr(). Negative strides make lo negative; an empty array
// returns 0, 0. Ptr()+lo .. Ptr()+hi must lie inside the allocation.
func (a *DevArray) Extent() (lo, hi int64) {
	if a.check() != nil {
		return 0, 0
	}
	return a.lay.lo, a.lay.hi
}

// ByteOffset returns the offset in bytes, from Ptr(), of the element at idx.
// Every index must be in range; the arithmetic cannot overflow because the
// layout was checked when the array was made.
func (a *DevArray) ByteOffset(idx ...int) (int64, error) {
	if err := a.check(); err != nil {
		return 0, fmt.Errorf("devarray: byte offset: %w", err)
	}
	if len(idx) != len(a.lay.shape) {
		return 0, fmt.Errorf("devarray: %d indices for %d dimensions: %w", len(idx), len(a.lay.shape), ErrShape)
	}
	var off int64
	for i, x := range idx {
		if x < 0 || x >= a.lay.shape[i] {
			return 0, fmt.Errorf("devarray: index %d out of range [0, %d) on axis %d: %w", x, a.lay.shape[i], i, ErrShape)
		}
		off += int64(x) * a.lay.strides[i]
	}
	return off, nil
}

// Use runs f while the memory of every array given is guaranteed to stay
// allocated. It returns ErrFreed without calling f when any of the memory is
// already gone. Use takes no lock while f runs: it holds each buffer as Hold
// does, so a Free of one of the arrays from another goroutine (or from f)
// marks it freed at once and the memory is released when f returns, and f
// may call anything on the arrays (Err, Hold, a copy) without deadlocking.
// Arrays that share memory (views of one array) are held once. An error
// releasing memory whose Free was deferred to the end of f is joined to f's.
// Kernels and interop code that hand an array's pointer to other code run
// that code inside Use.
//
// A nil f, or a nil or zero array, is ErrNil.
func Use(f func() error, arrays ...*DevArray) (err error) {
	if f == nil {
		return fmt.Errorf("devarray: use: no function: %w", ErrNil)
	}
	bufs := make([]*buffer, 0, len(arrays))
	for i, a := range arrays {
		if err := a.check(); err != nil {
			return fmt.Errorf("devarray: use: array %d of %d: %w", i+1, len(arrays), err)
		}
		if !slices.Contains(bufs, a.buf) {
			bufs = append(bufs, a.buf)
		}
	}
	for i, b := range bufs {
		if !b.acquire() {
			return errors.Join(fmt.Errorf("devarray: array %d of %d: %w", i+1, len(bufs), ErrFreed),
				releaseAll(bufs[:i]))
		}
	}
	defer func() { err = errors.Join(err, releaseAll(bufs)) }()
	return f()
}

// acquire holds b's memory (as Hold does) unless it is already freed, and
// reports whether it did.
func (b *buffer) acquire() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return false
	}
	b.holds++
	return true
}

// releaseAll drops one hold on each buffer (acquire's), freeing the memory
// whose Free was deferred to it.
func releaseAll(bufs []*buffer) error {
	var errs []error
	for _, b := range bufs {
		errs = append(errs, b.unhold())
	}
	return errors.Join(errs...)
}

// Uintptr returns the lowest address the array touches (Ptr when no
// stride is negative). With MemSize it makes a DevArray a
// gorgonia.org/tensor Memory.
func (a *DevArray) Uintptr() uintptr {
	lo, _ := a.Extent()
	return uintptr(a.Ptr()) + uintptr(lo)
}

// MemSize returns the number of bytes from Uintptr to one past the highest
// byte the array touches.
func (a *DevArray) MemSize() uintptr {
	lo, hi := a.Extent()
	return uintptr(hi - lo)
}
