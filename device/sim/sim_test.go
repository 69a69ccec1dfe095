package sim_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

func newDevice(t testing.TB, cfg sim.Config) *sim.Device {
	t.Helper()
	if cfg.Memory == 0 {
		cfg.Memory = 16 << 20
	}
	dev, err := sim.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

func TestNewAndInfo(t *testing.T) {
	dev := newDevice(t, sim.Config{Ordinal: 2, Memory: 1<<20 + 100})
	i := dev.Info()
	assert.Equal(t, "sim:2", i.Name)
	assert.Equal(t, devarray.DeviceID{Kind: devarray.Sim, Ordinal: 2}, i.ID)
	assert.Equal(t, "sim", i.Backend)
	assert.Equal(t, int64(1<<20), i.TotalMemory, "capacity rounds down to the alignment")
	assert.Equal(t, int64(256), i.Alignment)
	assert.True(t, i.CanMapHost)
	assert.Equal(t, "sim:2", dev.Ledger().Name())

	_, err := sim.New(sim.Config{Memory: 100})
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	_, err = sim.New(sim.Config{Ordinal: -1})
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	def, err := sim.New(sim.Config{})
	require.NoError(t, err)
	assert.Equal(t, int64(sim.DefaultMemory), def.Info().TotalMemory, "4 GiB by default")
	require.NoError(t, def.Close())
}

func TestMallocAlignsAndCounts(t *testing.T) {
	dev := newDevice(t, sim.Config{Memory: 1 << 20})
	var ptrs []devarray.Ptr
	for _, n := range []int64{0, 1, 255, 256, 257, 1000} {
		p, err := dev.Malloc(n)
		require.NoError(t, err, "malloc %d", n)
		assert.Zero(t, uintptr(p)%sim.Alignment, "pointer for %d bytes is 256-aligned", n)
		assert.NotContains(t, ptrs, p, "pointers are distinct, even for 0 bytes")
		ptrs = append(ptrs, p)
	}
	want := int64(256 + 256 + 256 + 256 + 512 + 1024)
	assert.Equal(t, want, dev.Ledger().Current(accounting.Device), "the ledger counts aligned sizes")
	free, total, err := dev.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, total-want, free)
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

func TestOutOfMemory(t *testing.T) {
	dev := newDevice(t, sim.Config{Memory: 1 << 20})
	p, err := dev.Malloc(700 << 10)
	require.NoError(t, err)
	defer dev.Free(p)

	_, err = dev.Malloc(400 << 10)
	require.ErrorIs(t, err, accounting.ErrOutOfMemory)
	var oom *accounting.OutOfMemoryError
	require.True(t, errors.As(err, &oom))
	assert.False(t, oom.ByLimit, "the device itself is full")
	assert.Equal(t, int64(400<<10), oom.Requested)
	assert.Equal(t, int64(700<<10), oom.InUse)
	assert.Equal(t, int64(324<<10), oom.DeviceFree)
	assert.Equal(t, int64(1<<20), oom.DeviceTotal)

	_, err = dev.Malloc(2 << 20)
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "larger than the device")

	require.NoError(t, dev.Ledger().SetLimit(accounting.Device, 800<<10))
	_, err = dev.Malloc(200 << 10)
	require.True(t, errors.As(err, &oom))
	assert.True(t, oom.ByLimit, "the ledger's limit refused it")
	assert.Equal(t, int64(324<<10), oom.DeviceFree, "with the device's figures")
	assert.Equal(t, int64(3), dev.Ledger().Snapshot().Kinds[accounting.Device].Failed)
	assert.Equal(t, int64(700<<10), dev.Ledger().Current(accounting.Device), "failures leave nothing counted")
}

