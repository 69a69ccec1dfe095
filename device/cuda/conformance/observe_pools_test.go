//go:build cuda

package conformance

import (
	"fmt"
	"testing"
)

// The stream-ordered allocator's rows: what cuarray's pools rely on, where
// the emulated driver guesses (device/sim/mempool.go,
// device/cuda/emulated/mempool.go: cross-stream reuse through the legacy
// stream, reuse with an inserted dependency before reserving more, when a
// freed block leaves the used figure, where a release at a synchronize
// ends, the default pool's destroy, pools without an active context, the
// current figures' set, an allocation of 0 bytes) and where it follows the
// Driver API's sentences (same-stream reuse, reuse after an event wait and
// none with every policy off, the release threshold, cuMemPoolTrimTo, the
// high figures' reset). Each row's figures are the pool's attributes as
// the driver reports them: a GPU's pools reserve in granules of their own,
// sim's in blocks of the size asked for.

// poolBlock is the size of each allocation the rows make: 2 MiB, a GPU's
// granule for pinned device memory as sim guesses it (sim.VMMGranularity).
const poolBlock = 2 << 20

// keepAll is a release threshold that keeps every block the rows reserve.
const keepAll = 1 << 30

// childPoolContext names the child row of poolContextChild.
const childPoolContext = "observe-pool-context"

// The reuse policies a row turns on (the others off).
var (
	noReuse          []int
	followEventsOnly = []int{PoolReuseFollowEvents}
	everyReuse       = []int{PoolReuseFollowEvents, PoolReuseOpportunistic, PoolReuseInternalDeps}
)

// observePools adds the rows. The default pool's destroy is last: were a
// driver to take it, nothing after it allocates from that pool.
func observePools(t *testing.T, add func(name, got string)) {
	observePoolSameStream(t, add)
	observePoolCrossStream(t, add)
	observePoolUsedAtFree(t, add)
	observePoolRelease(t, add)
	observePoolTrim(t, add)
	observePoolFigures(t, add)
	add("device 0's primary context released (no context active, none current), in a child process",
		childOutcome(t, childPoolContext))
	observeDefaultPool(t, add)
}

// rowPool makes a pool of device 0, destroyed at the end of the test, with
// release threshold threshold and only the reuse policies on given on.
func rowPool(t *testing.T, threshold uint64, on []int) uintptr {
	t.Helper()
	pool, c := MemPoolCreate(false)
	ok(t, c, "cuMemPoolCreate")
	t.Cleanup(func() { MemPoolDestroy(pool) })
	ok(t, MemPoolSetUint64(pool, PoolReleaseThreshold, threshold), "cuMemPoolSetAttribute RELEASE_THRESHOLD")
	for _, a := range everyReuse {
		ok(t, MemPoolSetInt(pool, a, 0), "cuMemPoolSetAttribute of a reuse policy")
	}
	for _, a := range on {
		ok(t, MemPoolSetInt(pool, a, 1), "cuMemPoolSetAttribute of a reuse policy")
	}
	return pool
}

// rowStream makes a stream destroyed at the end of the test.
func rowStream(t *testing.T, flags uint32) uintptr {
	t.Helper()
	s, c := StreamCreate(flags)
	ok(t, c, "cuStreamCreate")
	t.Cleanup(func() { StreamDestroy(s) })
	return s
}

// poolFigure reads a cuuint64_t attribute of pool.
func poolFigure(t *testing.T, pool uintptr, attr int) uint64 {
	t.Helper()
	v, c := MemPoolGetUint64(pool, attr)
	ok(t, c, "cuMemPoolGetAttribute")
	return v
}

// allocBlocks allocates n blocks from pool on s.
func allocBlocks(t *testing.T, pool, s uintptr, n int) []uintptr {
	t.Helper()
	ps := make([]uintptr, n)
	for i := range ps {
		p, c := MemAllocFromPoolAsync(poolBlock, pool, s)
		ok(t, c, "cuMemAllocFromPoolAsync")
		ps[i] = p
	}
	return ps
}

