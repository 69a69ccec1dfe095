package sim

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// Link models a GPU's host link on sim (Config.Link), so that the paths
// differ in cost as they do on a GPU: a copy between host and device
// memory takes its bytes over the link's bandwidth, one copy at a time in
// each direction (a copy engine each way), on top of Config.Latency. Copies
// from or to page-locked memory (pinned buffers, the staged path's chunks,
// registered memory) move at PinnedGBps; copies from or to pageable memory
// (the direct path, which a driver stages through a buffer of its own) at
// PageableGBps. The pages managed memory migrates, by a prefetch or on
// demand, cross at PinnedGBps (settlePages). A zero rate leaves those copies at memory speed. Copies
// queued on one stream follow each other on the link without a gap: the
// next begins when the one before it is done in the model, however late
// the stream's goroutine wakes up to run it (CUDA: "operations within a
// stream are executed in order"; that a copy engine runs them back to
// back is a guess, that the GPU keeps a stream's queued copies busy on
// it). One Link models one device's link: give each device its own.
//
// Page faults on managed memory take their service time on the link too,
// in the direction their pages move, before the pages' bytes (a fault's
// migration waits for the driver to service it): DeviceFaultService for
// each FaultBatch of a kernel's faults, HostFaultService for each fault of
// the host's. Zero durations leave faults costing only their bytes. That
// the service time holds the link, so that a copy queued behind it in the
// same direction waits too, is a guess, the strict one: the service is
// the driver's work on the host, and no CUDA document says whether a
// copy engine idles meanwhile.
type Link struct {
	PinnedGBps   float64 // 10^9 bytes per second
	PageableGBps float64
	// DeviceFaultService is how long the driver takes to service one batch
	// of a kernel's page faults (FaultBatch faults, or fewer).
	DeviceFaultService time.Duration
	// HostFaultService is how long one page fault of the host's takes.
	HostFaultService time.Duration

	mu   sync.Mutex
	busy [2]time.Time // when the copies queued so far on the link are done, HtoD and DtoH
}

// FaultBatch is how many of a kernel's page faults the driver services
// together: the open NVIDIA UVM driver's default uvm_perf_fault_batch_count,
// 256 ("Number of entries that are fetched from the GPU fault buffer and
// serviced in batch", uvm_gpu_replayable_faults.c). Each kernel, copy or
// memset sim runs is one fault buffer: its faults, on every range and
// allocation it touched, are serviced in as few batches as hold them.
const FaultBatch = 256

// DefaultDeviceFaultService and DefaultHostFaultService are the fault
// service times a link named in a device spec (device.Open's link=) takes
// unless the spec says otherwise (fault-service=). Both are guesses, from
// the default transfer profiles' (transfer.DefaultProfile: a kernel's
// fault 0.5 µs, so a full batch of FaultBatch 128 µs, here charged for any
// batch, full or not; a host fault 2 µs, each a trip through the kernel's
// fault handler and the driver); no CUDA document gives a figure, and the
// GPU bench's managed rows measure on demand against prefetch.
const (
	DefaultDeviceFaultService = FaultBatch * 500 * time.Nanosecond
	DefaultHostFaultService   = 2 * time.Microsecond
)

// MaxFaultService is the longest fault service time a Link takes: a
// second, far beyond any GPU's.
const MaxFaultService = time.Second

// MinLinkGBps is the slowest rate a Link models, 1 MB/s: a 64 MiB copy
// takes a minute at it. A slower rate would hold a copy for days, and at
// rates near zero a copy's time overflows a time.Duration.
const MinLinkGBps = 0.001

// check refuses rates that are negative, not finite, or positive and
// below MinLinkGBps, and fault service times outside 0 to
// MaxFaultService.
func (l *Link) check() error {
	if l == nil {
		return nil
	}
	for _, r := range []float64{l.PinnedGBps, l.PageableGBps} {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) || (r > 0 && r < MinLinkGBps) {
			return fmt.Errorf("sim: link of %v GB/s pinned, %v GB/s pageable: want finite rates of at least %v GB/s, 0 for none: %w",
				l.PinnedGBps, l.PageableGBps, MinLinkGBps, driver.ErrInvalidValue)
		}
	}
	for _, d := range []time.Duration{l.DeviceFaultService, l.HostFaultService} {
		if d < 0 || d > MaxFaultService {
			return fmt.Errorf("sim: link's fault service of %v per kernel's batch, %v per host fault: want 0 to %v: %w",
				l.DeviceFaultService, l.HostFaultService, MaxFaultService, driver.ErrInvalidValue)
		}
	}
	return nil
}

