package device_test

// These tests hold every backend to the same contract. They run on the
// device internal/testdev opens: sim by default, the GPU in a build with
// -tags cuda (see `make gpu-bundle`).

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
)

func TestMallocAlignsAndCounts(t *testing.T) {
	dev := testdev.Open(t)
	var ptrs []devarray.Ptr
	for _, n := range []int64{0, 1, 255, 256, 257, 1000} {
		p, err := dev.Malloc(n)
		require.NoError(t, err, "malloc %d", n)
		assert.Zero(t, int64(p)%dev.Info().Alignment, "pointer for %d bytes is 256-aligned", n)
		assert.NotContains(t, ptrs, p, "pointers are distinct, even for 0 bytes")
		ptrs = append(ptrs, p)
	}
	want := int64(256 + 256 + 256 + 256 + 512 + 1024)
	assert.Equal(t, want, dev.Ledger().Current(accounting.Device), "the ledger counts aligned sizes")
	free, total, err := dev.MemInfo()
	require.NoError(t, err)
	if testdev.IsSim(dev) {
		assert.Equal(t, total-want, free, "sim's free memory is exact; a GPU's moves with the driver's own allocations")
	} else {
		assert.Less(t, free, total)
	}
	for _, p := range ptrs {
		require.NoError(t, dev.Free(p))
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Device))

	assert.ErrorIs(t, dev.Free(ptrs[0]), driver.ErrInvalidPointer, "double free")
	assert.ErrorIs(t, dev.Free(ptrs[1]+16), driver.ErrInvalidPointer, "not the start of an allocation")
	assert.ErrorIs(t, dev.Free(0x1234), driver.ErrInvalidPointer, "not device memory")
	_, err = dev.Malloc(-1)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

func TestCopies(t *testing.T) {
	dev := testdev.Open(t)
	const n = 4096
	src := testdev.RandomBytes(n)
	a, err := dev.Malloc(n)
	require.NoError(t, err)
	b, err := dev.Malloc(n)
	require.NoError(t, err)

	require.NoError(t, dev.CopyHtoD(a, src))
	require.NoError(t, dev.CopyDtoD(b, a, n))
	got := make([]byte, n)
	require.NoError(t, dev.CopyDtoH(got, b))
	assert.Equal(t, src, got)

	require.NoError(t, dev.Memset(b+100, 0xab, 50))
	require.NoError(t, dev.CopyDtoH(got, b))
	for i := range got {
		want := src[i]
		if i >= 100 && i < 150 {
			want = 0xab
		}
		require.Equal(t, want, got[i], "byte %d", i)
	}

	s := dev.Ledger().Snapshot()
	assert.Equal(t, int64(n), s.Copies[accounting.HtoD][accounting.PathDirect].Bytes)
	assert.Equal(t, int64(n), s.Copies[accounting.DtoD][accounting.PathD2D].Bytes)
	assert.Equal(t, int64(2*n), s.Copies[accounting.DtoH][accounting.PathDirect].Bytes)
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: 50, Seconds: s.Memsets.Seconds}, s.Memsets)

	if !testdev.IsSim(dev) {
		// A GPU's driver catches only addresses outside any mapping; the
		// sim checks every byte against its allocations.
		require.NoError(t, dev.Free(a))
		require.NoError(t, dev.Free(b))
		return
	}
	// Out of bounds: an error, never a touch outside the allocation.
	assert.ErrorIs(t, dev.CopyHtoD(a+1, src), driver.ErrInvalidPointer)
	assert.ErrorIs(t, dev.CopyDtoH(make([]byte, n+1), a), driver.ErrInvalidPointer)
	assert.ErrorIs(t, dev.CopyDtoD(b, a+n-10, 20), driver.ErrInvalidPointer)
	assert.ErrorIs(t, dev.CopyDtoD(b+n-10, a, 20), driver.ErrInvalidPointer)
	assert.ErrorIs(t, dev.Memset(a, 0, n+1), driver.ErrInvalidPointer)
	assert.ErrorIs(t, dev.CopyHtoD(0x10, src), driver.ErrInvalidPointer)
	require.NoError(t, dev.Free(a))
	assert.ErrorIs(t, dev.CopyDtoH(got, a), driver.ErrInvalidPointer, "use after free is caught")
	require.NoError(t, dev.Free(b))
}