func TestCopies(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	const n = 4096
	src := randomBytes(n)
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
	dev := newDevice(t, sim.Config{})
	const w, h, pitch = 24, 5, 64
	host := randomBytes(w * h)
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
		{Dst: devarray.Place{Dev: d}, DstPitch: pitch * 2, Src: devarray.Place{Host: host}, SrcPitch: w, Width: w, Height: h},
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
	dev := newDevice(t, sim.Config{})
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

			copy(h.Bytes, randomBytes(8192))
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
			} else {
				assert.ErrorIs(t, dev.CopyDtoD(d, devarray.Ptr(uintptr(0)), 1), driver.ErrInvalidPointer)
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

	noMap := newDevice(t, sim.Config{NoMapHost: true})
	assert.False(t, noMap.Info().CanMapHost)
	_, err = noMap.HostAlloc(4096, driver.Mapped)
	assert.ErrorIs(t, err, driver.ErrNotMapped, "no silent fallback to unmapped memory")
	assert.Contains(t, err.Error(), "CU_CTX_MAP_HOST")
	h, err := noMap.HostAlloc(4096, driver.Portable)
	require.NoError(t, err, "unmapped memory still works")
	require.NoError(t, noMap.HostFree(h))
}

func TestHostFlagsString(t *testing.T) {
	assert.Equal(t, "none", driver.HostFlags(0).String())
	assert.Equal(t, "portable|mapped|write-combined", (driver.Portable | driver.Mapped | driver.WriteCombined).String())
	assert.Equal(t, "mapped|unknown", (driver.Mapped | 1<<9).String())
	assert.Equal(t, "unknown", driver.HostFlags(1<<9).String())
}

func TestFaultInjection(t *testing.T) {
	dev := newDevice(t, sim.Config{FailAlloc: 2})
	p, err := dev.Malloc(10)
	require.NoError(t, err, "the first allocation succeeds")
	_, err = dev.Malloc(10)
	assert.ErrorIs(t, err, driver.ErrInjected, "the second fails")
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "and looks like an out-of-memory error")
	q, err := dev.Malloc(10)
	require.NoError(t, err, "the third succeeds again")

	dev.FailCopy(3)
	buf := randomBytes(10)
	require.NoError(t, dev.CopyHtoD(p, buf))
	require.NoError(t, dev.CopyHtoD(p, buf))
	assert.ErrorIs(t, dev.CopyHtoD(p, buf), driver.ErrInjected)
	require.NoError(t, dev.CopyHtoD(p, buf))

	dev.FailAlloc(1)
	_, err = dev.HostAlloc(100, 0)
	assert.ErrorIs(t, err, driver.ErrInjected)
	dev.FailCopy(1)
	dev.FailCopy(0)
	assert.NoError(t, dev.Memset(p, 1, 10), "0 cancels")

	require.NoError(t, dev.Free(p))
	require.NoError(t, dev.Free(q))
	s := dev.Ledger().Snapshot()
	assert.Zero(t, s.Kinds[accounting.Device].Current)
	assert.Zero(t, s.Kinds[accounting.Pinned].Current)
	assert.Equal(t, int64(1), s.Kinds[accounting.Device].Failed)
}

func TestClose(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(t, err)
	p, err := dev.Malloc(1000)
	require.NoError(t, err)
	h, err := dev.HostAlloc(100, driver.Mapped)
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.MemsetAsync(p, 7, 1000))

	require.NoError(t, dev.Close())
	require.NoError(t, dev.Close(), "closing twice is harmless")
	snap := dev.Ledger().Snapshot()
	assert.Zero(t, snap.Kinds[accounting.Device].Current, "Close frees what was left, and counts it")
	assert.Zero(t, snap.Kinds[accounting.Mapped].Current)
	assert.Equal(t, int64(1), snap.Memsets.Count, "queued work ran before Close returned")

	_, err = dev.Malloc(10)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, dev.Free(p), driver.ErrClosed)
	assert.ErrorIs(t, dev.CopyDtoH(make([]byte, 10), p), driver.ErrClosed)
	_, _, err = dev.MemInfo()
	assert.ErrorIs(t, err, driver.ErrClosed)
	_, err = dev.HostAlloc(10, 0)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, dev.HostFree(h), driver.ErrClosed)
	_, err = dev.NewStream()
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, s.MemsetAsync(p, 1, 1), driver.ErrClosed)
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "a refused allocation leaves nothing counted")
}
