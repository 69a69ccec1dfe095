//go:build cgo

package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pool"
)

// errNotAllocator: a free of a pointer the allocator did not hand out (or
// one it already took back).
var errNotAllocator = errors.New("libcuarray allocator: pointer not allocated by cuarray's allocator, or freed twice; ignored")

// errNoAllocatorDevice: an allocation for a device index that no
// cuarray_allocator_use named.
var errNoAllocatorDevice = errors.New("libcuarray allocator: no cuarray device for this device index (call cuarray_allocator_use first)")

// allocTarget is what the allocator hands out memory from for one device
// index: the device, and its pool when the pool is on.
type allocTarget struct {
	dev  device.Device
	pool *pool.Pool // nil: straight from the device, one ledger entry per allocation
	// streamOrdered: the memory comes from the device's default
	// stream-ordered pool (allocator_async.go): without pool, each
	// allocation is a cuMemAllocAsync on the caller's stream; with it, the
	// pool's segments are.
	streamOrdered bool
}

// kind is the ledger kind of the memory t hands out.
func (t allocTarget) kind() accounting.Kind {
	if t.streamOrdered {
		return accounting.StreamOrdered
	}
	return accounting.Device
}

// allocation is a block the allocator handed out, as its free needs it.
type allocation struct {
	size   int64
	index  int
	target allocTarget
	thread uintptr // the thread that allocated it on its per-thread default stream, else 0
	stream uintptr // the handle of the stream it was allocated on
}

// AllocatorStats are the allocator's own counts of the calls it served,
// beside the ledger's (cuarray_allocator_stats).
type AllocatorStats struct {
	Mallocs   int64 `json:"mallocs"`     // malloc calls, all of them
	Allocated int64 `json:"allocated"`   // mallocs that handed out memory (size > 0)
	Zero      int64 `json:"zero"`        // mallocs of 0 bytes (NULL, no memory, no error)
	Failed    int64 `json:"failed"`      // mallocs that returned NULL with an error
	Frees     int64 `json:"frees"`       // frees of memory it handed out
	Ignored   int64 `json:"ignored"`     // frees of NULL (nothing to do)
	Foreign   int64 `json:"foreign"`     // frees of pointers it did not hand out (ignored, error recorded)
	Live      int64 `json:"live"`        // blocks handed out and not freed
	InUse     int64 `json:"in_use"`      // bytes asked for by the live blocks
	PeakInUse int64 `json:"peak_in_use"` // the highest InUse
	Errors    int64 `json:"errors"`      // errors recorded, by all threads (each thread's last: cuarray_allocator_last_error)
}

// allocator is the state behind the allocator entry points: the device for
// each device index, the pools made so far (one per device, kept while the
// process lives), the stream wrappers by handle, the live blocks and the
// counts (each thread's last error is its own: allocator_error.c). One mutex: every call holds it only around map updates, never
// around a device call.
var allocator = struct {
	sync.Mutex
	targets map[int]allocTarget
	pools   map[device.Device]*pool.Pool
	// asyncPools are the pools over devices' default stream-ordered pools
	asyncPools map[device.Device]*pool.Pool
	streams    map[streamKey]device.Stream
	live       map[uintptr]allocation
	stats      AllocatorStats
}{
	targets:    map[int]allocTarget{},
	pools:      map[device.Device]*pool.Pool{},
	asyncPools: map[device.Device]*pool.Pool{},
	streams:    map[streamKey]device.Stream{},
	live:       map[uintptr]allocation{},
}

// streamKey names a stream wrapper: a device, a handle and, for the
// per-thread default stream (handle 2), the OS thread whose stream it is.
type streamKey struct {
	dev    device.Device
	handle uintptr
	thread uintptr
}

// keyFor returns the key of handle's stream on d for the calling thread:
// 0 (CUDA's default stream, as PyTorch and CuPy pass it) is the legacy
// default stream; CU_STREAM_PER_THREAD names a different stream on each OS
// thread, so its key names the thread.
func keyFor(d device.Device, handle uintptr) streamKey {
	k := streamKey{dev: d, handle: handle}
	switch handle {
	case 0:
		k.handle = driver.LegacyDefaultStream
	case driver.PerThreadDefaultStream:
		k.thread = threadID()
	}
	return k
}