func TestMemcpy2D(t *testing.T) {
	dev := testdev.Open(t)
	const w, h, pitch = 24, 5, 64
	host := testdev.RandomBytes(w * h)
	d, err := dev.Malloc(pitch * h)
	require.NoError(t, err)
	defer dev.Free(d)
	require.NoError(t, dev.Memset(d, 0x5a, pitch*h))

	// Host (packed) -> device (pitched).
	require.NoError(t, dev.Memcpy2D(devarray.Memcpy2D{
		Dst: devarray.Place{Dev: d}, DstPitch: pitch, Src: devarray.Place{Host: host}, SrcPitch: w, Width: w, Height: h,
	}))
	full := make([]byte, pitch*h)
	require.NoError(t, dev.CopyDtoH(full, d))
	for r := range h {
		assert.Equal(t, host[r*w:(r+1)*w], full[r*pitch:r*pitch+w], "row %d", r)
		assert.Equal(t, byte(0x5a), full[r*pitch+w], "the pitch padding is untouched")
	}
	// Device -> device (pitched to packed) -> host.
	e, err := dev.Malloc(w * h)
	require.NoError(t, err)
	defer dev.Free(e)
	require.NoError(t, dev.Memcpy2D(devarray.Memcpy2D{
		Dst: devarray.Place{Dev: e}, DstPitch: w, Src: devarray.Place{Dev: d}, SrcPitch: pitch, Width: w, Height: h,
	}))
	back := make([]byte, w*h)
	require.NoError(t, dev.Memcpy2D(devarray.Memcpy2D{
		Dst: devarray.Place{Host: back}, DstPitch: w, Src: devarray.Place{Dev: e}, SrcPitch: w, Width: w, Height: h,
	}))
	assert.Equal(t, host, back)
	// Host -> host.
	hh := make([]byte, w*h)
	require.NoError(t, dev.Memcpy2D(devarray.Memcpy2D{
		Dst: devarray.Place{Host: hh}, DstPitch: w, Src: devarray.Place{Host: host}, SrcPitch: w, Width: w, Height: h,
	}))
	assert.Equal(t, host, hh)

	s := dev.Ledger().Snapshot()
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoD, accounting.HtoH} {
		assert.Equal(t, int64(w*h), s.CopyTotal(dir).Bytes, "%v counts width × height bytes", dir)
	}
	assert.Equal(t, int64(w*h+pitch*h), s.CopyTotal(accounting.DtoH).Bytes, "the 2-D copy and the full readback")

	bad := []devarray.Memcpy2D{
		{Dst: devarray.Place{Dev: d}, DstPitch: 10, Src: devarray.Place{Host: host}, SrcPitch: w, Width: w, Height: h},
		{Dst: devarray.Place{Dev: d}, DstPitch: pitch, Src: devarray.Place{Host: host[:50]}, SrcPitch: w, Width: w, Height: h},
		{Dst: devarray.Place{Dev: d}, DstPitch: 1 << 62, Src: devarray.Place{Host: host}, SrcPitch: w, Width: w, Height: h},
		{Dst: devarray.Place{Dev: d}, DstPitch: pitch, Src: devarray.Place{Host: host}, SrcPitch: w, Width: -1, Height: h},
	}
	for i, p := range bad {
		err := dev.Memcpy2D(p)
		assert.Error(t, err, "bad copy %d", i)
		assert.True(t, errors.Is(err, driver.ErrInvalidValue) || errors.Is(err, driver.ErrInvalidPointer), "bad copy %d: %v", i, err)
	}
}

