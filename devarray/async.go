package devarray

import "fmt"

// AsyncStream is a stream that allocates and frees device memory in its
// own order (a stream-ordered pool, cuMemAllocAsync and cuMemFreeAsync):
// every device.Stream is one. EmptyAsync and FreeAsync take it.
type AsyncStream interface {
	// MallocAsync allocates nbytes in the stream's order: work queued on
	// the stream from now on may use the memory.
	MallocAsync(nbytes int64) (Ptr, error)
	// FreeAsync frees memory MallocAsync returned, in the stream's order.
	FreeAsync(p Ptr) error
}

// EmptyAsync allocates an uninitialised C-contiguous array of the given
// shape from s's device's default stream-ordered pool, in s's order: work
// queued on s may use it at once, work on another stream only after
// waiting for an event recorded on s after this call. s must be a stream
// of b's device. FreeAsync frees the array on a stream; Free frees it on s.
func EmptyAsync(b Backend, s AsyncStream, dtype DType, shape ...int) (*DevArray, error) {
	if b == nil {
		return nil, fmt.Errorf("devarray: empty async: %w", ErrNoBackend)
	}
	if s == nil {
		return nil, fmt.Errorf("devarray: empty async: no stream: %w", ErrNoBackend)
	}
	if !dtype.Valid() {
		return nil, fmt.Errorf("devarray: empty async: %v: %w", dtype, ErrDType)
	}
	lay, err := newLayout(shape, nil, dtype.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: empty async: %w", err)
	}
	nbytes := lay.size * dtype.Size()
	p, err := s.MallocAsync(nbytes)
	if err != nil {
		return nil, fmt.Errorf("devarray: allocate %v %v (%d bytes) on a stream: %w", shape, dtype, nbytes, err)
	}
	buf := &buffer{backend: b, device: b.DeviceID(), base: p, size: nbytes, owned: true, stream: s}
	return &DevArray{buf: buf, lay: lay, dtype: dtype}, nil
}

// FreeAsync frees an array EmptyAsync made, in the order of stream s (which
// may differ from the stream that allocated it): the work queued on s
// before it may still use the memory, and the memory may be reused by work
// queued on s after it. Work on other streams that uses the array must be
// ordered before the free (an event s waits on). As Free, it is idempotent,
// refuses a view (ErrNotOwner), and while a Hold on the memory is
// unreleased only marks the array freed: the last release frees it on s.
// An array not made by EmptyAsync is refused with ErrNotOwner.
func (a *DevArray) FreeAsync(s AsyncStream) error {
	if a == nil {
		return nil
	}
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: free async: %w", err)
	}
	if s == nil {
		return fmt.Errorf("devarray: free async: no stream: %w", ErrNoBackend)
	}
	if a.view {
		return fmt.Errorf("devarray: free async: this array is a view; free the array it was made from: %w", ErrNotOwner)
	}
	b := a.buf
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stream == nil {
		return fmt.Errorf("devarray: free async: the array's memory is not stream-ordered (free it with Free): %w", ErrNotOwner)
	}
	if b.freed {
		return nil
	}
	b.freed = true
	b.stream = s
	if b.holds > 0 {
		b.deferred = true
		return nil
	}
	return b.releaseMemory()
}

// StreamOrdered reports whether the array's memory came from a
// stream-ordered pool (EmptyAsync).
func (a *DevArray) StreamOrdered() bool {
	return a != nil && a.buf != nil && a.buf.stream != nil
}