// useAllocator makes the device behind handle dev the one the allocator
// serves for its ordinal (PyTorch's and CuPy's device index), from its pool
// when usePool is set; limit > 0 sets the device ledger's limit on device
// memory, 0 removes it, < 0 leaves it. It returns the device index.
func useAllocator(dev uint64, usePool bool, limit int64) (int, error) {
	return useAllocatorOf(dev, usePool, false, limit)
}

// useAllocatorOf is useAllocator with the memory from the device's default
// stream-ordered pool when streamOrdered is set (allocator_async.go); the
// limit is then the ledger's on stream-ordered memory.
func useAllocatorOf(dev uint64, usePool, streamOrdered bool, limit int64) (int, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	if d == nil {
		return 0, fmt.Errorf("allocator use: no device: %w", errHandle)
	}
	t := allocTarget{dev: d, streamOrdered: streamOrdered}
	var mp device.MemPool
	if streamOrdered {
		if mp, err = d.DefaultMemPool(); err != nil {
			return 0, fmt.Errorf("allocator use: stream-ordered pool: %w", err)
		}
	}
	if limit >= 0 {
		if err := d.Ledger().SetLimit(t.kind(), limit); err != nil {
			return 0, fmt.Errorf("allocator use: limit %d bytes: %w", limit, err)
		}
	}
	index := d.DeviceID().Ordinal
	allocator.Lock()
	defer allocator.Unlock()
	if usePool {
		pools, opts := allocator.pools, []pool.Option(nil)
		if streamOrdered {
			pools, opts = allocator.asyncPools, []pool.Option{pool.FromMemPool(mp)}
		}
		p, ok := pools[d]
		if !ok {
			p = pool.New(d, opts...)
			pools[d] = p
		}
		t.pool = p
	}
	allocator.targets[index] = t
	return index, nil
}

// streamFor returns the Stream for another library's stream handle on d,
// called on the thread that uses it: 0 (CUDA's default stream, as PyTorch
// and CuPy pass it) is the legacy default stream. Wrappers are kept by
// handle (keyFor), so that the pool sees one Stream for one stream and
// reuses a block at once only on the stream that freed it: the per-thread
// default stream (2) has one wrapper for each OS thread, as CUDA gives
// each thread its own stream, and a block one thread freed on its stream
// 2 is not another thread's at once (CuPy passes 2 with
// CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1). A wrapper of handle 2 runs its
// calls on the thread that calls it, which for the allocator's calls is
// the thread it was made for: an entry point runs on its caller's thread.
func streamFor(d device.Device, handle uintptr) (device.Stream, error) {
	k := keyFor(d, handle)
	handle = k.handle
	allocator.Lock()
	s, ok := allocator.streams[k]
	allocator.Unlock()
	if ok {
		return s, nil
	}
	s, err := d.ExternalStream(handle)
	if err != nil {
		return nil, err
	}
	allocator.Lock()
	defer allocator.Unlock()
	if old, ok := allocator.streams[k]; ok {
		_ = s.Close() // another thread wrapped it first; Close releases only the wrapper
		return old, nil
	}
	allocator.streams[k] = s
	return s, nil
}

// allocate hands out size bytes for the device index on the stream with
// the given handle: 0 bytes are address 0 with no error (PyTorch's and
// CuPy's own allocators do the same).
func allocate(size int64, index int, stream uintptr) (uintptr, error) {
	_ = reapKeeps() // as empty: memory DLPack consumers let go of fits first; an error there is not this malloc's
	allocator.Lock()
	allocator.stats.Mallocs++
	t, ok := allocator.targets[index]
	allocator.Unlock()
	p, err := allocateFrom(t, ok, size, index, stream)
	allocator.Lock()
	defer allocator.Unlock()
	switch {
	case err != nil:
		allocator.stats.Failed++
	case p == 0:
		allocator.stats.Zero++
	default:
		a := allocation{size: size, index: index, target: t, stream: stream}
		if stream == driver.PerThreadDefaultStream {
			a.thread = threadID()
		}
		allocator.live[p] = a
		allocator.stats.Allocated++
		allocator.stats.Live++
		allocator.stats.InUse += size
		allocator.stats.PeakInUse = max(allocator.stats.PeakInUse, allocator.stats.InUse)
	}
	return p, err
}

