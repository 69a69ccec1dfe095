package devarray

import "errors"

// Sentinel errors. Every error returned by this package wraps one of them, so
// callers can test with errors.Is. Their own text has no package prefix: an
// error that wraps one says "devarray: " once, at its start ("devarray: from
// host: shape [-2 3]: dimension 0 is negative: invalid shape or index").
var (
	// ErrFreed: the array's memory, or the memory of the array it views, was freed.
	ErrFreed = errors.New("memory was freed")
	// ErrNotOwner: Free was called on a view; free the array it was made from.
	ErrNotOwner = errors.New("not the owner of the memory")
	// ErrShape: a shape, index, axis or stride is invalid for the operation.
	ErrShape = errors.New("invalid shape or index")
	// ErrOverflow: a size or offset does not fit in 64 bits.
	ErrOverflow = errors.New("size or offset overflows int64")
	// ErrNotViewable: the operation would need a copy, and views never copy.
	ErrNotViewable = errors.New("not expressible as a view")
	// ErrDType: an unknown or mismatched element type.
	ErrDType = errors.New("invalid dtype")
	// ErrDevice: an unknown device kind, or memory on the wrong device.
	ErrDevice = errors.New("invalid device")
	// ErrReadOnly: a write to a read-only array.
	ErrReadOnly = errors.New("array is read-only")
	// ErrNoBackend: a borrowed array without a backend cannot move data.
	ErrNoBackend = errors.New("no backend to move data")
	// ErrHostSize: a host buffer's length does not match the array.
	ErrHostSize = errors.New("host buffer size mismatch")
	// ErrBounds: a descriptor reaches outside the allocation it claims to lie in.
	ErrBounds = errors.New("out of bounds")
	// ErrMisaligned: a descriptor of device memory whose address or strides
	// are not multiples of its dtype's alignment (DType.Align): a kernel's
	// load of such an element faults on a GPU.
	ErrMisaligned = errors.New("address or stride not a multiple of the dtype's alignment")
	// ErrNil: a nil *DevArray, a zero DevArray (one not made by Empty,
	// Zeros, FromHost, FromBytes, Wrap or a view), or a nil function
	// argument. Methods that return no error return zero values instead.
	ErrNil = errors.New("nil or zero DevArray, or nil function")
	// ErrNotManaged: a host view of an array whose memory is not managed
	// (EmptyManaged): the host cannot touch device memory in place.
	ErrNotManaged = errors.New("not managed memory")
	// ErrNoPageableAccess: the device cannot touch pageable host memory in
	// place (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0, as on a GPU
	// without HMM or ATS), so FromPageable cannot give it a Go slice.
	ErrNoPageableAccess = errors.New("the device cannot access pageable host memory in place (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0): copy the data to the device (FromHost), or use page-locked mapped memory (package pinned) or managed memory (EmptyManaged)")
	// ErrSharesMemory: a copy between host memory and an array of pageable
	// memory used in place (FromPageable) whose bytes the host memory
	// shares: the driver's copies are undefined for memory that overlaps.
	ErrSharesMemory = errors.New("host memory shares bytes with the pageable array used in place")
)
