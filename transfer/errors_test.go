package transfer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// Bad copies get a clear error, move nothing and allocate nothing; Plan
// refuses them with the same error.
func TestCopyErrors(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer c.Close()
	a, err := devarray.FromHost(dev, randomFloats(12), 3, 4)
	require.NoError(t, err)
	defer a.Free()
	ro, err := a.AsReadOnly()
	require.NoError(t, err)
	freed, err := devarray.Empty(dev, devarray.Float32, 12)
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	buf, err := pinned.Alloc(dev, 48, 0)
	require.NoError(t, err)
	defer buf.Free()
	other, err := device.Open("sim:3?mem=1MiB")
	require.NoError(t, err)
	defer other.Close()
	elsewhere, err := devarray.Empty(other, devarray.Float32, 3, 4)
	require.NoError(t, err)
	host := make([]float32, 12)
	paths := transfer.Paths()
	afterLast := paths[len(paths)-1] + 1

	for _, tc := range []struct {
		name     string
		dst, src transfer.Endpoint
		opts     []transfer.Option
		want     error
	}{
		{"shapes differ", transfer.Host(host, 4, 3), transfer.Dev(a), nil, transfer.ErrMismatch},
		{"dtypes differ", transfer.Host(make([]int32, 12), 3, 4), transfer.Dev(a), nil, transfer.ErrMismatch},
		{"read-only destination", transfer.Dev(ro), transfer.Host(host, 3, 4), nil, devarray.ErrReadOnly},
		{"freed array", transfer.Host(host), transfer.Dev(freed), nil, devarray.ErrFreed},
		{"nil array", transfer.Host(host), transfer.Dev(nil), nil, device.ErrInvalidValue},
		{"zero endpoint", transfer.Endpoint{}, transfer.Dev(a), nil, device.ErrInvalidValue},
		{"pinned path from pageable memory", transfer.Dev(a), transfer.Host(host, 3, 4), []transfer.Option{transfer.Via(transfer.PathPinned)}, transfer.ErrPath},
		{"staged path from pinned memory", transfer.Dev(a), transfer.Pinned(buf, devarray.Float32, 3, 4), []transfer.Option{transfer.Via(transfer.PathStaged)}, transfer.ErrPath},
		{"direct path from pinned memory", transfer.Dev(a), transfer.Pinned(buf, devarray.Float32, 3, 4), []transfer.Option{transfer.Via(transfer.PathDirect)}, transfer.ErrPath},
		{"mapped path from unmapped memory", transfer.Dev(a), transfer.Pinned(buf, devarray.Float32, 3, 4), []transfer.Option{transfer.Via(transfer.PathMapped)}, transfer.ErrPath},
		{"d2d path to the host", transfer.Host(host, 3, 4), transfer.Dev(a), []transfer.Option{transfer.Via(transfer.PathD2D)}, transfer.ErrPath},
		{"peer path on one device", transfer.Dev(a), transfer.Dev(a), []transfer.Option{transfer.Via(transfer.PathPeer)}, transfer.ErrPath},
		{"staged host to host", transfer.Host(host), transfer.Host(make([]float32, 12)), []transfer.Option{transfer.Via(transfer.PathStaged)}, transfer.ErrPath},
		{"unknown path", transfer.Dev(a), transfer.Host(host, 3, 4), []transfer.Option{transfer.Via(transfer.Path(99))}, transfer.ErrPath},
		{"the path after the last", transfer.Dev(a), transfer.Host(host, 3, 4), []transfer.Option{transfer.Via(afterLast)}, transfer.ErrPath},
		{"array of another device", transfer.Host(host, 3, 4), transfer.Dev(elsewhere), nil, devarray.ErrDevice},
		{"device to device from another device", transfer.Dev(a), transfer.Dev(elsewhere), nil, devarray.ErrDevice},
		{"strided device endpoint", transfer.Host(host), transfer.Dev(a).Strided(0, 4), nil, device.ErrInvalidValue},
		{"strides outside the memory", transfer.Dev(a), transfer.Host(host, 3, 4).Strided(0, 20, 4), nil, devarray.ErrBounds},
		{"negative offset", transfer.Dev(a), transfer.Host(host, 3, 4).Strided(-4, 16, 4), nil, devarray.ErrBounds},
		{"bad dtype", transfer.Dev(a), transfer.HostBytes(make([]byte, 48), devarray.DType(200)), nil, devarray.ErrDType},
		{"freed pinned buffer", transfer.Dev(a), transfer.Pinned(freedBuffer(t, dev), devarray.Float32), nil, pinned.ErrFreed},
		{"nil pinned buffer", transfer.Dev(a), transfer.Pinned(nil, devarray.Float32), nil, device.ErrInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dev.Ledger().Snapshot()
			err := c.Copy(tc.dst, tc.src, tc.opts...)
			require.ErrorIs(t, err, tc.want)
			_, err = c.Plan(tc.dst, tc.src, tc.opts...)
			assert.ErrorIs(t, err, tc.want, "Plan")
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Zero(t, diff.Copied().Bytes, "nothing moved")
			assert.Zero(t, diff.Allocations(), "nothing allocated")
		})
	}
	require.NoError(t, elsewhere.Free())
	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.Copy(transfer.Host(host, 3, 4), transfer.Dev(a)), transfer.ErrClosed)
	_, err = transfer.New(nil)
	assert.Error(t, err)
}