func TestHostMemory(t *testing.T) {
	dev := testdev.Open(t)
	tests := []struct {
		flags driver.HostFlags
		kind  accounting.Kind
	}{
		{0, accounting.Pinned},
		{driver.Portable, accounting.Pinned},
		{driver.Mapped, accounting.Mapped},
		{driver.Mapped | driver.WriteCombined, accounting.WriteCombined},
		{driver.WriteCombined | driver.Portable, accounting.WriteCombined},
	}
	for _, tt := range tests {
		t.Run(tt.flags.String(), func(t *testing.T) {
			h, err := dev.HostAlloc(8192, tt.flags)
			require.NoError(t, err)
			assert.Len(t, h.Bytes, 8192)
			assert.Equal(t, int64(8192), dev.Ledger().Current(tt.kind))
			assert.Equal(t, tt.flags&driver.Mapped != 0, h.DevPtr != 0, "only mapped memory has a device pointer")

			copy(h.Bytes, testdev.RandomBytes(8192))
			d, err := dev.Malloc(8192)
			require.NoError(t, err)
			before := dev.Ledger().Snapshot()
			require.NoError(t, dev.CopyHtoD(d, h.Bytes))
			require.NoError(t, dev.CopyDtoH(h.Bytes[:4096], d))
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(8192), diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "page-locked memory takes the pinned path")
			assert.Equal(t, int64(4096), diff.Copies[accounting.DtoH][accounting.PathPinned].Bytes)
			if h.DevPtr != 0 {
				// The device reaches mapped memory in place.
				require.NoError(t, dev.CopyDtoD(d, h.DevPtr, 8192))
				got := make([]byte, 8192)
				require.NoError(t, dev.CopyDtoH(got, d))
				assert.Equal(t, h.Bytes, got)
			}
			require.NoError(t, dev.Free(d))
			require.NoError(t, dev.HostFree(h))
			assert.Zero(t, dev.Ledger().Current(tt.kind))
			assert.Nil(t, h.Bytes, "HostFree clears the buffer")
			assert.ErrorIs(t, dev.HostFree(h), driver.ErrInvalidPointer, "double free")
		})
	}

	_, err := dev.HostAlloc(0, 0)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	_, err = dev.HostAlloc(10, 1<<7)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	assert.ErrorIs(t, dev.HostFree(&driver.HostMem{Bytes: make([]byte, 10)}), driver.ErrInvalidPointer, "Go memory is not ours to free")
	assert.ErrorIs(t, dev.HostFree(nil), driver.ErrInvalidPointer)

	assert.True(t, dev.Info().CanMapHost, "the primary context is opened with CU_CTX_MAP_HOST")
	assert.Contains(t, dev.Info().ContextFlags, "map_host")
}

func TestRegister(t *testing.T) {
	dev := testdev.Open(t)
	mem, err := syscall.Mmap(-1, 0, 3*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	copy(mem, testdev.RandomBytes(len(mem)))

	h, err := dev.Register(mem[:8192], driver.Mapped)
	require.NoError(t, err)
	assert.Equal(t, int64(8192), dev.Ledger().Current(accounting.Registered))
	assert.NotZero(t, h.DevPtr, "registered with Mapped, the memory has a device address")

	_, err = dev.Register(mem[4096:], 0)
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "overlaps the registered range")
	_, err = dev.Register(mem[8192:], driver.WriteCombined)
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "write-combined applies to HostAlloc only")
	assert.ErrorIs(t, dev.HostFree(h), driver.ErrInvalidPointer, "registered memory is unregistered, not freed")

	d, err := dev.Malloc(8192)
	require.NoError(t, err)
	before := dev.Ledger().Snapshot()
	require.NoError(t, dev.CopyHtoD(d, mem[:8192]))
	require.NoError(t, dev.CopyDtoH(mem[8192:], d+4096))
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(8192), diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "registered memory is page-locked")
	assert.Equal(t, int64(4096), diff.Copies[accounting.DtoH][accounting.PathDirect].Bytes, "the last page was not registered")
	assert.Equal(t, mem[4096:8192], mem[8192:])

	// The device reads registered, mapped memory in place.
	require.NoError(t, dev.Memset(d, 0, 8192))
	require.NoError(t, dev.CopyDtoD(d, h.DevPtr, 8192))
	got := make([]byte, 8192)
	require.NoError(t, dev.CopyDtoH(got, d))
	assert.Equal(t, mem[:8192], got)
	require.NoError(t, dev.Free(d))

	require.NoError(t, dev.Unregister(h))
	assert.Zero(t, dev.Ledger().Current(accounting.Registered))
	assert.ErrorIs(t, dev.Unregister(h), driver.ErrInvalidPointer, "unregistered twice")
	_, err = dev.Register(nil, 0)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

