package pinned_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/faultsweep"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

// The sticky-fault sweeps (internal/faultsweep): the workflows below run with
// the fault at each of their device operations in turn.

// eventWork is an async copy as package transfer's Op is one: an event
// recorded behind it on its stream. After a fault its query fails, and
// the copy never completes.
type eventWork struct{ ev driver.Event }

func (w eventWork) Done() (bool, error) { return w.ev.Query() }
func (w eventWork) Wait() error         { return w.ev.Synchronize() }

// guarded queues a copy of buf's bytes to dst on s and guards buf with it.
// It returns the work, nil when the copy could not be queued.
func guarded(r *faultsweep.Run, s driver.Stream, buf *pinned.Buffer, dst devarray.Ptr, what string) *eventWork {
	if !r.OK(s.CopyHtoDAsync(dst, buf.Bytes()), what+": CopyHtoDAsync") {
		return nil
	}
	ev, err := r.Dev.NewEvent()
	if !r.OK(err, what+": NewEvent") {
		return nil
	}
	r.CloseLater(what+": event Close", ev.Close)
	if !r.OK(s.Record(ev), what+": Record") {
		return nil
	}
	w := &eventWork{ev}
	if err := buf.Guard(w); err != nil {
		r.Fail("%s: Guard: %v", what, err)
		return nil
	}
	return w
}

// checkDevice checks that the n bytes at p are want once s is done, when
// s and the copy back say they are.
func checkDevice(r *faultsweep.Run, s driver.Stream, p devarray.Ptr, want []byte, what string) {
	if !r.OK(s.Synchronize(), what+": Synchronize") {
		return
	}
	got := testdev.RandomBytes(len(want))
	if r.OK(r.Dev.CopyDtoH(got, p), what+": CopyDtoH") && !bytes.Equal(got, want) {
		r.Fail("%s: the stream synchronized without error and the device holds other bytes", what)
	}
}

// freeBusy frees buf, waiting for its work when Free says it is busy: once
// the work's Wait has returned, Free must not be busy (a copy whose query
// fails after a fault never completes: it must not keep the buffer busy
// for ever). Then a second Free must return nil and the buffer be unusable.
func freeBusy(r *faultsweep.Run, buf *pinned.Buffer, w *eventWork, what string) {
	err := buf.Free()
	if errors.Is(err, pinned.ErrBusy) {
		if w == nil {
			r.Fail("%s: busy with no work queued", what)
			return
		}
		_ = w.Wait()
		err = buf.Free()
		if errors.Is(err, pinned.ErrBusy) {
			r.Fail("%s: still busy after its work's Wait returned: %v", what, err)
			return
		}
	}
	r.OK(err, what+": Free")
	if err := buf.Free(); err != nil {
		r.Fail("%s: a second Free: %v", what, err)
	}
	if buf.Bytes() != nil || !errors.Is(buf.Err(), pinned.ErrFreed) {
		r.Fail("%s: a freed buffer is still usable (Err %v)", what, buf.Err())
	}
}

// pinnedWorkflow is page-locked memory's life: buffers of Alloc, a pool's
// buffers (reused once their copy is done, held back while it is not) and
// registered Go memory, each the source of an async copy that guards it,
// freed while the copy may still run; Busy, Trim, Stats, then Close.
func pinnedWorkflow(r *faultsweep.Run) {
	dev := r.Dev
	const n = 64 << 10
	dst, err := dev.Malloc(n)
	if !r.OK(err, "Malloc") {
		return
	}
	r.CloseLater("Free device memory", func() error { return dev.Free(dst) })
	s, err := dev.NewStream()
	if !r.OK(err, "NewStream") {
		return
	}
	r.CloseLater("stream Close", s.Close)
	p, err := pinned.NewPool(dev, 0)
	if !r.OK(err, "NewPool") {
		return
	}
	r.CloseLater("pool Close", p.Close)
	for round := range 3 {
		// A buffer of Alloc.
		if b, err := pinned.Alloc(dev, n, pinned.Mapped); r.OK(err, "Alloc") {
			want := testdev.RandomBytes(n)
			copy(b.Bytes(), want)
			w := guarded(r, s, b, dst, "Alloc's buffer")
			if w != nil {
				if _, err := b.Busy(); err != nil {
					r.OK(err, "Busy")
				}
			}
			freeBusy(r, b, w, "Alloc's buffer")
			if w != nil {
				checkDevice(r, s, dst, want, "Alloc's buffer")
			}
		}

		// A pool's buffer, freed while its copy may run, and the next one.
		m := int64(1 + round*5000)
		if b, err := p.Alloc(m); r.OK(err, "pool Alloc") {
			want := testdev.RandomBytes(int(m))
			copy(b.Bytes(), want)
			old := b.HostPtr()
			w := guarded(r, s, b, dst, "pool buffer")
			r.OK(b.Free(), "pool buffer Free")
			if err := b.Free(); err != nil {
				r.Fail("a second Free of a pool buffer: %v", err)
			}
			if b2, err := p.Alloc(m); r.OK(err, "pool Alloc again") {
				if b2.HostPtr() == old && w != nil {
					if done, err := w.Done(); !done && err == nil {
						r.Fail("the pool handed out a block its copy still uses")
					}
				}
				copy(b2.Bytes(), testdev.RandomBytes(int(m))) // must not reach the device's copy
				freeBusy(r, b2, nil, "the pool's second buffer")
			}
			if w != nil && w.Wait() != nil && dev.Fault() != nil {
				// The block's copy failed with the fault: the pool finds
				// it when it looks at the block, or the driver refuses.
				if b3, err := p.Alloc(m); err == nil {
					r.Fail("after the fault, the pool handed out a buffer")
					_ = b3.Free()
				} else {
					r.OK(err, "pool Alloc after the fault")
				}
			}
			if w != nil {
				checkDevice(r, s, dst, want[:m], "pool buffer")
			}
		}

		// Registered Go memory.
		mem := testdev.RandomBytes(n)
		want := append([]byte(nil), mem...)
		if b, err := pinned.Register(dev, mem, 0); r.OK(err, "Register") {
			w := guarded(r, s, b, dst, "registered buffer")
			err := b.Unregister()
			if errors.Is(err, pinned.ErrBusy) && w != nil {
				_ = w.Wait()
				err = b.Unregister()
			}
			if errors.Is(err, pinned.ErrBusy) {
				r.Fail("registered buffer still busy after its work's Wait returned: %v", err)
				_ = s.Synchronize()
				err = b.Unregister()
			}
			r.OK(err, "Unregister")
			if w != nil {
				checkDevice(r, s, dst, want, "registered buffer")
			}
		}

		_, err := p.Trim()
		r.OK(err, "pool Trim")
		st := p.Stats()
		if led := dev.Ledger().Snapshot().Kinds[accounting.Pinned]; st.Cached != led.Cached || st.Cached < 0 || st.Live != 0 {
			r.Fail("round %d: pool cached %d (%d live), ledger cached %d", round, st.Cached, st.Live, led.Cached)
		}
	}
	if dev.Fault() != nil {
		if b, err := p.Alloc(4096); err == nil {
			r.Fail("a pool allocation after the fault succeeded")
			_ = b.Free()
		} else {
			r.OK(err, "pool Alloc after the fault")
		}
	}
}

// TestFaultPinned sweeps the fault over page-locked memory's life.
func TestFaultPinned(t *testing.T) {
	faultsweep.Sweep(t, 16<<20, pinnedWorkflow)
}