func freedBuffer(t *testing.T, dev device.Device) *pinned.Buffer {
	b, err := pinned.Alloc(dev, 48, 0)
	require.NoError(t, err)
	require.NoError(t, b.Free())
	return b
}

func TestParsePath(t *testing.T) {
	for _, p := range append(transfer.Paths(), transfer.PathAuto) {
		got, err := transfer.ParsePath(p.String())
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := transfer.ParsePath("teleport")
	assert.ErrorContains(t, err, "staged")
	assert.ErrorIs(t, err, transfer.ErrUnknownName)
	assert.Equal(t, "Path(42)", transfer.Path(42).String())
	paths := transfer.Paths()
	afterLast := paths[len(paths)-1] + 1
	assert.Equal(t, fmt.Sprintf("Path(%d)", uint8(afterLast)), afterLast.String(), "the number after the last path is no path")
	_, err = transfer.ParsePath(afterLast.String())
	assert.ErrorIs(t, err, transfer.ErrUnknownName)
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"direct", "pinned", "staged", "", "PINNED", "d2d\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := transfer.ParsePath(s)
		if err != nil {
			assert.ErrorIs(t, err, transfer.ErrUnknownName)
			return
		}
		assert.Equal(t, s, p.String(), "a parsed path prints as it was written")
	})
}

// FuzzStridedHostCopy copies between two host layouts made from fuzzed
// strides and checks every element against a direct reference.
func FuzzStridedHostCopy(f *testing.F) {
	f.Add(uint8(3), uint8(4), int16(16), int16(4), int16(4), int16(12), uint16(0), uint16(0))
	f.Add(uint8(5), uint8(2), int16(-8), int16(4), int16(8), int16(-4), uint16(40), uint16(4))
	f.Fuzz(func(t *testing.T, r, c uint8, s0, s1, d0, d1 int16, srcOff, dstOff uint16) {
		rows, cols := int(r%9), int(c%9)
		src := randomFloats(256)
		dst := randomFloats(256)
		orig := append([]float32(nil), dst...)
		se := transfer.Host(src, rows, cols).Strided(int64(srcOff%1024)&^3, int64(s0)&^3, int64(s1)&^3)
		de := transfer.Host(dst, rows, cols).Strided(int64(dstOff%1024)&^3, int64(d0)&^3, int64(d1)&^3)
		if se.Err() != nil || de.Err() != nil {
			return // outside the memory: refused, as TestCopyErrors checks
		}
		// Overlapping destination elements make the result order-dependent.
		seen := map[int64]bool{}
		for i := range rows {
			for j := range cols {
				off := int64(dstOff%1024)&^3 + int64(i)*(int64(d0)&^3) + int64(j)*(int64(d1)&^3)
				if seen[off] {
					return
				}
				seen[off] = true
			}
		}
		require.NoError(t, transfer.Copy(de, se))
		want := orig
		for i := range rows {
			for j := range cols {
				so := (int64(srcOff%1024)&^3 + int64(i)*(int64(s0)&^3) + int64(j)*(int64(s1)&^3)) / 4
				do := (int64(dstOff%1024)&^3 + int64(i)*(int64(d0)&^3) + int64(j)*(int64(d1)&^3)) / 4
				want[do] = src[so]
			}
		}
		assert.Equal(t, want, dst)
	})
}