func TestStagingMemoryRecordsStagedPath(t *testing.T) {
	dev := testdev.Open(t)
	h, err := dev.HostAlloc(4096, driver.Staging)
	require.NoError(t, err)
	copy(h.Bytes, testdev.RandomBytes(4096))
	d, err := dev.Malloc(4096)
	require.NoError(t, err)
	before := dev.Ledger().Snapshot()
	require.NoError(t, dev.CopyHtoD(d, h.Bytes))
	require.NoError(t, dev.CopyDtoH(h.Bytes, d))
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(4096), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes)
	assert.Equal(t, int64(4096), diff.Copies[accounting.DtoH][accounting.PathStaged].Bytes)
	assert.Zero(t, diff.CopyTotal(accounting.HtoD).Bytes-4096, "nothing else was copied")
	assert.Equal(t, int64(4096), dev.Ledger().Current(accounting.Pinned), "staging memory is pinned memory")
	require.NoError(t, dev.Free(d))
	require.NoError(t, dev.HostFree(h))
}

func TestStreamRunsInOrder(t *testing.T) {
	dev := testdev.Open(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 1 << 16
	a, err := dev.Malloc(n)
	require.NoError(t, err)
	b, err := dev.Malloc(n)
	require.NoError(t, err)

	src := testdev.RandomBytes(n)
	out := make([]byte, n)
	// Each step depends on the one before: only in-order execution gives src back.
	require.NoError(t, s.CopyHtoDAsync(a, src))
	require.NoError(t, s.CopyDtoDAsync(b, a, n))
	require.NoError(t, s.MemsetAsync(a, 0, n))
	require.NoError(t, s.Memcpy2DAsync(devarray.Memcpy2D{Dst: devarray.Place{Dev: a}, DstPitch: 256, Src: devarray.Place{Dev: b}, SrcPitch: 256, Width: 256, Height: n / 256}))
	require.NoError(t, s.CopyDtoHAsync(out, a))
	require.NoError(t, s.Synchronize())
	assert.Equal(t, src, out)

	snap := dev.Ledger().Snapshot()
	assert.Equal(t, int64(n), snap.CopyTotal(accounting.HtoD).Bytes, "async copies are counted like sync ones")
	assert.Equal(t, int64(2*n), snap.CopyTotal(accounting.DtoD).Bytes)
	assert.Equal(t, int64(n), snap.CopyTotal(accounting.DtoH).Bytes)
	require.NoError(t, dev.Free(a))
	require.NoError(t, dev.Free(b))
}

func TestEvents(t *testing.T) {
	dev := testdev.Open(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	start, err := dev.NewEvent()
	require.NoError(t, err)
	end, err := dev.NewEvent()
	require.NoError(t, err)

	done, err := end.Query()
	require.NoError(t, err)
	assert.True(t, done, "an event never recorded is complete")

	gate, err := dev.NewStream()
	require.NoError(t, err)
	defer gate.Close()
	block, err := dev.NewEvent()
	require.NoError(t, err)
	hold := make([]byte, 1<<22)
	p, err := dev.Malloc(int64(len(hold)))
	require.NoError(t, err)
	defer dev.Free(p)

	require.NoError(t, s.Record(start))
	require.NoError(t, s.CopyHtoDAsync(p, hold))
	require.NoError(t, s.Record(end))
	require.NoError(t, end.Synchronize())
	done, err = end.Query()
	require.NoError(t, err)
	assert.True(t, done)
	el, err := end.Elapsed(start)
	require.NoError(t, err)
	assert.Greater(t, el, time.Duration(0), "the copy between the events took time")

	// WaitEvent: work on gate waits for block, which s records after its copy.
	require.NoError(t, s.CopyHtoDAsync(p, testdev.RandomBytes(len(hold))))
	require.NoError(t, s.Record(block))
	out := make([]byte, 16)
	require.NoError(t, gate.WaitEvent(block))
	require.NoError(t, gate.CopyDtoHAsync(out, p))
	require.NoError(t, gate.Synchronize())
	first := make([]byte, 16)
	require.NoError(t, dev.CopyDtoH(first, p))
	assert.Equal(t, first, out, "gate's copy ran after s's upload")

	other := testdev.Open(t)
	foreign, err := other.NewEvent()
	require.NoError(t, err)
	assert.ErrorIs(t, s.Record(foreign), driver.ErrInvalidValue)
	// "h_event may be from a different context or device than h_stream"
	// (cuStreamWaitEvent): an event never recorded is complete.
	assert.NoError(t, s.WaitEvent(foreign), "a wait for another device's event")
	_, err = end.Elapsed(foreign)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)

	require.NoError(t, start.Close())
	assert.ErrorIs(t, s.Record(start), driver.ErrClosed)
	assert.ErrorIs(t, s.WaitEvent(start), driver.ErrClosed, "waiting on a closed event, on every backend")
}

func TestMemcpy3D(t *testing.T) {
	dev := testdev.Open(t)
	const w, h, depth = 40, 6, 5 // a box of 40-byte rows
	const pitch, sliceHeight = 64, 8
	host := testdev.RandomBytes(w * h * depth)
	d, err := dev.Malloc(pitch * sliceHeight * depth)
	require.NoError(t, err)
	defer dev.Free(d)
	require.NoError(t, dev.Memset(d, 0x77, pitch*sliceHeight*depth))

	up := devarray.Memcpy3D{
		Dst: devarray.Place{Dev: d}, DstPitch: pitch, DstHeight: sliceHeight,
		Src: devarray.Place{Host: host}, SrcPitch: w, SrcHeight: h,
		Width: w, Height: h, Depth: depth,
	}
	require.NoError(t, dev.Memcpy3D(up))
	full := make([]byte, pitch*sliceHeight*depth)
	require.NoError(t, dev.CopyDtoH(full, d))
	for z := range depth {
		for y := range sliceHeight {
			row := full[(z*sliceHeight+y)*pitch:]
			if y < h {
				assert.Equal(t, host[(z*h+y)*w:(z*h+y+1)*w], row[:w], "slice %d row %d", z, y)
				assert.Equal(t, byte(0x77), row[w], "pitch padding untouched")
			} else {
				assert.Equal(t, byte(0x77), row[0], "slice padding rows untouched")
			}
		}
	}
	// Back through a stream, as a packed box.
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	back := make([]byte, len(host))
	require.NoError(t, s.Memcpy3DAsync(devarray.Memcpy3D{
		Dst: devarray.Place{Host: back}, DstPitch: w, DstHeight: h,
		Src: devarray.Place{Dev: d}, SrcPitch: pitch, SrcHeight: sliceHeight,
		Width: w, Height: h, Depth: depth,
	}))
	require.NoError(t, s.Synchronize())
	assert.Equal(t, host, back)

	snap := dev.Ledger().Snapshot()
	assert.Equal(t, int64(len(host)), snap.CopyTotal(accounting.HtoD).Bytes)
	assert.Equal(t, int64(len(host)+len(full)), snap.CopyTotal(accounting.DtoH).Bytes)

	bad := up
	bad.DstHeight = h - 1
	assert.ErrorIs(t, dev.Memcpy3D(bad), driver.ErrInvalidValue, "slice height below the height")
	bad = up
	bad.Src = devarray.Place{Host: host[:len(host)-1]}
	assert.ErrorIs(t, dev.Memcpy3D(bad), driver.ErrInvalidValue, "host buffer one byte short")
}

func TestCopyPeer(t *testing.T) {
	a := testdev.Open(t)
	b := testdev.Open(t)
	const n = 1 << 16
	src := testdev.RandomBytes(n)
	pa, err := a.Malloc(n)
	require.NoError(t, err)
	defer a.Free(pa)
	pb, err := b.Malloc(n)
	require.NoError(t, err)
	defer b.Free(pb)
	require.NoError(t, a.CopyHtoD(pa, src))
	require.NoError(t, a.CopyPeer(pb, b, pa, n))
	got := make([]byte, n)
	require.NoError(t, b.CopyDtoH(got, pb))
	assert.Equal(t, src, got)
	peer := a.Ledger().Snapshot().Copies[accounting.Peer][accounting.PathPeer]
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: n, Seconds: peer.Seconds}, peer, "the source device records the peer copy")
	assert.ErrorIs(t, a.CopyPeer(pa, a, pa, n), driver.ErrInvalidValue, "a device is not its own peer")
}
