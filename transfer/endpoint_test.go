package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// HostBytes and Pinned without a shape hold as many elements of the dtype
// as fit: a copy moves those, and leaves the bytes past the last whole
// element alone.
func TestHostEndpointDefaultShape(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	const elems, extra = 1000, 3 // 3 bytes past the last whole float64
	buf, err := pinned.Alloc(dev, 8*elems+extra, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	for _, tc := range []struct {
		name string
		mem  []byte
		ep   func(mem []byte) transfer.Endpoint
	}{
		{"HostBytes", testdev.RandomBytes(8*elems + extra), func(mem []byte) transfer.Endpoint { return transfer.HostBytes(mem, devarray.Float64) }},
		{"Pinned", buf.Bytes(), func([]byte) transfer.Endpoint { return transfer.Pinned(buf, devarray.Float64) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copy(tc.mem, testdev.RandomBytes(len(tc.mem)))
			a, err := devarray.Empty(dev, devarray.Float64, elems)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Free()) }()
			before := dev.Ledger().Snapshot()
			require.NoError(t, c.Copy(transfer.Dev(a), tc.ep(tc.mem)))
			assert.Equal(t, int64(8*elems), accounting.Diff(before, dev.Ledger().Snapshot()).CopyTotal(accounting.HtoD).Bytes)
			got := make([]byte, 8*elems)
			require.NoError(t, a.CopyTo(got))
			assert.Equal(t, tc.mem[:8*elems], got)
			want := append([]byte(nil), got...)
			copy(tc.mem, testdev.RandomBytes(len(tc.mem)))
			tail := append([]byte(nil), tc.mem[8*elems:]...)
			before = dev.Ledger().Snapshot()
			require.NoError(t, c.Copy(tc.ep(tc.mem), transfer.Dev(a)))
			assert.Equal(t, int64(8*elems), accounting.Diff(before, dev.Ledger().Snapshot()).CopyTotal(accounting.DtoH).Bytes)
			assert.Equal(t, want, tc.mem[:8*elems], "back from the device")
			assert.Equal(t, tail, tc.mem[8*elems:], "the bytes past the last element are not written")
		})
	}
}

// A strided host view starts at its byte offset: Go memory at any offset
// (Go slices need no alignment), a pinned buffer at a multiple of the
// dtype's alignment, since a kernel may read it in place; an unaligned
// pinned view is refused (devarray.ErrMisaligned). A copy reads and
// writes only the view's bytes. An empty view may start at the very end
// of the memory, as mem[len(mem):] does.
func TestHostEndpointOffset(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	const n = 777 // float32 elements
	size := 4*n + 32
	buf, err := pinned.Alloc(dev, int64(size), 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	mbuf, err := pinned.Alloc(dev, int64(size), pinned.Mapped)
	require.NoError(t, err)
	defer func() { require.NoError(t, mbuf.Free()) }()
	for _, tc := range []struct {
		name   string
		buf    *pinned.Buffer // nil: Go memory
		offset int64
		via    transfer.Path
		want   error
	}{
		{"pageable at 28", nil, 28, transfer.PathAuto, nil},
		{"pageable at 1 (unaligned)", nil, 1, transfer.PathAuto, nil},
		{"pageable at 13 (unaligned)", nil, 13, transfer.PathStaged, nil},
		{"pinned at 28", buf, 28, transfer.PathAuto, nil},
		{"pinned at 2 (unaligned)", buf, 2, transfer.PathAuto, devarray.ErrMisaligned},
		{"mapped at 28, read in place", mbuf, 28, transfer.PathMapped, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := testdev.RandomBytes(size)
			ep := transfer.HostBytes(mem, devarray.Float32, n)
			if tc.buf != nil {
				mem = tc.buf.Bytes()
				copy(mem, testdev.RandomBytes(size))
				ep = transfer.Pinned(tc.buf, devarray.Float32, n)
			}
			ep = ep.Strided(tc.offset, 4)
			if tc.want != nil {
				assert.ErrorIs(t, ep.Err(), tc.want)
				return
			}
			require.NoError(t, ep.Err())
			a, err := devarray.Empty(dev, devarray.Float32, n)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Free()) }()
			view := mem[tc.offset : tc.offset+4*n]
			via := transfer.Via(tc.via)
			require.NoError(t, c.Copy(transfer.Dev(a), ep, via))
			got := make([]byte, 4*n)
			require.NoError(t, a.CopyTo(got))
			assert.Equal(t, view, got, "the copy read the view's bytes")
			copy(mem, testdev.RandomBytes(size))
			outside := append(append([]byte(nil), mem[:tc.offset]...), mem[tc.offset+4*n:]...)
			require.NoError(t, c.Copy(ep, transfer.Dev(a), via))
			assert.Equal(t, got, view, "the copy wrote the view's bytes")
			assert.Equal(t, outside, append(append([]byte(nil), mem[:tc.offset]...), mem[tc.offset+4*n:]...), "and none around it")
		})
	}
	t.Run("empty view at the end", func(t *testing.T) {
		mem := testdev.RandomBytes(64)
		ep := transfer.HostBytes(mem, devarray.Float32, 0).Strided(int64(len(mem)), 4)
		require.NoError(t, ep.Err())
		empty, err := devarray.Empty(dev, devarray.Float32, 0)
		require.NoError(t, err)
		defer func() { require.NoError(t, empty.Free()) }()
		before := dev.Ledger().Snapshot()
		require.NoError(t, c.Copy(transfer.Dev(empty), ep))
		assert.Zero(t, accounting.Diff(before, dev.Ledger().Snapshot()).Copied().Bytes, "nothing to move")
		past := transfer.HostBytes(mem, devarray.Float32, 0).Strided(int64(len(mem))+1, 4)
		assert.ErrorIs(t, past.Err(), devarray.ErrBounds, "one byte past the end")
	})
}
