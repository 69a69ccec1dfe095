package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/faultsweep"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// The sticky-fault sweeps (internal/faultsweep): the workflows below run with
// the fault at each of their device operations in turn.

// liveSet is the blocks a workflow holds, to check none is handed out twice.
type liveSet map[devarray.Ptr]int64

func (l liveSet) add(r *faultsweep.Run, p devarray.Ptr, n int64) {
	for q, m := range l {
		if p < q+devarray.Ptr(m) && q < p+devarray.Ptr(n) {
			r.Fail("block %v+%d handed out while %v+%d is still held", p, n, q, m)
		}
	}
	l[p] = n
}

// poolWorkflow is a pool's life: default-stream allocations (the parked
// fast path), allocations and frees on two streams (events, poll, own
// stream reuse), a large block (a segment of its own), a request past the
// device's memory (the OOM retry with its trim and event waits), Trim,
// Stats, then Release.
func poolWorkflow(r *faultsweep.Run) {
	dev := r.Dev
	led := dev.Ledger()
	p := pool.New(dev)
	r.CloseLater("pool Release", p.Release)
	var streams []driver.Stream
	for range 2 {
		s, err := dev.NewStream()
		if !r.OK(err, "NewStream") {
			return
		}
		r.CloseLater("stream Close", s.Close)
		streams = append(streams, s)
	}
	live := liveSet{}
	// checkStats: the ledger's cached bytes are the pool's (the only pool).
	checkStats := func(when string) {
		st := p.Stats()
		snap := led.Snapshot().Kinds[accounting.Device]
		if st.Cached != snap.Cached || st.Reserved != snap.Current || st.Cached < 0 {
			r.Fail("%s: pool cached %d of %d reserved, ledger cached %d of %d current", when, st.Cached, st.Reserved, snap.Cached, snap.Current)
		}
	}
	for round := range 3 {
		small := int64(1 + rand.IntN(64<<10))
		src := testdev.RandomBytes(int(small))
		a, err := p.Alloc(small)
		if r.OK(err, "Alloc small") {
			live.add(r, a, small)
			if r.OK(dev.CopyHtoD(a, src), "CopyHtoD") {
				got := testdev.RandomBytes(int(small))
				if r.OK(dev.CopyDtoH(got, a), "CopyDtoH") && !bytes.Equal(got, src) {
					r.Fail("round %d: a copy that returned nil brought back other bytes", round)
				}
			}
			delete(live, a)
			r.OK(p.Free(a), "Free small")
		}
		b, err := p.Alloc(small) // the parked block back
		if r.OK(err, "Alloc small again") {
			live.add(r, b, small)
		}

		// Streams: allocate on s0, use, free on s0 (an event); allocate on s1.
		m := int64(1 + rand.IntN(512<<10))
		c, err := p.AllocAsync(m, streams[0])
		var out, want []byte // out must hold want once s0 is done
		if r.OK(err, "AllocAsync s0") {
			live.add(r, c, m)
			want = testdev.RandomBytes(int(m))
			out = testdev.RandomBytes(int(m))
			if !r.OK(streams[0].CopyHtoDAsync(c, want), "CopyHtoDAsync") || !r.OK(streams[0].CopyDtoHAsync(out, c), "CopyDtoHAsync") {
				out = nil
			}
			delete(live, c)
			r.OK(p.FreeAsync(c, streams[0]), "FreeAsync s0")
		}
		d, err := p.AllocAsync(m, streams[1])
		if r.OK(err, "AllocAsync s1") {
			live.add(r, d, m)
			r.OK(streams[1].MemsetAsync(d, byte(round), m), "MemsetAsync s1")
			delete(live, d)
			r.OK(p.FreeAsync(d, streams[1]), "FreeAsync s1")
		}
		if b != 0 && err == nil {
			// freed on another stream than it was allocated on
			delete(live, b)
			r.OK(p.FreeAsync(b, streams[1]), "FreeAsync of a default-stream block on s1")
			b = 0
		}
		if b != 0 {
			delete(live, b)
			r.OK(p.Free(b), "Free small again")
		}
		if r.OK(streams[0].Synchronize(), "Synchronize s0") && out != nil && !bytes.Equal(out, want) {
			r.Fail("round %d: s0 synchronized without error, its copies' bytes are wrong", round)
		}
		r.OK(streams[1].Synchronize(), "Synchronize s1")

		// A medium block (a 20 MiB segment), then a request past the device's memory.
		big := int64(1<<20 + 1 + rand.IntN(1<<20))
		e, err := p.Alloc(big)
		if r.OK(err, "Alloc large") {
			live.add(r, e, big)
			if r.OK(dev.Memset(e, 0x5a, big), "Memset large") {
				got, perr := dev.Peek(e, big)
				if perr == nil && !bytes.Equal(got, bytes.Repeat([]byte{0x5a}, int(big))) {
					r.Fail("a memset that returned nil did not set the bytes")
				}
			}
			delete(live, e)
			r.OK(p.Free(e), "Free large")
		}
		_, err = p.Alloc(1 << 30)
		switch {
		case err == nil:
			r.Fail("1 GiB from a 32 MiB device")
		case dev.Fault() != nil && !errors.Is(err, device.ErrContextFailed):
			r.Fail("after the fault, an allocation past the device's memory fails with %v, not the fault", err)
		case dev.Fault() == nil && !errors.Is(err, accounting.ErrOutOfMemory):
			r.Fail("1 GiB from a 32 MiB device: %v", err)
		}
		checkStats(fmt.Sprintf("round %d", round))
		_, err = p.Trim()
		r.OK(err, "Trim")
		checkStats(fmt.Sprintf("round %d after Trim", round))
	}
	if dev.Fault() != nil {
		// Once the fault is known, allocations report it, cached or not.
		for _, s := range []driver.Stream{nil, streams[0]} {
			for _, n := range []int64{256, 1 << 20, 12 << 20} {
				if q, err := p.AllocAsync(n, s); err == nil {
					r.Fail("an allocation of %d bytes after the fault succeeded", n)
					r.OK(p.FreeAsync(q, s), "FreeAsync after the fault")
				} else {
					r.OK(err, fmt.Sprintf("AllocAsync %d after the fault", n))
				}
			}
		}
	}
	checkStats("the end")
}