// freeBlocks frees ps on s.
func freeBlocks(t *testing.T, s uintptr, ps ...uintptr) {
	t.Helper()
	for _, p := range ps {
		ok(t, MemFreeAsync(p, s), "cuMemFreeAsync")
	}
}

// holdStream holds s with a gate until the end of the test or Release.
func holdStream(t *testing.T, s uintptr) *Gate {
	t.Helper()
	g, c := NewGate(s)
	ok(t, c, "cuLaunchHostFunc")
	t.Cleanup(g.Release)
	entered(t, g)
	return g
}

// reuse says whether the allocation at q took the freed block at p.
func reuse(p, q uintptr) string {
	if p == q {
		return "the freed block"
	}
	return "another block"
}

// observePoolSameStream: "The allocator may refer to internal stream
// ordering [...] when establishing the temporal guarantee." (the Stream
// Ordered Memory Allocator's overview): a block freed on a stream, then
// an allocation of its size on that stream, with every policy off.
func observePoolSameStream(t *testing.T, add func(name, got string)) {
	pool := rowPool(t, keepAll, noReuse)
	s := rowStream(t, StreamNonBlocking)
	p := allocBlocks(t, pool, s, 1)[0]
	freeBlocks(t, s, p)
	q := allocBlocks(t, pool, s, 1)[0]
	freeBlocks(t, s, q)
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add("cuMemAllocFromPoolAsync after cuMemFreeAsync of a block of its size on the same stream, every reuse policy off", reuse(p, q))
}

// observePoolCrossStream: a block freed on a held stream (the free not
// run), then an allocation of its size on another stream, ordered after
// the free by an event wait, by the legacy stream, or not at all.
func observePoolCrossStream(t *testing.T, add func(name, got string)) {
	const held = "(the freeing stream held, the free not yet run)"
	for _, row := range []struct {
		name          string
		on            []int
		from, to      uint32 // stream flags (0: a blocking stream)
		fromLegacy    bool
		toLegacy      bool
		waitEvent     bool
		reportPending bool
	}{
		{name: "cuMemAllocFromPoolAsync on another non-blocking stream after cuStreamWaitEvent on an event recorded after the cuMemFreeAsync " + held + ", only REUSE_FOLLOW_EVENT_DEPENDENCIES on",
			on: followEventsOnly, from: StreamNonBlocking, to: StreamNonBlocking, waitEvent: true},
		{name: "cuMemAllocFromPoolAsync on another non-blocking stream after cuStreamWaitEvent on an event recorded after the cuMemFreeAsync " + held + ", every reuse policy off",
			on: noReuse, from: StreamNonBlocking, to: StreamNonBlocking, waitEvent: true},
		{name: "cuMemAllocFromPoolAsync on the legacy stream after a blocking stream's cuMemFreeAsync " + held + ", only REUSE_FOLLOW_EVENT_DEPENDENCIES on",
			on: followEventsOnly, toLegacy: true},
		{name: "cuMemAllocFromPoolAsync on a blocking stream after the legacy stream's cuMemFreeAsync " + held + ", only REUSE_FOLLOW_EVENT_DEPENDENCIES on",
			on: followEventsOnly, fromLegacy: true},
		{name: "cuMemAllocFromPoolAsync on another non-blocking stream with no dependency on the cuMemFreeAsync " + held + ", every reuse policy on (the default); then cuEventQuery of an event recorded after it",
			on: everyReuse, from: StreamNonBlocking, to: StreamNonBlocking, reportPending: true},
	} {
		pool := rowPool(t, keepAll, row.on)
		from, to := StreamLegacy, StreamLegacy
		if !row.fromLegacy {
			from = rowStream(t, row.from)
		}
		if !row.toLegacy {
			to = rowStream(t, row.to)
		}
		p := allocBlocks(t, pool, from, 1)[0]
		gate := holdStream(t, from)
		freeBlocks(t, from, p)
		ev, c := EventCreate(EventDisableTime)
		ok(t, c, "cuEventCreate")
		if row.waitEvent {
			ok(t, EventRecord(ev, from), "cuEventRecord")
			ok(t, StreamWaitEvent(to, ev), "cuStreamWaitEvent")
		}
		q := allocBlocks(t, pool, to, 1)[0]
		got := reuse(p, q)
		if row.reportPending {
			ok(t, EventRecord(ev, to), "cuEventRecord")
			got += "; cuEventQuery " + ErrorName(EventQuery(ev))
		}
		gate.Release()
		freeBlocks(t, to, q)
		ok(t, StreamSynchronize(to), "cuStreamSynchronize")
		ok(t, StreamSynchronize(from), "cuStreamSynchronize")
		ok(t, EventDestroy(ev), "cuEventDestroy")
		add(row.name, got)
	}
}

