//go:build cgo

package main

import (
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
)

// faultOrdinal is the sim ordinal (the allocator's device index) of the
// devices TestFaultCAPI opens: no other test's.
const faultOrdinal = 41

// faultMessage checks an error of the C API after the fault: it wraps
// ErrContextFailed, and the message C receives (and the allocator's last
// error) says that the device faulted.
func faultMessage(t *testing.T, err error, what string) bool {
	t.Helper()
	if err == nil {
		return true
	}
	assert.ErrorIs(t, err, device.ErrContextFailed, "%s: the only error here is the fault's", what)
	assert.Contains(t, err.Error(), device.ErrContextFailed.Error(), "%s: the message says so", what)
	return false
}

// TestFaultCAPI sweeps a sticky device fault (sim's fail-fault: an illegal
// address on a GPU) over every device operation of a sequence of C API
// calls (their Go halves): arrays made, filled from the host, copied on a
// stream (cuarray_copy_async), exported (CAI's stream, DLPack to a
// consumer's stream and as a copy, IPC), imported back and read, the
// allocator's malloc and free with the pool and without, the stream
// synchronized and released, everything released, with latency 0 and 1
// ms. Every call returns within the deadline; a failure's message names
// the fault (the allocator's as the thread's last error); a read that
// succeeds reads the source's bytes; no hold or pending work is left for
// ever; frees and deleters after the fault return; the device's Close
// then leaves its ledger at zero.
func TestFaultCAPI(t *testing.T) {
	for _, latency := range []string{"", "&latency=1ms"} {
		t.Run(strings.TrimPrefix(latency, "&"), func(t *testing.T) {
			for n := 1; ; n++ {
				require.Less(t, n, 500, "the sequence never ran without a fault")
				if !capiFault(t, fmt.Sprintf("sim:%d?mem=16MiB&fail-fault=%d%s", faultOrdinal, n, latency), n) {
					t.Logf("%d device operations, the fault at each", n-1)
					return
				}
			}
		})
	}
}

// capiFault runs the sequence on a fresh device spec; it reports whether
// the device faulted.
func capiFault(t *testing.T, spec string, n int) bool {
	goroutines := runtime.NumGoroutine()
	h, err := openDevice(spec)
	require.NoError(t, err)
	d, err := deviceOf(h)
	require.NoError(t, err)
	runtime.LockOSThread() // the allocator's last error is the thread's
	defer runtime.UnlockOSThread()
	threadError(true)

	done := make(chan struct{})
	var faulted bool
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		capiSequence(t, h, d, n)
		faulted = d.(interface{ Fault() error }).Fault() != nil
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("fail-fault=%d: the C API sequence did not return within 10 s\n%s", n, b.String())
	}

	// the device is the process's; a test closes it (its copier first)
	devices.Lock()
	c := devices.copiers[d]
	delete(devices.copiers, d)
	delete(devices.bySpec, spec)
	devices.Unlock()
	if c != nil {
		faultMessage(t, c.Close(), "Copier.Close")
	}
	allocator.Lock()
	p := allocator.pools[d]
	delete(allocator.pools, d)
	delete(allocator.targets, faultOrdinal)
	for k, s := range allocator.streams {
		if k.dev == d {
			_ = s.Close()
			delete(allocator.streams, k)
		}
	}
	allocator.Unlock()
	if p != nil {
		faultMessage(t, p.Release(), "pool Release")
	}
	require.NoError(t, d.Close())
	snap := d.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.Registered, accounting.IPC} {
		assert.Zero(t, snap.Kinds[k].Current, "fail-fault=%d: %v bytes after Close", n, k)
	}
	_, err = take(h)
	require.NoError(t, err)
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "fail-fault=%d: goroutines left running", n)
	return faulted
}

