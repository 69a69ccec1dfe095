package sim

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// streamcheck.go: the stream race checker (Config.CheckStreams,
// "sim:0?check=streams"). It judges every operation when it is queued, by
// CUDA's ordering rules rather than by when sim happens to run it, so a
// race it reports is one on a GPU whatever the timing:
//
//   - work on one stream is ordered in the order it was queued;
//   - recording an event snapshots its stream's clock, WaitEvent merges
//     the snapshot into the waiting stream;
//   - stream, event and device synchronization (and a stream's Close, an
//     event Query that answers done) merge into the host;
//   - work the host queues comes after what the host knows;
//   - the legacy default stream (synchronous calls, kernels launched
//     without a stream, handle 1) waits for the work queued before on
//     every blocking stream, and blocking streams wait for the legacy work
//     queued before theirs; non-blocking streams (NewNonBlockingStream) do
//     neither;
//   - handle 2 is a per-thread default stream for each OS thread (a
//     blocking stream), resolved on the thread that queues the work;
//   - a synchronous call (Free among them, as cuMemFree synchronizes) is
//     legacy work the host then waits for;
//   - a copy from pageable host memory first waits for its stream (CUDA
//     synchronizes the stream before staging it), and a copy to pageable
//     memory returns when done: pageable memory is not tracked, as the
//     host is always ordered after the device's use of it;
//   - stream-ordered memory lives from its MallocAsync to its FreeAsync:
//     a use not ordered after the allocation, a free not ordered after a
//     use, and any use queued after the free are reported; a block the
//     pool reuses starts a new life (streamcheck_lifetime.go).
//
// The host is one thread of control: goroutines order among themselves
// through Go's own synchronization, which Go's race detector checks.
type streamChecker struct {
	mu        sync.Mutex
	host      *lane
	legacy    *lane
	lanes     []*lane       // every lane, by id
	blocking  vclock        // the join of every blocking stream's clock
	perThread map[int]*lane // each OS thread's per-thread default stream
	mem       intervals
	aliases   *aliases // the device's device addresses of host memory, read as its host bytes
}

// newStreamChecker returns a checker with the host's and the legacy default stream's lanes.
func newStreamChecker() *streamChecker {
	c := &streamChecker{perThread: make(map[int]*lane)}
	c.host = c.newLane("the host", false)
	c.legacy = c.newLane("the legacy default stream", false)
	c.legacy.legacy = true
	return c
}

// newLane adds a lane. The caller holds c.mu, or owns c alone.
func (c *streamChecker) newLane(name string, blocking bool) *lane {
	l := &lane{id: int32(len(c.lanes)), name: name, blocking: blocking}
	c.lanes = append(c.lanes, l)
	return l
}

// streamLane adds the lane of a new stream.
func (c *streamChecker) streamLane(handle uintptr, blocking bool) *lane {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := "stream"
	if !blocking {
		kind = "non-blocking stream"
	}
	return c.newLane(fmt.Sprintf("%s %#x", kind, handle), blocking)
}

// threadLane returns the calling OS thread's per-thread default stream.
// The caller holds c.mu.
func (c *streamChecker) threadLane() *lane {
	tid := osThreadID()
	l, ok := c.perThread[tid]
	if !ok {
		l = c.newLane(fmt.Sprintf("the per-thread default stream of thread %d", tid), true)
		c.perThread[tid] = l
	}
	return l
}

// access is one range an operation touches.
type access struct {
	lo, hi uintptr
	write  bool
}

// opSpec is an operation to check: where it is queued and what it touches.
type opSpec struct {
	kind      string
	l         *lane // nil with perThread
	perThread bool  // queued on handle 2: the calling thread's stream
	accesses  []access
	// hostWaitsBefore: the host waits for the lane's work before the
	// operation (a copy from pageable memory); hostWaitsAfter: the call
	// returns when the operation is done (synchronous calls, copies to
	// pageable memory).
	hostWaitsBefore, hostWaitsAfter bool
	// forget drops the history of the accesses afterwards (a free).
	forget bool
	// life marks a stream-ordered free (streamcheck_lifetime.go).
	life lifetime
	// clockAfter, when set, receives the lane's clock after the operation.
	clockAfter *vclock
}

// resolve returns the lane the operation runs on. The caller holds c.mu.
func (c *streamChecker) resolve(o *opSpec) *lane {
	if o.perThread {
		return c.threadLane()
	}
	return o.l
}

// queue advances lane l's clock for an operation queued now by the host:
// it comes after what the host knows and, by the legacy default stream's
// rule, after the legacy or blocking work queued before it. The caller
// holds c.mu.
func (c *streamChecker) queue(l *lane) uint32 {
	l.clock = l.clock.join(c.host.clock)
	switch {
	case l.legacy:
		l.clock = l.clock.join(c.blocking)
	case l.blocking:
		l.clock = l.clock.join(c.legacy.clock)
	}
	t := l.clock.tick(l.id)
	if l.blocking {
		c.blocking = c.blocking.join(l.clock)
	}
	return t
}