// A pinned buffer freed after its endpoint was made is refused by the
// copy, never read or written after it is gone.
func TestPinnedEndpointFreedBeforeCopy(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.Empty(dev, devarray.Uint8, 4096)
	require.NoError(t, err)
	defer a.Free()
	buf, err := pinned.Alloc(dev, 4096, 0)
	require.NoError(t, err)
	ep := transfer.Pinned(buf, devarray.Uint8)
	require.NoError(t, buf.Free())
	err = transfer.Copy(transfer.Dev(a), ep)
	assert.ErrorIs(t, err, pinned.ErrFreed)
	assert.Zero(t, dev.Ledger().Snapshot().CopyTotal(accounting.HtoD).Bytes)
}

// A pinned buffer that is gone by the time of the copy is refused with
// the reason it is gone: freed (pinned.ErrFreed), or its device closed
// (pinned.ErrClosed, not a Free the caller never made), by Copy and Plan,
// whether its endpoint was made before it went or after.
func TestPinnedEndpointGoneBeforeCopy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gone  func(t *testing.T, dev device.Device, buf *pinned.Buffer)
		want  error
		after bool // the endpoint is made after the buffer went
	}{
		{"freed", func(t *testing.T, _ device.Device, buf *pinned.Buffer) { require.NoError(t, buf.Free()) }, pinned.ErrFreed, false},
		{"device closed", func(t *testing.T, dev device.Device, _ *pinned.Buffer) { require.NoError(t, dev.Close()) }, pinned.ErrClosed, false},
		{"freed, endpoint made after", func(t *testing.T, _ device.Device, buf *pinned.Buffer) { require.NoError(t, buf.Free()) }, pinned.ErrFreed, true},
		{"device closed, endpoint made after", func(t *testing.T, dev device.Device, _ *pinned.Buffer) { require.NoError(t, dev.Close()) }, pinned.ErrClosed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := device.Open("sim:3?mem=1MiB")
			require.NoError(t, err)
			defer dev.Close()
			c, err := transfer.New(dev)
			require.NoError(t, err)
			defer c.Close()
			const n = 4096
			buf, err := pinned.Alloc(dev, n, 0)
			require.NoError(t, err)
			copy(buf.Bytes(), testdev.RandomBytes(n))
			ep := transfer.Pinned(buf, devarray.Uint8)
			tc.gone(t, dev, buf)
			if tc.after {
				ep = transfer.Pinned(buf, devarray.Uint8)
				assert.ErrorIs(t, ep.Err(), tc.want, "the endpoint says so")
			}
			out := testdev.RandomBytes(n)
			want := append([]byte(nil), out...)
			err = c.Copy(transfer.HostBytes(out, devarray.Uint8), ep)
			assert.ErrorIs(t, err, tc.want)
			if tc.want != pinned.ErrFreed {
				assert.NotErrorIs(t, err, pinned.ErrFreed)
			}
			assert.Equal(t, want, out, "nothing was copied")
			_, err = c.Plan(transfer.HostBytes(out, devarray.Uint8), ep)
			assert.ErrorIs(t, err, tc.want, "Plan")
		})
	}
}

// A host side smaller than the shape it is given says so, with both
// sizes, as devarray's CopyTo does, whichever side it is on; the error
// still wraps devarray.ErrBounds, and "transfer: " is said once.
func TestCopyHostSideTooSmall(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.FromHost(dev, randomFloats(6), 2, 3)
	require.NoError(t, err)
	defer a.Free()
	buf, err := pinned.Alloc(dev, 16, 0)
	require.NoError(t, err)
	defer buf.Free()
	small := randomFloats(4)
	for _, tc := range []struct {
		name     string
		dst, src transfer.Endpoint
		want     string
	}{
		{"into pageable memory", transfer.Host(small, 2, 3), transfer.Dev(a),
			"transfer: destination: host side too small: 16 bytes of pageable memory, and an array [2 3] of float32 needs 24: out of bounds"},
		{"from pageable memory", transfer.Dev(a), transfer.HostBytes(devarray.AsBytes(small), devarray.Float32, 2, 3),
			"transfer: source: host side too small: 16 bytes of pageable memory, and an array [2 3] of float32 needs 24: out of bounds"},
		{"into pinned memory", transfer.Pinned(buf, devarray.Float32, 2, 3), transfer.Dev(a),
			"transfer: destination: host side too small: 16 bytes of pinned memory, and an array [2 3] of float32 needs 24: out of bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]float32(nil), small...)
			err := transfer.Copy(tc.dst, tc.src)
			require.ErrorIs(t, err, devarray.ErrBounds)
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, before, small, "nothing written")
		})
	}
}