// capiSequence is the calls a Python program makes through the library,
// stopping at the first error as such a program does, then releasing all.
func capiSequence(t *testing.T, h uint64, d device.Device, n int) {
	const size = 4096
	src := testdev.RandomBytes(size)
	var arrays []uint64
	var stream uint64
	var src0 *devarray.DevArray // the source of the async copy
	defer func() {
		if stream != 0 {
			faultMessage(t, releaseStream(stream), "cuarray_stream_release")
		}
		for _, a := range arrays {
			faultMessage(t, releaseArray(a), "cuarray_release")
		}
		assert.Zero(t, pending.Len(), "fail-fault=%d: no async work is kept for ever", n)
		publish()
		if src0 != nil {
			assert.Zero(t, src0.Holds(), "fail-fault=%d: the async copy's hold on its source is let go once it is over, failed or not", n)
		}
	}()
	newArr := func() uint64 {
		a, err := empty(h, "uint8", []int{size}, false)
		if !faultMessage(t, err, "cuarray_empty") {
			return 0
		}
		arrays = append(arrays, a)
		return a
	}
	readAs := func(a uint64, what string, want []byte) bool {
		got := testdev.RandomBytes(size)
		if !faultMessage(t, copyHost(a, unsafe.Pointer(&got[0]), size, false), "cuarray_to_host "+what) {
			return false
		}
		assert.Equal(t, want, got, "fail-fault=%d: %s returned what it holds", n, what)
		return true
	}
	read := func(a uint64, what string) bool { return readAs(a, what, src) }
	// blocks of the allocator, without the pool and with it, live across
	// the fault: their frees after it return, with the fault as the last error
	for _, usePool := range []bool{false, true} {
		index, err := useAllocator(h, usePool, -1)
		require.NoError(t, err, "no device work")
		p := torchMalloc(3000, index, 0)
		require.NotZero(t, p, "fail-fault=%d: malloc before any device work: %s", n, threadError(true))
		defer func() {
			torchFree(p, 3000, index, 0)
			if msg := threadError(true); msg != "" {
				assert.Contains(t, msg, device.ErrContextFailed.Error(), "fail-fault=%d: the failed free's last error names the fault", n)
			}
		}()
	}
	a := newArr()
	if a == 0 || !faultMessage(t, copyHost(a, unsafe.Pointer(&src[0]), size, true), "cuarray_from_host") {
		return
	}
	b := newArr()
	if b == 0 {
		return
	}
	if e, err := arrayOf(a); assert.NoError(t, err) {
		src0 = e.arr
	}
	s, handle, err := newStream(h)
	if !faultMessage(t, err, "cuarray_stream_new") {
		return
	}
	stream = s
	if !faultMessage(t, copyAsync(b, a, handle), "cuarray_copy_async") {
		return
	}
	if _, err := exportStream(b); !faultMessage(t, err, "cuarray_export_stream") {
		return
	}
	if _, err := exportCAI(b, 0, false); !faultMessage(t, err, "cuarray_interface") {
		return
	}
	// a consumer's stream waits for the copy; the consumer reads on it
	tensor, err := toDLPack(b, true, false, int64(handle))
	if !faultMessage(t, err, "cuarray_export_dlpack") {
		return
	}
	c, err := fromDLPack(h, tensor, true)
	if err != nil {
		deleteDLPack(tensor)
		faultMessage(t, err, "cuarray_from_dlpack")
		return
	}
	arrays = append(arrays, c)
	if !read(c, "the DLPack import") {
		return
	}
	copied, err := toDLPack(b, false, true, consumerHost)
	if !faultMessage(t, err, "cuarray_to_dlpack copy") {
		return
	}
	deleteDLPackLegacy(copied)
	if !read(b, "the copy's destination") {
		return
	}
	if _, err := ipcExport(b); !faultMessage(t, err, "cuarray_ipc_export") {
		return
	}
	js, err := exportCAI(b, 0, false)
	if !faultMessage(t, err, "cuarray_interface") {
		return
	}
	imported, err := importCAI(h, js)
	if !faultMessage(t, err, "cuarray_import_interface") {
		return
	}
	arrays = append(arrays, imported)
	if !read(imported, "the CAI import") {
		return
	}
	// a zeroed array, a synchronous copy into it, a strided (flipped) view read back
	z, err := empty(h, "uint8", []int{size}, true)
	if !faultMessage(t, err, "cuarray_empty zeroed") {
		return
	}
	arrays = append(arrays, z)
	if !readAs(z, "a zeroed array", make([]byte, size)) || !faultMessage(t, copyArrays(z, a), "cuarray_copy") || !read(z, "a copy") {
		return
	}
	flipped, err := view(a, []byte(`{"op":"flip","axis":0}`))
	require.NoError(t, err, "a view does no device work")
	arrays = append(arrays, flipped)
	reversed := slices.Clone(src)
	slices.Reverse(reversed)
	if !readAs(flipped, "a flipped view", reversed) {
		return
	}
	if !faultMessage(t, syncStream(stream), "cuarray_stream_synchronize") {
		return
	}
	if e, err := arrayOf(a); assert.NoError(t, err) {
		assert.Zero(t, e.arr.Holds(), "fail-fault=%d: the finished copy holds its source no more", n)
	}
	// the allocator, without the pool and with it
	for _, usePool := range []bool{false, true} {
		index, err := useAllocator(h, usePool, -1)
		require.NoError(t, err, "no device work")
		p := torchMalloc(1024, index, 0)
		if p == 0 {
			msg := threadError(true)
			assert.Contains(t, msg, device.ErrContextFailed.Error(), "fail-fault=%d: the failed malloc's last error names the fault", n)
			return
		}
		torchFree(p, 1024, index, 0)
		if msg := threadError(true); msg != "" {
			assert.Contains(t, msg, device.ErrContextFailed.Error(), "fail-fault=%d: the failed free's last error names the fault", n)
			return
		}
	}
	if _, err := ledgerJSON(h); !faultMessage(t, err, "cuarray_ledger") {
		return
	}
	if d.(interface{ Fault() error }).Fault() == nil {
		return
	}
	// once the device faulted every call that touches it says so
	for _, call := range []struct {
		name string
		err  func() error
	}{
		{"cuarray_empty", func() error { _, err := empty(h, "float32", []int{4}, true); return err }},
		{"cuarray_copy", func() error { return copyArrays(b, a) }},
		{"cuarray_copy_async", func() error { return copyAsync(b, a, handle) }},
		{"cuarray_stream_synchronize", func() error { return syncStream(stream) }},
		{"cuarray_to_host", func() error { got := make([]byte, size); return copyHost(a, unsafe.Pointer(&got[0]), size, false) }},
		{"cuarray_to_dlpack copy", func() error {
			t, err := toDLPack(a, true, true, consumerHost)
			if err == nil {
				deleteDLPack(t)
			}
			return err
		}},
		{"cuarray_stream_new", func() error {
			s, _, err := newStream(h)
			if err == nil {
				_ = releaseStream(s)
			}
			return err
		}},
	} {
		err := call.err()
		assert.Error(t, err, "fail-fault=%d: %s after the fault", n, call.name)
		faultMessage(t, err, call.name)
	}
	index, err := useAllocator(h, true, -1)
	require.NoError(t, err)
	assert.Zero(t, torchMalloc(1024, index, 0), "fail-fault=%d: malloc after the fault", n)
	assert.Contains(t, threadError(true), device.ErrContextFailed.Error(), "fail-fault=%d: malloc's last error after the fault", n)
}
