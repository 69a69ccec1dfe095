package docs_test

import (
	"bytes"
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/interop/gorgonia"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/pool"
	"github.com/cuarray/cuarray/transfer"
)

// countWriter counts the bytes written to it and keeps none.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// named is a value a program holds, by the name it prints under.
type named struct {
	name string
	v    any
}

// printAll prints every value with every verb of fmtcheck.Verbs, as a
// newcomer's program does, and returns the bytes printed and the bytes
// the printing allocated.
func printAll(values []named) (printed int64, allocated uint64) {
	var w countWriter
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, nv := range values {
		for _, verb := range fmtcheck.Verbs {
			switch verb {
			case "Print":
				fmt.Fprint(&w, nv.name, ": ", nv.v, "\n")
			case "Println":
				fmt.Fprintln(&w, nv.name+":", nv.v)
			default:
				fmt.Fprintf(&w, "%s: "+verb+"\n", nv.name, nv.v)
			}
		}
	}
	runtime.ReadMemStats(&after)
	return w.n, after.TotalAlloc - before.TotalAlloc
}

// TestPrintEverything is the first program a Go programmer writes with
// cuarray: open the default device (sim:0, 4 GiB, in a build without
// cuda), make one of everything, and print it all, with %v, %+v, %#v, %s,
// Print and Println, then again once everything is freed and closed.
// Printing the device once walked its 4 GiB of memory byte by byte (110 s,
// 21 GB, killed); now the whole program prints a few kilobytes a value and
// allocates a few megabytes at most, so the heap never grows by 100 MB.
func TestPrintEverything(t *testing.T) {
	var heapBefore runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heapBefore)

	dev, err := device.Open("")
	require.NoError(t, err)
	defer dev.Close()
	led := dev.Ledger()
	var logBuf bytes.Buffer
	rec, err := led.Record(&logBuf)
	require.NoError(t, err)
	scope := led.Push("print everything")

	data := make([]float32, 512*512)
	for i := range data {
		data[i] = rand.Float32()
	}
	a, err := devarray.FromHost(dev, data, 512, 512)
	require.NoError(t, err)
	view, err := a.Slice(1, 0, 256)
	require.NoError(t, err)
	desc, err := a.Descriptor()
	require.NoError(t, err)
	borrowed, err := devarray.Wrap(dev, desc)
	require.NoError(t, err)
	hostMem, err := dev.HostAlloc(1<<20, device.Mapped)
	require.NoError(t, err)
	buf, err := pinned.Alloc(dev, 1<<20, pinned.Mapped)
	require.NoError(t, err)
	goMem := make([]byte, 1<<20)
	for i := range goMem {
		goMem[i] = byte(rand.Uint32())
	}
	registered, err := pinned.Register(dev, goMem, 0)
	require.NoError(t, err)
	hostPool, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	fromHostPool, err := hostPool.Alloc(1 << 20)
	require.NoError(t, err)
	devPool := pool.New(dev)
	inPool, err := devarray.FromHost(devPool, data, 512, 512)
	require.NoError(t, err)
	ws := accounting.NewWorkspace(dev)
	_, release, err := ws.Borrow(1 << 20)
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	ev, err := dev.NewEvent()
	require.NoError(t, err)
	copier, err := transfer.New(dev)
	require.NoError(t, err)
	out := make([]float32, 512*512)
	op, err := copier.CopyAsync(s, transfer.Host(out, 512, 512), transfer.Dev(a))
	require.NoError(t, err)
	require.NoError(t, s.Record(ev))
	k, err := kernels.New(dev)
	require.NoError(t, err)
	method, err := plan.Default.Lookup("identity")
	require.NoError(t, err)
	p, err := plan.ForDevice(dev, method, [3]int{1800, 2560, 2560}, 0, devarray.Float32, nil)
	require.NoError(t, err)
	_, oomErr := devarray.Empty(dev, devarray.Float32, 1<<40)
	var oom *accounting.OutOfMemoryError
	require.ErrorAs(t, oomErr, &oom)
	require.NoError(t, devPool.SetLimit(4<<20))
	_, poolErr := devPool.Alloc(8 << 20)
	var poolOOM *pool.OutOfMemoryError
	require.ErrorAs(t, poolErr, &poolOOM)
	ipc, err := interop.ExportIPC(dev, a)
	require.NoError(t, err)
	var pending interop.Pending

	values := []named{
		{"device", dev}, {"info", dev.Info()}, {"ledger", led}, {"snapshot", led.Snapshot()}, {"scope", scope},
		{"recording", rec}, {"array", a}, {"view", view}, {"borrowed", borrowed}, {"descriptor", desc},
		{"host memory", hostMem}, {"pinned buffer", buf}, {"registered buffer", registered},
		{"pinned pool", hostPool}, {"pooled buffer", fromHostPool}, {"device pool", devPool},
		{"pool stats", devPool.Stats()}, {"array in the pool", inPool}, {"workspace", ws},
		{"stream", s}, {"event", ev}, {"copier", copier}, {"copy", op},
		{"endpoint", transfer.Host(out, 512, 512)}, {"kernels", k}, {"plan", p}, {"chunk", p.Chunks[0]},
		{"registry", plan.Default}, {"out of memory", oomErr}, {"ledger's error", oom},
		{"pool's error", poolOOM}, {"ipc", ipc}, {"engine", gorgonia.NewDeviceEngine(dev)}, {"pending", &pending},
	}
	printed, allocated := printAll(values)

	// Free and close everything, and print it all again.
	require.NoError(t, op.Wait())
	require.Equal(t, data, out)
	release()
	require.NoError(t, ws.Free())
	require.NoError(t, copier.Close())
	require.NoError(t, ev.Close())
	require.NoError(t, s.Close())
	require.NoError(t, fromHostPool.Free())
	require.NoError(t, hostPool.Close())
	require.NoError(t, inPool.Free())
	require.NoError(t, devPool.Release())
	require.NoError(t, registered.Free())
	require.NoError(t, buf.Free())
	require.NoError(t, dev.HostFree(hostMem))
	require.NoError(t, borrowed.Free())
	require.NoError(t, a.Free())
	_, err = scope.Pop()
	require.NoError(t, err)
	require.NoError(t, rec.Close())
	log, err := accounting.ReadLog(&logBuf)
	require.NoError(t, err)
	values = append(values, named{"log", log})
	require.NoError(t, dev.Close())
	printed2, allocated2 := printAll(values)

	runtime.GC()
	var heapAfter runtime.MemStats
	runtime.ReadMemStats(&heapAfter)
	growth := int64(heapAfter.HeapAlloc) - int64(heapBefore.HeapAlloc)
	perValue := int64(len(fmtcheck.Verbs)) * fmtcheck.MaxBytes
	t.Logf("%d values on %v: printed %d bytes open and %d closed; printing allocated %s and %s; the heap grew by %s",
		len(values), dev.DeviceID(), printed, printed2, accounting.FormatBytes(int64(allocated)), accounting.FormatBytes(int64(allocated2)),
		accounting.FormatBytes(growth))
	assert.Less(t, printed, int64(len(values))*perValue, "a few kilobytes a value, open")
	assert.Less(t, printed2, int64(len(values))*perValue, "a few kilobytes a value, closed")
	assert.Less(t, allocated, uint64(100<<20), "printing allocated less than 100 MB, open")
	assert.Less(t, allocated2, uint64(100<<20), "printing allocated less than 100 MB, closed")
	assert.Less(t, growth, int64(100<<20), "the heap grew by less than 100 MB")
	assert.True(t, errors.Is(oomErr, device.ErrOutOfMemory), "the out-of-memory error is the device's")
}

