package sim

// streamcheck_lifetime.go: the stream race checker's rules for
// stream-ordered memory (MallocAsync, MallocFromPoolAsync, FreeAsync),
// whose life is a stretch of stream order rather than the time between
// two host calls. The CUDA Driver API's "Stream Ordered Memory Allocator"
// overview: "All asynchronous accesses of the allocation must happen
// between the stream executions of the allocation and the free. If the
// memory is accessed outside of the promised stream order, a use before
// allocation / use after free error will cause undefined behavior." The
// checker keeps both ends as operations on the memory's history:
//
//   - The allocation is a write of the whole block by its stream, which
//     starts the block's history afresh: whatever the block held before
//     (a free on another stream the pool reused it from) is forgotten, as
//     the pool's reuse rules already order the new life after the old
//     one. A use must be ordered after it, as any read after a write:
//     cuMemAllocAsync, "The allocation must not be accessed until the
//     allocation operation completes." and "Basic stream ordering allows
//     future work submitted into the same stream to use the allocation.
//     Stream query, stream synchronize, and CUDA events can be used to
//     guarantee that the allocation operation completes before work
//     submitted in a separate stream runs." (UseBeforeAlloc)
//   - The free is a write of the whole block by its stream, so every use
//     must be ordered before it, as any access before a write; one that is
//     not makes the free race with it (FreeWhileInUse).
//   - Once queued, the free stays the block's last write, and nothing may
//     follow it, whatever orders it after the free: cuMemFreeAsync, "The
//     allocation must not be accessed after stream execution reaches the
//     free. After this API returns, accessing the memory from any
//     subsequent work launched on the GPU or querying its pointer
//     attributes results in undefined behavior." Work queued after the
//     free cannot be ordered before it (a free's dependencies are fixed
//     when it is queued), so every access to a freed block is reported,
//     until a new allocation of the block starts a new life
//     (UseAfterFree). A block the pool gives back to the device loses its
//     history: the device's next allocation there starts clean.

// lifetime marks the operations that bound a stream-ordered allocation's life.
type lifetime uint8

const (
	lifeUse   lifetime = iota // an access: a copy, memset, kernel, host access, synchronous free
	lifeAlloc                 // a stream-ordered allocation
	lifeFree                  // a stream-ordered free
)

// Lifetime names the stream-ordered lifetime rule a race report breaks.
type Lifetime uint8

const (
	// NoLifetimeRule: two accesses race (no stream-ordered allocation's
	// end is involved).
	NoLifetimeRule Lifetime = iota
	// UseBeforeAlloc: the access (or free) is not ordered after the
	// stream-ordered allocation of the memory (Prev).
	UseBeforeAlloc
	// UseAfterFree: the access comes after the stream-ordered free of the
	// memory (Prev), with no new allocation between.
	UseAfterFree
	// FreeWhileInUse: the stream-ordered free (Op) is not ordered after an
	// access to the memory (Prev).
	FreeWhileInUse
)

var lifetimeNames = [...]string{"", "use before allocation", "use after free", "free while in use"}

// String returns "use before allocation", "use after free", "free while in use", or "".
func (l Lifetime) String() string {
	if int(l) < len(lifetimeNames) {
		return lifetimeNames[l]
	}
	return "Lifetime(?)"
}

// why returns what the report says of the broken rule.
func (l Lifetime) why() string {
	switch l {
	case UseBeforeAlloc:
		return "use before allocation: nothing orders the stream-ordered allocation before the use (work on the allocating stream after it, an event recorded there after it, or a synchronize)"
	case UseAfterFree:
		return "use after free: the memory was freed in stream order before this use was queued, and no allocation has handed it out since"
	case FreeWhileInUse:
		return "free while in use: nothing orders the use before the stream-ordered free (stream order, or an event the freeing stream waits on)"
	}
	return "nothing orders one before the other: no event, synchronization or stream order"
}

// lifetimeRule returns the rule a race between cur and the earlier prev breaks.
func lifetimeRule(cur, prev *opRecord) Lifetime {
	switch {
	case prev.life == lifeFree:
		return UseAfterFree
	case prev.life == lifeAlloc:
		return UseBeforeAlloc
	case cur.life == lifeFree:
		return FreeWhileInUse
	}
	return NoLifetimeRule
}

// freedBlock reports whether a, the last write of a segment, is a
// stream-ordered free: every later access to the segment is a use after free.
func (a *accessRec) freedBlock() bool { return a.op.life == lifeFree }

// allocated starts the life of a stream-ordered allocation of [lo, hi),
// queued now on lane l (perThread: the calling thread's per-thread
// default stream): the allocation becomes the range's last write, in place
// of its history, without being judged against it.
func (c *streamChecker) allocated(kind string, l *lane, perThread bool, lo, hi uintptr) {
	pcs := callers()
	c.mu.Lock()
	defer c.mu.Unlock()
	if perThread {
		l = c.threadLane()
	}
	rec := &opRecord{kind: kind, lane: l, pcs: pcs, stream: l.name, life: lifeAlloc}
	rec.tick = c.queue(l)
	c.mem.record(&accessRec{op: rec, lo: lo, hi: hi, write: true}, l.clock)
}

// freed judges the stream-ordered free of [lo, hi), queued now on lane l
// (perThread: the calling thread's per-thread default stream), and
// returns its lane's clock after it (the free's point in stream order, as
// an event recorded there would carry), or a *StreamRaceError.
func (c *streamChecker) freed(l *lane, perThread bool, lo, hi uintptr) (vclock, error) {
	var at vclock
	err := c.check(opSpec{kind: "free async", l: l, perThread: perThread, life: lifeFree,
		accesses: []access{{lo: lo, hi: hi, write: true}}, clockAfter: &at})
	return at, err
}

// released forgets the history of [lo, hi): a pool gave the block back to
// the device, whose next allocation there starts clean.
func (c *streamChecker) released(lo, hi uintptr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mem.forget(lo, hi)
}