// bandwidth is the link's fastest rate in bytes per second, for Info:
// the most any copy between host and device can move. It is 0 when a rate
// is 0, since those copies run at memory speed and the link bounds none.
func (l *Link) bandwidth() float64 {
	if l == nil || l.PinnedGBps <= 0 || l.PageableGBps <= 0 {
		return 0
	}
	return max(l.PinnedGBps, l.PageableGBps) * 1e9
}

// pace holds a copy of n bytes in direction dir along path, that could
// begin at start, until the link has moved it: after the copies before it
// in the same direction, at the path's rate. It returns when the link was
// done with it, and false for a copy it does not pace.
func (l *Link) pace(dir accounting.Direction, path accounting.Path, n int64, start time.Time) (time.Time, bool) {
	end, ok := l.book(dir, path, n, start)
	if wait := time.Until(end); ok && wait > 0 {
		time.Sleep(wait)
	}
	return end, ok
}

// book is pace without the wait: it queues the copy on the link and
// returns when the link will be done with it, for a caller that holds a
// lock to wait outside it (waitUntil).
func (l *Link) book(dir accounting.Direction, path accounting.Path, n int64, start time.Time) (time.Time, bool) {
	if l == nil || n <= 0 || (dir != accounting.HtoD && dir != accounting.DtoH) {
		return time.Time{}, false
	}
	rate := l.PinnedGBps
	if path == accounting.PathDirect {
		rate = l.PageableGBps
	}
	if rate <= 0 {
		return time.Time{}, false
	}
	return l.queue(dir, start, time.Duration(float64(n)/rate)), true
}

// queue holds the link in direction dir for took, from start or once
// what is queued before it is done, and returns when it is done.
func (l *Link) queue(dir accounting.Direction, start time.Time, took time.Duration) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	begin := start
	if l.busy[dir].After(begin) {
		begin = l.busy[dir]
	}
	end := begin.Add(took)
	l.busy[dir] = end
	return end
}

// bookMigration queues on the link the pages a managed migration in
// direction dir moves, n bytes, after the service time of the faults that
// asked for them (0 for a prefetch): a kernel's (HtoD) in batches of
// FaultBatch, the host's (DtoH) one by one. It returns when the link will
// be done with them, and false when it models neither.
func (l *Link) bookMigration(dir accounting.Direction, n, faults int64, start time.Time) (time.Time, bool) {
	if l == nil || (dir != accounting.HtoD && dir != accounting.DtoH) {
		return time.Time{}, false
	}
	var took time.Duration
	if faults > 0 {
		if dir == accounting.HtoD {
			took = time.Duration((faults+FaultBatch-1)/FaultBatch) * l.DeviceFaultService
		} else {
			took = time.Duration(faults) * l.HostFaultService
		}
	}
	if n > 0 && l.PinnedGBps > 0 {
		took += time.Duration(float64(n) / l.PinnedGBps)
	}
	if took <= 0 {
		return time.Time{}, false
	}
	return l.queue(dir, start, took), true
}

// waitUntil waits until t; a zero t does not wait. It sleeps all but the
// last spinSlack of the wait and yields the processor for the rest:
// time.Sleep wakes up about a millisecond late on a loaded machine (here,
// a sleep of 168 µs took 1.1 ms on average), longer than a few MiB of
// pages take on the link, and the bench times managed memory's moves by
// the wall clock, not by the stream's modelled clock as it times copies.
func waitUntil(t time.Time) {
	if t.IsZero() {
		return
	}
	if wait := time.Until(t) - spinSlack; wait > 0 {
		time.Sleep(wait)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}

// spinSlack is how much of a wait waitUntil spends yielding rather than
// asleep: more than time.Sleep's lateness.
const spinSlack = 2 * time.Millisecond