// observePoolUsedAtFree: USED_MEM_CURRENT with a block live, with its
// free queued on a held stream, and after the free ran.
func observePoolUsedAtFree(t *testing.T, add func(name, got string)) {
	pool := rowPool(t, keepAll, everyReuse)
	s := rowStream(t, StreamNonBlocking)
	p := allocBlocks(t, pool, s, 1)[0]
	live := poolFigure(t, pool, PoolUsedCurrent)
	gate := holdStream(t, s)
	freeBlocks(t, s, p)
	queued := poolFigure(t, pool, PoolUsedCurrent)
	gate.Release()
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add("USED_MEM_CURRENT with a 2 MiB block live, with its cuMemFreeAsync queued on a held stream, after cuStreamSynchronize",
		fmt.Sprintf("%d, %d, %d bytes", live, queued, poolFigure(t, pool, PoolUsedCurrent)))
}

// releaseCase frees three blocks on a stream of a pool of release
// threshold threshold and returns RESERVED_MEM_CURRENT before and after
// cuStreamSynchronize, and the pool.
func releaseCase(t *testing.T, threshold uint64) (before, after uint64, pool uintptr) {
	pool = rowPool(t, threshold, everyReuse)
	s := rowStream(t, StreamNonBlocking)
	freeBlocks(t, s, allocBlocks(t, pool, s, 3)...)
	before = poolFigure(t, pool, PoolReservedCurrent)
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	return before, poolFigure(t, pool, PoolReservedCurrent), pool
}

// observePoolRelease: "When more than the release threshold bytes of
// memory are held by the memory pool, the allocator will try to release
// memory back to the OS on the next call to stream, event or context
// synchronize." (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), for thresholds of 0,
// 1 GiB and one and a half blocks.
func observePoolRelease(t *testing.T, add func(name, got string)) {
	for _, row := range []struct {
		name      string
		threshold uint64
	}{
		{"0", 0},
		{"1 GiB", keepAll},
		{"3 MiB", 3 << 20},
	} {
		before, after, _ := releaseCase(t, row.threshold)
		add("RESERVED_MEM_CURRENT before and after cuStreamSynchronize, three 2 MiB blocks freed, release threshold "+row.name,
			fmt.Sprintf("%d, %d bytes", before, after))
	}
}