// TestFaultPool sweeps the fault over a pool's life.
func TestFaultPool(t *testing.T) {
	faultsweep.Sweep(t, 32<<20, poolWorkflow)
}

// poolConcurrent has four goroutines allocate, copy and free at once, two
// on the default stream and two on streams of their own, while the fault
// strikes: no block is handed out twice, nothing hangs, every error is
// the fault's.
func poolConcurrent(r *faultsweep.Run) {
	dev := r.Dev
	p := pool.New(dev)
	r.CloseLater("pool Release", p.Release)
	var mu sync.Mutex
	live := liveSet{}
	var wg sync.WaitGroup
	for g := range 4 {
		var s driver.Stream
		if g%2 == 1 {
			var err error
			if s, err = dev.NewStream(); !r.OK(err, "NewStream") {
				continue
			}
			r.CloseLater("stream Close", s.Close)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				n := int64(1 + rand.IntN(128<<10))
				ptr, err := p.AllocAsync(n, s)
				if !r.OK(err, "AllocAsync") {
					continue
				}
				mu.Lock()
				live.add(r, ptr, n)
				mu.Unlock()
				src := testdev.RandomBytes(int(n))
				if s == nil {
					r.OK(dev.CopyHtoD(ptr, src), "CopyHtoD")
				} else {
					r.OK(s.CopyHtoDAsync(ptr, src), "CopyHtoDAsync")
				}
				if i%2 == 0 {
					r.OK(dev.Memset(ptr, byte(i), n), "Memset")
				}
				mu.Lock()
				delete(live, ptr)
				mu.Unlock()
				r.OK(p.FreeAsync(ptr, s), "FreeAsync")
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	if snap := dev.Ledger().Snapshot().Kinds[accounting.Device]; st.Cached != snap.Cached || st.Reserved != snap.Current || st.LiveBlocks != 0 {
		r.Fail("pool cached %d of %d reserved (%d live), ledger cached %d of %d", st.Cached, st.Reserved, st.LiveBlocks, snap.Cached, snap.Current)
	}
}

// TestFaultPoolConcurrent sweeps the fault over concurrent use of a pool.
func TestFaultPoolConcurrent(t *testing.T) {
	faultsweep.Sweep(t, 32<<20, poolConcurrent)
}
