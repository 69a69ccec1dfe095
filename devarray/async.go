package devarray

// AsyncStream is a stream that allocates and frees device memory in its
// own order (a stream-ordered pool, cuMemAllocAsync and cuMemFreeAsync):
// every device.Stream is one.
type AsyncStream interface {
	// MallocAsync allocates nbytes in the stream's order: work queued on
	// the stream from now on may use the memory.
	MallocAsync(nbytes int64) (Ptr, error)
	// FreeAsync frees memory MallocAsync returned, in the stream's order.
	FreeAsync(p Ptr) error
}
