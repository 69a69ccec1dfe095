package accounting_test

import (
	"bytes"
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/faultsweep"
	"github.com/cuarray/cuarray/internal/testdev"
)

// The sticky-fault sweeps (internal/faultsweep): the workflows below run with
// the fault at each of their device operations in turn.

// useScratch writes fresh bytes into n bytes of scratch memory at p and
// reads them back: what a call that borrowed it does.
func useScratch(r *faultsweep.Run, p devarray.Ptr, n int64, what string) {
	n = min(n, 64<<10)
	src := testdev.RandomBytes(int(n))
	if !r.Call(what+": CopyHtoD", func() error { return r.Dev.CopyHtoD(p, src) }) {
		return
	}
	got := testdev.RandomBytes(int(n))
	if r.Call(what+": CopyDtoH", func() error { return r.Dev.CopyDtoH(got, p) }) && !bytes.Equal(got, src) {
		r.Fail("%s: the scratch memory does not hold what was written", what)
	}
}

// workspaceWorkflow is a workspace's life: borrows that grow it (each a
// synchronize, a free and an allocation), a borrow of a range larger than
// the device (the fallback to the smaller size), a size query and
// Preallocate, SetManual, then Free.
func workspaceWorkflow(r *faultsweep.Run) {
	dev := r.Dev
	w := accounting.NewWorkspace(dev)
	r.CloseLater("workspace Free", w.Free)
	borrow := func(minBytes, wantBytes int64, what string) {
		var p devarray.Ptr
		var got int64
		var release func()
		if !r.Call(what+": BorrowRange", func() (err error) { p, got, release, err = w.BorrowRange(minBytes, wantBytes); return err }) {
			if errors.Is(w.Free(), accounting.ErrWorkspaceBorrowed) {
				r.Fail("%s: a failed borrow left the workspace borrowed", what)
			}
			return
		}
		if got < minBytes || w.Size() < got {
			r.Fail("%s: lent %d bytes of %d for %d..%d", what, got, w.Size(), minBytes, wantBytes)
		}
		if snap := dev.Ledger().Snapshot().Kinds[accounting.Device]; snap.Current != w.Size() {
			r.Fail("%s: the workspace holds %d bytes, the device %d", what, w.Size(), snap.Current)
		}
		useScratch(r, p, got, what)
		release()
		release()
	}
	for i, n := range []int64{1000 + rand.Int64N(1000), 5000 + rand.Int64N(5000), 500, 1 << 20} {
		borrow(n, n, fmt.Sprint("borrow ", i))
	}
	borrow(64<<10, 1<<40, "a range larger than the device")

	r.OK(w.StartQuery(), "StartQuery")
	for _, n := range []int64{3000, 70000 + rand.Int64N(1000), 100} {
		if err := w.Need(n); !accounting.IsSizeQuery(err) {
			r.Fail("Need %d: %v", n, err)
		}
	}
	if size, err := w.Preallocate(); r.Call("Preallocate", func() error { return err }) {
		if w.Size() != size || w.Scheme() != accounting.WorkspacePreallocated {
			r.Fail("Preallocate: %d bytes, the workspace holds %d (%v)", size, w.Size(), w.Scheme())
		}
		borrow(size, size, "preallocated")
	}
	manual := int64(200<<10 + rand.IntN(1000))
	if r.Call("SetManual", func() error { return w.SetManual(manual) }) {
		borrow(manual/2, manual, "manual")
	}
	if r.Call("Free", w.Free) && w.Size() != 0 {
		r.Fail("Free returned nil and the workspace holds %d bytes", w.Size())
	}
}

// TestFaultWorkspace sweeps the fault over a workspace's life.
func TestFaultWorkspace(t *testing.T) {
	faultsweep.Sweep(t, 16<<20, workspaceWorkflow)
}