// TestPrintWhileWorking prints the device and what works on it while
// other goroutines allocate, copy and free: printing reads nothing that
// the work writes without synchronization (the race detector would say)
// and never waits for the work's locks.
func TestPrintWhileWorking(t *testing.T) {
	dev, err := device.Open("")
	require.NoError(t, err)
	defer dev.Close()
	data := make([]float32, 256*256)
	for i := range data {
		data[i] = rand.Float32()
	}
	a, err := devarray.FromHost(dev, data, 256, 256)
	require.NoError(t, err)
	defer a.Free()
	view, err := a.Transpose()
	require.NoError(t, err)
	copier, err := transfer.New(dev)
	require.NoError(t, err)
	defer copier.Close()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	devPool := pool.New(dev)
	defer devPool.Release()
	hostPool, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	defer hostPool.Close()
	ws := accounting.NewWorkspace(dev)
	defer ws.Free()

	const rounds = 50
	var latest atomic.Pointer[transfer.Op] // the copy in flight, or the last one
	done := make(chan error, 4)
	go func() { // arrays: allocate, read a strided view, free
		var err error
		for range rounds {
			var b *devarray.DevArray
			if b, err = devarray.FromHost(dev, data, 256, 256); err != nil {
				break
			}
			if _, err = devarray.ToHost[float32](view); err != nil {
				break
			}
			if err = b.Free(); err != nil {
				break
			}
		}
		done <- err
	}()
	go func() { // async copies
		var err error
		out := make([]float32, 256*256)
		for range rounds {
			var op *transfer.Op
			if op, err = copier.CopyAsync(s, transfer.Host(out, 256, 256), transfer.Dev(a)); err != nil {
				break
			}
			latest.Store(op)
			if err = op.Wait(); err != nil {
				break
			}
		}
		done <- err
	}()
	go func() { // the pools and the workspace
		var err error
		for range rounds {
			var p devarray.Ptr
			if p, err = devPool.Alloc(1 << 16); err != nil {
				break
			}
			if err = devPool.Free(p); err != nil {
				break
			}
			var b *pinned.Buffer
			if b, err = hostPool.Alloc(1 << 16); err != nil {
				break
			}
			if err = b.Free(); err != nil {
				break
			}
			var release func()
			if _, release, err = ws.Borrow(1 << 16); err != nil {
				break
			}
			release()
		}
		done <- err
	}()
	go func() { // the ledger's scopes
		var err error
		for range rounds {
			if _, err = dev.Ledger().Measure("work", func() error { return nil }); err != nil {
				break
			}
		}
		done <- err
	}()
	values := []any{dev, dev.Ledger(), a, view, copier, s, devPool, hostPool, ws}
	var printed int
	for finished := 0; finished < 4; {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished++
		default:
			for _, v := range values {
				printed += len(fmt.Sprintf("%v %+v %#v %s", v, v, v, v))
			}
			printed += len(fmt.Sprint(latest.Load()))
		}
	}
	assert.Positive(t, printed)
}

