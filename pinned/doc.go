// Package pinned allocates page-locked host memory, the memory the GPU's
// DMA engines can reach without a bounce buffer: plain pinned memory for
// fast copies, Mapped memory that kernels read and write in place through
// its device address, WriteCombined memory that the device reads fast and
// the CPU should only write, and Portable memory that every context sees.
//
//	buf, err := pinned.Alloc(dev, 64<<20, pinned.Mapped)
//	if err != nil { ... }
//	defer buf.Free()
//	xs := buf.Float32()          // the same memory as a Go slice
//	p, err := buf.DevPtr()       // its device address (mapped buffers)
//	a, err := buf.DeviceArray(devarray.Float32, 4096, 4096) // a kernel's view
//
// A Mapped request on a context without CU_CTX_MAP_HOST fails with an
// error naming the flag (driver.ErrNotMapped); it never falls back to
// unmapped memory.
//
// Register page-locks memory the program already has. Memory from mmap or
// C is registered as it is. Go heap memory is handled, not refused: it is
// pinned with runtime.Pinner for as long as it is registered, so the
// garbage collector can neither free nor move it under the driver.
//
// A buffer that an async copy still uses cannot be freed: Free returns
// ErrBusy until the copy's event has completed (package transfer guards
// the buffers of every async copy). A Pool caches buffers in size classes
// that waste at most an eighth of a request, and reuses a buffer only once
// the last async copy that used it has finished.
//
// Closing the device frees the page-locked memory still allocated on it.
// Buffers and pools of a closed device never touch that memory again:
// Bytes and the typed slices return nil, and every method that returns an
// error returns one wrapping ErrClosed (driver.ErrClosed). Slices taken
// before the Close must not be used after it, as after Free. Nil and zero
// Buffers and Pools return ErrNil; nothing in the package panics on
// them.
//
// Every byte is counted in the device's ledger: allocations under the
// kinds pinned, mapped, write-combined or registered, and what a pool holds
// without handing it out as cached.
package pinned
