package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// The sticky-fault sweeps: a workflow runs on a sim device whose Nth copy,
// memset or kernel faults as an illegal address does on a GPU (every later
// call fails with ErrContextFailed), for N = 1, 2, ... until it runs with
// no fault, with and without latency. For every N: no call hangs or
// panics, a call that returns nil did its work, a failed call's error
// wraps ErrContextFailed, and closing everything, then the device, leaves
// the ledger at zero and no goroutine behind.

// faultDeadline bounds every run of a workflow and every Close.
const faultDeadline = 10 * time.Second

// faultRun is one run of a workflow with the fault at position n.
type faultRun struct {
	t       *testing.T
	dev     *sim.Device
	n       int64
	closers []faultCloser
}

type faultCloser struct {
	name  string
	close func() error
}

// ok reports whether err is nil; else it checks that err is the fault's.
func (r *faultRun) ok(err error, what string) bool {
	if err == nil {
		return true
	}
	if r.dev.Fault() == nil {
		r.t.Errorf("fault at %d: %s failed with no fault: %v", r.n, what, err)
		return false
	}
	if !errors.Is(err, device.ErrContextFailed) {
		r.t.Errorf("fault at %d: %s: want an error wrapping ErrContextFailed, got %v", r.n, what, err)
	}
	return false
}

// fail records an error the workflow found.
func (r *faultRun) fail(format string, args ...any) {
	r.t.Errorf("fault at %d: %s", r.n, fmt.Sprintf(format, args...))
}

// closeLater registers close to run, in reverse order, after the workflow.
func (r *faultRun) closeLater(name string, close func() error) {
	r.closers = append(r.closers, faultCloser{name, close})
}

// within runs f, failing the test with every goroutine's stack when it
// does not return within faultDeadline.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(faultDeadline):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s did not return within %v; goroutines:\n%s", what, faultDeadline, buf.String())
	}
}

// sweepFault runs workflow with the fault at every position, with latency
// 0 and 1 ms, until a run completes with no fault.
func sweepFault(t *testing.T, memory int64, workflow func(r *faultRun)) {
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			for n := int64(1); ; n++ {
				require.Less(t, n, int64(500), "the workflow still faults at position %d", n)
				if !runFault(t, n, latency, memory, workflow) || t.Failed() {
					t.Logf("swept %d positions", n)
					return
				}
			}
		})
	}
}

// runFault runs workflow once with the fault at position n and reports
// whether the device faulted.
func runFault(t *testing.T, n int64, latency time.Duration, memory int64, workflow func(r *faultRun)) bool {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: memory, Latency: latency, FailFault: n})
	require.NoError(t, err)
	r := &faultRun{t: t, dev: dev, n: n}
	faulted := false
	within(t, fmt.Sprintf("the workflow with the fault at %d", n), func() {
		workflow(r)
		for i := len(r.closers) - 1; i >= 0; i-- {
			c := r.closers[i]
			if err := c.close(); err != nil && (dev.Fault() == nil || !errors.Is(err, device.ErrContextFailed)) {
				t.Errorf("fault at %d: %s: %v", n, c.name, err)
			}
		}
		faulted = dev.Fault() != nil
	})
	within(t, "the device's Close", func() { assert.NoError(t, dev.Close()) })
	snap := dev.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered} {
		assert.Zero(t, snap.Kinds[k].Current, "fault at %d: %v bytes after the device's Close", n, k)
	}
	deadline := time.Now().Add(5 * time.Second) // a plain loop: assert.Eventually starts goroutines
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "fault at %d: goroutines left running", n)
	return faulted
}

// liveSet is the blocks a workflow holds, to check none is handed out twice.
type liveSet map[devarray.Ptr]int64

func (l liveSet) add(r *faultRun, p devarray.Ptr, n int64) {
	for q, m := range l {
		if p < q+devarray.Ptr(m) && q < p+devarray.Ptr(n) {
			r.fail("block %v+%d handed out while %v+%d is still held", p, n, q, m)
		}
	}
	l[p] = n
}