// TestPlusVSaysMore: on the default device, %+v of the device adds its
// ledger's totals to %v, %+v of an array its descriptor, and a method
// looked up in the registry prints its name and parameters, not {}.
func TestPlusVSaysMore(t *testing.T) {
	dev, err := device.Open("")
	require.NoError(t, err)
	defer dev.Close()
	data := make([]float32, 16+rand.IntN(64))
	for i := range data {
		data[i] = rand.Float32()
	}
	a, err := devarray.FromHost(dev, data)
	require.NoError(t, err)
	defer a.Free()
	values := []any{a}
	if strings.HasPrefix(dev.Info().Name, "sim:") {
		values = append(values, dev) // sim's device says more; the cuda backend's prints as %v
		assert.Contains(t, fmt.Sprintf("%+v", dev), "ledger:")
	}
	for _, v := range values {
		plain, plus := fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v)
		assert.True(t, len(plus) > len(plain) && plus[:len(plain)] == plain, "%%+v of %T adds to %%v: %q", v, plus)
	}
	assert.Contains(t, fmt.Sprintf("%+v", a), "descriptor:")
	m, err := plan.Default.Lookup("fbp.reconstruct")
	require.NoError(t, err)
	assert.Equal(t, "fbp.reconstruct (a plan.Method; parameters: size ≥ 1)", fmt.Sprintf("%v", m))
}