func allocateFrom(t allocTarget, ok bool, size int64, index int, stream uintptr) (uintptr, error) {
	switch {
	case size < 0:
		return 0, fmt.Errorf("libcuarray allocator: malloc %d bytes on device %d: %w", size, index, device.ErrInvalidValue)
	case !ok:
		return 0, fmt.Errorf("libcuarray allocator: malloc %d bytes on device %d: %w", size, index, errNoAllocatorDevice)
	case size == 0:
		return 0, nil
	}
	defer saveContext().restore()
	if t.pool == nil && t.streamOrdered {
		return allocateAsync(t, size, stream)
	}
	if t.pool == nil {
		p, err := t.dev.Malloc(size)
		if err != nil {
			return 0, fmt.Errorf("libcuarray allocator: malloc %d bytes on %v: %w", size, t.dev.DeviceID(), err)
		}
		return uintptr(p), nil
	}
	s, err := streamFor(t.dev, stream)
	if err != nil {
		return 0, fmt.Errorf("libcuarray allocator: malloc %d bytes on %v, stream %#x: %w", size, t.dev.DeviceID(), stream, err)
	}
	p, err := t.pool.AllocAsync(size, s)
	if err != nil {
		forgetStream(t.dev, stream, err)
		return 0, fmt.Errorf("libcuarray allocator: malloc %d bytes on %v, stream %#x: %w%s", size, t.dev.DeviceID(), stream, err, deviceReason(err))
	}
	return uintptr(p), nil
}

// deviceReason returns the device's own error, in parentheses, when err is the
// pool's out-of-memory error with one (the ledger's limit and its figures,
// which the pool's message leaves out), else "".
func deviceReason(err error) string {
	var oom *pool.OutOfMemoryError
	if errors.As(err, &oom) && oom.Err != nil {
		return " (" + oom.Err.Error() + ")"
	}
	return ""
}

// release frees a block the allocator handed out. With the pool, the free
// is ordered on the stream with the given handle: the block is reusable on
// that stream at once and on others once the stream has passed this point
// (and the stream it was allocated on too). A size or device index that
// differs from the allocation's is reported, and the block freed all the
// same; a pointer the allocator did not hand out is reported and ignored.
func release(ptr uintptr, size int64, index int, stream uintptr) error {
	return releaseBlock(ptr, size, index, stream, false)
}

// releaseTorch is release for PyTorch's entry point. PyTorch's pluggable
// allocator passes only the stream a block was allocated on: it has no
// record_stream hook that its Python API can set, so tensor.record_stream
// does nothing and a side stream may still use the block. With the pool,
// the free first waits for the device (every stream, PyTorch's own
// included), so that no stream still uses the block when it is reused.
func releaseTorch(ptr uintptr, size int64, index int, stream uintptr) error {
	return releaseBlock(ptr, size, index, stream, true)
}

// releaseBlock is release; with anyStream, any stream of the device may
// still use the block.
func releaseBlock(ptr uintptr, size int64, index int, stream uintptr, anyStream bool) error {
	allocator.Lock()
	if ptr == 0 {
		allocator.stats.Ignored++
		allocator.Unlock()
		return nil
	}
	a, ok := allocator.live[ptr]
	if !ok {
		allocator.stats.Foreign++
		allocator.Unlock()
		return fmt.Errorf("free %#x (%d bytes, device %d): %w", ptr, size, index, errNotAllocator)
	}
	delete(allocator.live, ptr)
	allocator.stats.Frees++
	allocator.stats.Live--
	allocator.stats.InUse -= a.size
	allocator.Unlock()

	var errs []error
	if size != a.size || index != a.index {
		errs = append(errs, fmt.Errorf("libcuarray allocator: free %#x given %d bytes on device %d, allocated as %d bytes on device %d; freed",
			ptr, size, index, a.size, a.index))
	}
	// A block allocated on another thread's per-thread default stream: no
	// call on this thread can reach that stream, so the free waits for the
	// device instead.
	anyStream = anyStream || a.thread != 0 && a.thread != threadID()
	// A block freed on another stream than the one it was allocated on:
	// that stream may be gone (CuPy destroys its streams while their
	// blocks live on), and the driver's answer to an event recorded on a
	// destroyed stream is undefined (an H100 crashed). The free waits for
	// the device instead and never touches that stream. The caller's
	// stream, given at the free, must be alive: it is CuPy's current
	// stream, or the allocation's own.
	anyStream = anyStream || a.stream != stream && !defaultStream(a.stream)
	errs = append(errs, freeFrom(a.target, ptr, stream, anyStream))
	freed()
	return errors.Join(errs...)
}