// poolWorkflow is a pool's life: default-stream allocations (the parked
// fast path), allocations and frees on two streams (events, poll, own
// stream reuse), a large block (a segment of its own), a request past the
// device's memory (the OOM retry with its trim and event waits), Trim,
// Stats, then Release.
func poolWorkflow(r *faultRun) {
	dev := r.dev
	led := dev.Ledger()
	p := pool.New(dev)
	r.closeLater("pool Release", p.Release)
	var streams []driver.Stream
	for range 2 {
		s, err := dev.NewStream()
		if !r.ok(err, "NewStream") {
			return
		}
		r.closeLater("stream Close", s.Close)
		streams = append(streams, s)
	}
	live := liveSet{}
	// checkStats: the ledger's cached bytes are the pool's (the only pool).
	checkStats := func(when string) {
		st := p.Stats()
		snap := led.Snapshot().Kinds[accounting.Device]
		if st.Cached != snap.Cached || st.Reserved != snap.Current || st.Cached < 0 {
			r.fail("%s: pool cached %d of %d reserved, ledger cached %d of %d current", when, st.Cached, st.Reserved, snap.Cached, snap.Current)
		}
	}
	for round := range 3 {
		small := int64(1 + rand.IntN(64<<10))
		src := testdev.RandomBytes(int(small))
		a, err := p.Alloc(small)
		if r.ok(err, "Alloc small") {
			live.add(r, a, small)
			if r.ok(dev.CopyHtoD(a, src), "CopyHtoD") {
				got := testdev.RandomBytes(int(small))
				if r.ok(dev.CopyDtoH(got, a), "CopyDtoH") && !bytes.Equal(got, src) {
					r.fail("round %d: a copy that returned nil brought back other bytes", round)
				}
			}
			delete(live, a)
			r.ok(p.Free(a), "Free small")
		}
		b, err := p.Alloc(small) // the parked block back
		if r.ok(err, "Alloc small again") {
			live.add(r, b, small)
		}

		// Streams: allocate on s0, use, free on s0 (an event); allocate on s1.
		m := int64(1 + rand.IntN(512<<10))
		c, err := p.AllocAsync(m, streams[0])
		var out, want []byte // out must hold want once s0 is done
		if r.ok(err, "AllocAsync s0") {
			live.add(r, c, m)
			want = testdev.RandomBytes(int(m))
			out = testdev.RandomBytes(int(m))
			if !r.ok(streams[0].CopyHtoDAsync(c, want), "CopyHtoDAsync") || !r.ok(streams[0].CopyDtoHAsync(out, c), "CopyDtoHAsync") {
				out = nil
			}
			delete(live, c)
			r.ok(p.FreeAsync(c, streams[0]), "FreeAsync s0")
		}
		d, err := p.AllocAsync(m, streams[1])
		if r.ok(err, "AllocAsync s1") {
			live.add(r, d, m)
			r.ok(streams[1].MemsetAsync(d, byte(round), m), "MemsetAsync s1")
			delete(live, d)
			r.ok(p.FreeAsync(d, streams[1]), "FreeAsync s1")
		}
		if b != 0 && err == nil {
			// freed on another stream than it was allocated on
			delete(live, b)
			r.ok(p.FreeAsync(b, streams[1]), "FreeAsync of a default-stream block on s1")
			b = 0
		}
		if b != 0 {
			delete(live, b)
			r.ok(p.Free(b), "Free small again")
		}
		if r.ok(streams[0].Synchronize(), "Synchronize s0") && out != nil && !bytes.Equal(out, want) {
			r.fail("round %d: s0 synchronized without error, its copies' bytes are wrong", round)
		}
		r.ok(streams[1].Synchronize(), "Synchronize s1")

		// A medium block (a 20 MiB segment), then a request past the device's memory.
		big := int64(1<<20 + 1 + rand.IntN(1<<20))
		e, err := p.Alloc(big)
		if r.ok(err, "Alloc large") {
			live.add(r, e, big)
			if r.ok(dev.Memset(e, 0x5a, big), "Memset large") {
				got, perr := dev.Peek(e, big)
				if perr == nil && !bytes.Equal(got, bytes.Repeat([]byte{0x5a}, int(big))) {
					r.fail("a memset that returned nil did not set the bytes")
				}
			}
			delete(live, e)
			r.ok(p.Free(e), "Free large")
		}
		_, err = p.Alloc(1 << 30)
		switch {
		case err == nil:
			r.fail("1 GiB from a 32 MiB device")
		case dev.Fault() != nil && !errors.Is(err, device.ErrContextFailed):
			r.fail("after the fault, an allocation past the device's memory fails with %v, not the fault", err)
		case dev.Fault() == nil && !errors.Is(err, accounting.ErrOutOfMemory):
			r.fail("1 GiB from a 32 MiB device: %v", err)
		}
		checkStats(fmt.Sprintf("round %d", round))
		_, err = p.Trim()
		r.ok(err, "Trim")
		checkStats(fmt.Sprintf("round %d after Trim", round))
	}
	if dev.Fault() != nil {
		// Once the fault is known, allocations report it, cached or not.
		for _, s := range []driver.Stream{nil, streams[0]} {
			for _, n := range []int64{256, 1 << 20, 12 << 20} {
				if q, err := p.AllocAsync(n, s); err == nil {
					r.fail("an allocation of %d bytes after the fault succeeded", n)
					r.ok(p.FreeAsync(q, s), "FreeAsync after the fault")
				} else {
					r.ok(err, fmt.Sprintf("AllocAsync %d after the fault", n))
				}
			}
		}
	}
	checkStats("the end")
}