// observePoolTrim: "Releases memory back to the OS until the pool
// contains fewer than minBytesToKeep reserved bytes, or there is no more
// memory that the allocator can safely release." and "Otherwise the pool
// will be guaranteed to have at least minBytesToKeep bytes reserved after
// the operation." (cuMemPoolTrimTo), of three freed blocks kept by the
// threshold, after cuStreamSynchronize.
func observePoolTrim(t *testing.T, add func(name, got string)) {
	_, kept, pool := releaseCase(t, keepAll)
	ok(t, MemPoolTrimTo(pool, 3<<20), "cuMemPoolTrimTo")
	add("RESERVED_MEM_CURRENT of three 2 MiB blocks freed and synchronized, release threshold 1 GiB, then after cuMemPoolTrimTo(3 MiB)",
		fmt.Sprintf("%d, then %d bytes", kept, poolFigure(t, pool, PoolReservedCurrent)))
	ok(t, MemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")
	add("RESERVED_MEM_CURRENT after a further cuMemPoolTrimTo(0)", fmt.Sprintf("%d bytes", poolFigure(t, pool, PoolReservedCurrent)))
}

// observePoolFigures: the used high figure's reset ("Reset the high
// watermark that tracks the amount of used memory that was allocated for
// the memory pool.", cuMemPoolSetAttribute; "High watermark can only be
// reset to zero.", CU_MEMPOOL_ATTR_USED_MEM_HIGH) and a set of the
// current figures, which cuMemPoolSetAttribute's page does not list.
func observePoolFigures(t *testing.T, add func(name, got string)) {
	pool := rowPool(t, keepAll, everyReuse)
	s := rowStream(t, StreamNonBlocking)
	ps := allocBlocks(t, pool, s, 3)
	freeBlocks(t, s, ps[:2]...)
	high := poolFigure(t, pool, PoolUsedHigh)
	ok(t, MemPoolSetUint64(pool, PoolUsedHigh, 0), "cuMemPoolSetAttribute USED_MEM_HIGH")
	add("USED_MEM_HIGH of three 2 MiB blocks, two freed, before and after cuMemPoolSetAttribute USED_MEM_HIGH to 0; USED_MEM_CURRENT",
		fmt.Sprintf("%d, %d; %d bytes", high, poolFigure(t, pool, PoolUsedHigh), poolFigure(t, pool, PoolUsedCurrent)))
	add("cuMemPoolSetAttribute USED_MEM_HIGH to 1", ErrorName(MemPoolSetUint64(pool, PoolUsedHigh, 1)))
	used := poolFigure(t, pool, PoolUsedCurrent)
	add("cuMemPoolSetAttribute RESERVED_MEM_CURRENT, USED_MEM_CURRENT to their own figures",
		ErrorName(MemPoolSetUint64(pool, PoolReservedCurrent, poolFigure(t, pool, PoolReservedCurrent)))+", "+
			ErrorName(MemPoolSetUint64(pool, PoolUsedCurrent, used)))
	freeBlocks(t, s, ps[2])
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
}

// observeDefaultPool: cuMemAllocAsync of 0 bytes, which its page does not
// speak of, and cuMemPoolDestroy of device 0's default pool ("A device's
// default memory pool cannot be destroyed.", which does not say what the
// call answers).
func observeDefaultPool(t *testing.T, add func(name, got string)) {
	s := rowStream(t, StreamNonBlocking)
	p, c := MemAllocAsync(0, s)
	if c == Success && p != 0 {
		freeBlocks(t, s, p)
	}
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add("cuMemAllocAsync of 0 bytes", ErrorName(c))
	def, c := DeviceGetDefaultMemPool(0)
	ok(t, c, "cuDeviceGetDefaultMemPool")
	add("cuMemPoolDestroy of device 0's default pool", ErrorName(MemPoolDestroy(def)))
}

// poolContextChild releases device 0's primary context, the only
// reference this process holds, makes no context current, and says what
// the default pool's query, a pool's creation and an attribute of a pool
// made before the release answer.
func poolContextChild(t *testing.T) string {
	made, c := MemPoolCreate(false)
	ok(t, c, "cuMemPoolCreate")
	ok(t, PrimaryRelease(0), "cuDevicePrimaryCtxRelease")
	ok(t, CtxSetCurrent(0), "cuCtxSetCurrent")
	_, def := DeviceGetDefaultMemPool(0)
	pool, create := MemPoolCreate(false)
	if create == Success {
		MemPoolDestroy(pool)
	}
	_, attr := MemPoolGetUint64(made, PoolReservedCurrent)
	return fmt.Sprintf("cuDeviceGetDefaultMemPool %s; cuMemPoolCreate %s; cuMemPoolGetAttribute of a pool made before the release %s",
		ErrorName(def), ErrorName(create), ErrorName(attr))
}