// defaultStream reports whether handle h is one of the driver's default
// streams (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD), which live as long
// as the context.
func defaultStream(h uintptr) bool {
	return h == 0 || h == driver.LegacyDefaultStream || h == driver.PerThreadDefaultStream
}

// freeFrom gives a block back to its target: with anyStream, after waiting
// for the device, without touching the stream it was allocated on.
func freeFrom(t allocTarget, ptr uintptr, stream uintptr, anyStream bool) error {
	defer saveContext().restore()
	if t.pool == nil && t.streamOrdered {
		return freeAsync(t, ptr, stream, anyStream)
	}
	if t.pool == nil {
		if err := t.dev.Free(devarray.Ptr(ptr)); err != nil {
			return fmt.Errorf("libcuarray allocator: free %#x: %w", ptr, err)
		}
		return nil
	}
	free := t.pool.FreeAsync
	if anyStream {
		if err := t.dev.Synchronize(); err != nil {
			return errors.Join(fmt.Errorf("libcuarray allocator: free %#x: wait for the device: %w", ptr, err),
				t.pool.FreeSynced(devarray.Ptr(ptr), nil))
		}
		free = t.pool.FreeSynced // the allocation's stream is passed: touch it no more
	}
	s, err := streamFor(t.dev, stream)
	if err != nil {
		// The block's own stream, unless passed, still orders its reuse.
		return errors.Join(fmt.Errorf("libcuarray allocator: free %#x on stream %#x: %w", ptr, stream, err),
			free(devarray.Ptr(ptr), nil))
	}
	if err := free(devarray.Ptr(ptr), s); err != nil {
		forgetStream(t.dev, stream, err) // the pool has the block back either way
		return fmt.Errorf("libcuarray allocator: free %#x on stream %#x: %w", ptr, stream, err)
	}
	return nil
}

// forgetStream drops the wrapper streamFor keeps for handle on d when err
// says that the stream was closed (its owner destroyed it after using it
// with the allocator): the next call with that handle wraps it afresh, or
// fails if it is gone, instead of every free on it failing for good.
func forgetStream(d device.Device, handle uintptr, err error) {
	if !errors.Is(err, driver.ErrClosed) {
		return
	}
	k := keyFor(d, handle)
	allocator.Lock()
	s, ok := allocator.streams[k]
	delete(allocator.streams, k)
	allocator.Unlock()
	if ok {
		_ = s.Close() // releases only the wrapper
	}
}

// recordError makes err's message the calling thread's last error
// (allocator.go's setThreadError), and counts it.
func recordError(err error) {
	if err == nil {
		return
	}
	allocator.Lock()
	allocator.stats.Errors++
	allocator.Unlock()
	setThreadError(message(err))
}

// lastError returns the calling thread's last error ("" for none), and
// forgets it when clear is set.
func lastError(clear bool) string {
	return threadError(clear)
}

// allocatorStats returns the allocator's counts, and the pool's figures
// for each device index served from a pool.
func allocatorStats() (AllocatorStats, map[int]pool.Stats) {
	allocator.Lock()
	st := allocator.stats
	pools := map[int]*pool.Pool{}
	for i, t := range allocator.targets {
		if t.pool != nil {
			pools[i] = t.pool
		}
	}
	allocator.Unlock()
	ps := make(map[int]pool.Stats, len(pools))
	for i, p := range pools {
		ps[i] = p.Stats()
	}
	return st, ps
}