// TestFaultPool sweeps the fault over a pool's life.
func TestFaultPool(t *testing.T) {
	sweepFault(t, 32<<20, poolWorkflow)
}

// poolConcurrent has four goroutines allocate, copy and free at once, two
// on the default stream and two on streams of their own, while the fault
// strikes: no block is handed out twice, nothing hangs, every error is
// the fault's.
func poolConcurrent(r *faultRun) {
	dev := r.dev
	p := pool.New(dev)
	r.closeLater("pool Release", p.Release)
	var mu sync.Mutex
	live := liveSet{}
	var wg sync.WaitGroup
	for g := range 4 {
		var s driver.Stream
		if g%2 == 1 {
			var err error
			if s, err = dev.NewStream(); !r.ok(err, "NewStream") {
				continue
			}
			r.closeLater("stream Close", s.Close)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				n := int64(1 + rand.IntN(128<<10))
				ptr, err := p.AllocAsync(n, s)
				if !r.ok(err, "AllocAsync") {
					continue
				}
				mu.Lock()
				live.add(r, ptr, n)
				mu.Unlock()
				src := testdev.RandomBytes(int(n))
				if s == nil {
					r.ok(dev.CopyHtoD(ptr, src), "CopyHtoD")
				} else {
					r.ok(s.CopyHtoDAsync(ptr, src), "CopyHtoDAsync")
				}
				if i%2 == 0 {
					r.ok(dev.Memset(ptr, byte(i), n), "Memset")
				}
				mu.Lock()
				delete(live, ptr)
				mu.Unlock()
				r.ok(p.FreeAsync(ptr, s), "FreeAsync")
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	if snap := dev.Ledger().Snapshot().Kinds[accounting.Device]; st.Cached != snap.Cached || st.Reserved != snap.Current || st.LiveBlocks != 0 {
		r.fail("pool cached %d of %d reserved (%d live), ledger cached %d of %d", st.Cached, st.Reserved, st.LiveBlocks, snap.Cached, snap.Current)
	}
}

// TestFaultPoolConcurrent sweeps the fault over concurrent use of a pool.
func TestFaultPoolConcurrent(t *testing.T) {
	sweepFault(t, 32<<20, poolConcurrent)
}