// check judges operation o, queued now, and remembers its accesses; a
// race is returned as a *StreamRaceError, and then nothing is remembered.
func (c *streamChecker) check(o opSpec) error {
	pcs := callers()
	if c.aliases != nil {
		c.aliases.unalias(o.accesses)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.resolve(&o)
	if o.hostWaitsBefore {
		c.host.clock = c.host.clock.join(l.clock)
	}
	rec := &opRecord{kind: o.kind, lane: l, pcs: pcs, stream: l.name, life: o.life}
	rec.tick = c.queue(l)
	recs := make([]accessRec, len(o.accesses))
	for i, a := range o.accesses {
		recs[i] = accessRec{op: rec, lo: a.lo, hi: a.hi, write: a.write}
		if a.hi <= a.lo {
			continue
		}
		if prev, lo, hi := c.mem.conflict(&recs[i], l.clock); prev != nil {
			return newStreamRaceError(&recs[i], prev, lo, hi)
		}
	}
	// Record runs of ascending, disjoint accesses (a pitched copy's rows)
	// in one pass each.
	var run []*accessRec
	for i := range recs {
		r := &recs[i]
		if r.hi <= r.lo {
			continue
		}
		if n := len(run); n > 0 && r.lo < run[n-1].hi {
			c.mem.recordRun(run, l.clock)
			run = run[:0]
		}
		run = append(run, r)
	}
	if len(run) > 0 {
		c.mem.recordRun(run, l.clock)
	}
	if o.hostWaitsAfter {
		c.host.clock = c.host.clock.join(l.clock)
	}
	if o.forget {
		for _, a := range o.accesses {
			c.mem.forget(a.lo, a.hi)
		}
	}
	if o.clockAfter != nil {
		*o.clockAfter = l.clock.clone()
	}
	return nil
}

// record returns the clock of lane l (perThread: the calling thread's
// per-thread stream) at an event recorded now.
func (c *streamChecker) record(l *lane, perThread bool) vclock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if perThread {
		l = c.threadLane()
	}
	c.queue(l)
	return l.clock.clone()
}

// wait merges an event's clock into lane l, as WaitEvent does.
func (c *streamChecker) wait(l *lane, perThread bool, ev vclock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if perThread {
		l = c.threadLane()
	}
	c.queue(l)
	l.clock = l.clock.join(ev)
	if l.blocking {
		c.blocking = c.blocking.join(l.clock)
	}
}

// hostWaitsFor merges lane l's clock into the host's: the host waited for l.
func (c *streamChecker) hostWaitsFor(l *lane, perThread bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if perThread {
		l = c.threadLane()
	}
	c.host.clock = c.host.clock.join(l.clock)
}

// hostWaitsForEvent merges an event's clock into the host's.
func (c *streamChecker) hostWaitsForEvent(ev vclock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.host.clock = c.host.clock.join(ev)
}

// hostWaitsForAll merges every lane's clock into the host's (device synchronization).
func (c *streamChecker) hostWaitsForAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lanes {
		c.host.clock = c.host.clock.join(l.clock)
	}
}

// bytesOf returns the address range of b.
func bytesOf(b []byte) access {
	if len(b) == 0 {
		return access{}
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return access{lo: lo, hi: lo + uintptr(len(b))}
}

// devBytes returns the access of n bytes of device memory at p.
func devBytes(p devarray.Ptr, n int64, write bool) access {
	if n <= 0 {
		return access{}
	}
	return access{lo: uintptr(p), hi: uintptr(p) + uintptr(n), write: write}
}

// tracked reports whether host memory b is page-locked (allocated or
// registered on d), so that the device, not the caller, reads or writes it
// after an async call returns.
func (d *Device) tracked(b []byte) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.hostPath(b) != accounting.PathDirect
}

// kernelAccesses returns the accesses a kernel's declared ranges make.
func kernelAccesses(ranges []driver.Range) []access {
	out := make([]access, 0, len(ranges))
	for _, r := range ranges {
		out = append(out, devBytes(r.Ptr, r.N, !r.ReadOnly))
	}
	return out
}

// stackDepth is how many frames of the queuing caller a report keeps.
const stackDepth = 24

// callers returns the program counters of the caller that queued an
// operation, from the frame above the sim call.
func callers() []uintptr {
	var pcs [stackDepth]uintptr
	n := runtime.Callers(3, pcs[:])
	return append([]uintptr(nil), pcs[:n]...)
}
