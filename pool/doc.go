// Package pool is a caching device allocator, after RAPIDS RMM's pool,
// CuPy's MemoryPool and PyTorch's caching allocator. Freed blocks stay
// cached for reuse instead of going back to the device, so that allocating
// and freeing in a loop costs a lookup instead of a driver call that
// synchronizes the device.
//
//   - Best fit with splitting and coalescing, in 256-byte granules, from a
//     free index that finds the best fit in O(log n) (a treap). Memory
//     comes from the device in segments: 2 MiB for requests up to 1 MiB
//     (small requests never split a larger segment), 20 MiB for requests
//     up to 10 MiB, larger requests rounded up to 2 MiB.
//   - Small blocks (64 KiB or less) freed on the default stream are parked
//     by size and handed straight back to the next request of that size,
//     with no split, index search or table update (parked.go): the pool's
//     fast path; they merge into the free index before the pool would
//     grow, trim or report its Stats.
//   - A bound on what it holds (SetReserveRatio, default 1.25): before it
//     asks the device for more, the pool gives back whole free segments
//     that would take it past 1.25 times the most it ever handed out at
//     once, and a medium request that would pass it gets a segment of its
//     own size; a large request leaves whole free segments much larger
//     than itself alone, so they can go back.
//   - Stream-ordered reuse: a block freed on a stream is reused at once by
//     later work on that stream (the stream runs in order), and by other
//     streams only after an event recorded at the free has completed.
//   - Out of memory: the pool frees its cached segments back to the device
//     and tries once more, then fails with an *OutOfMemoryError that carries
//     the requested, free, total and limit figures (CuPy's order).
//   - A limit counts memory handed out, not memory cached: cached free
//     blocks never make an allocation fail.
//   - Stats: in use, cached, peaks, fragmentation, and how many allocations
//     the cache served versus the device.
//   - Where segments come from: the device's own allocator (cuMemAlloc),
//     or a stream-ordered pool (New's option FromMemPool:
//     cuMemAllocFromPoolAsync and cuMemFreeAsync; mempool_source.go), or
//     one segment growing in place by virtual memory, as PyTorch's
//     expandable segments (Expandable: chunks mapped at the end of one
//     address reservation; expandable.go).
//
// The device's ledger counts the pool's segments as Device memory (over a
// stream-ordered pool, as StreamOrdered memory and in that pool's figures;
// expandable, the reservation as VirtualAddress and the chunks as Physical),
// since that is what the device gave up, and the part of them not handed out as
// its cached bytes (Snapshot's Cached); the pool's Stats count the blocks. A
// Pool satisfies devarray.Backend, so arrays can be made on it:
//
//	p := pool.New(dev)
//	defer p.Release()
//	a, err := devarray.Empty(p, devarray.Float32, 512, 512) // from the cache when it can be
//	defer a.Free()                                          // back to the cache
package pool
