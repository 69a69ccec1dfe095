package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/stridedcase"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// A strided device view moves on the direct and pinned paths in one
// pitched driver copy when one can express it, else in one pack kernel
// and one contiguous copy, both ways: the ledger counts
// exactly that, and the data is the NumPy-style reference's.
func TestStridedCopyCounts(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	for _, tc := range stridedcase.Cases() {
		for _, path := range []transfer.Path{transfer.PathDirect, transfer.PathPinned} {
			t.Run(tc.Name+"/"+path.String(), func(t *testing.T) {
				n := 1
				for _, d := range tc.Parent {
					n *= d
				}
				data := randomFloats(n)
				parent, err := devarray.FromHost(dev, data, tc.Parent...)
				require.NoError(t, err)
				defer parent.Free()
				view, err := tc.View(parent)
				require.NoError(t, err)
				kernels := int64(1)
				if tc.Pitched {
					kernels = 0
				}
				// The host side: Go memory, or a pinned buffer.
				host := make([]byte, view.NBytes())
				ep := transfer.HostBytes(host, devarray.Float32, tc.Shape()...)
				if path == transfer.PathPinned {
					buf, err := pinned.Alloc(dev, view.NBytes(), 0)
					require.NoError(t, err)
					defer buf.Free()
					host = buf.Bytes()
					ep = transfer.Pinned(buf, devarray.Float32, tc.Shape()...)
				}

				before := dev.Ledger().Snapshot()
				require.NoError(t, c.Copy(ep, transfer.Dev(view), transfer.Via(path)))
				d := accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Equal(t, int64(1), d.Copies[accounting.DtoH][path.Ledger()].Count, "one copy to the host, on the path asked for")
				assert.Equal(t, view.NBytes(), d.CopyTotal(accounting.DtoH).Bytes, "only the view's bytes")
				assert.Equal(t, kernels, d.Copies[accounting.DtoD][accounting.PathKernel].Count, "pack kernels")
				assert.Equal(t, 1+kernels, d.Copied().Count, "and nothing else")
				assert.Equal(t, kernels, d.Allocations(), "a temporary for the pack")
				assert.Equal(t, devarray.AsBytes(stridedcase.Gather(tc, data)), host, "download of the view")

				fresh := randomFloats(int(view.Size()))
				copy(host, devarray.AsBytes(fresh))
				before = dev.Ledger().Snapshot()
				require.NoError(t, c.Copy(transfer.Dev(view), ep, transfer.Via(path)))
				d = accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Equal(t, int64(1), d.Copies[accounting.HtoD][path.Ledger()].Count, "one copy to the device, on the path asked for")
				assert.Equal(t, kernels, d.Copies[accounting.DtoD][accounting.PathKernel].Count, "unpack kernels")
				assert.Equal(t, 1+kernels, d.Copied().Count, "and nothing else")
				assert.Equal(t, kernels, d.Allocations(), "a temporary for the unpack")
				all, err := devarray.ToHost[float32](parent)
				require.NoError(t, err)
				want := append([]float32(nil), data...)
				for i, p := range tc.ParentIndex() {
					want[p] = fresh[i]
				}
				assert.Equal(t, want, all, "the upload wrote the view's elements and nothing else")
			})
		}
	}
}

// A strided host side that no pitched copy expresses (a transposed
// matrix) is gathered on the host and moved in one copy, on the path
// asked for: pinned memory through a page-locked temporary.
func TestStridedHostSideOneCopy(t *testing.T) {
	dev := testdev.Open(t)
	const rows, cols = 96, 80
	a, err := devarray.Empty(dev, devarray.Float32, cols, rows)
	require.NoError(t, err)
	defer a.Free()
	for _, path := range []transfer.Path{transfer.PathDirect, transfer.PathPinned} {
		t.Run(path.String(), func(t *testing.T) {
			buf, err := pinned.Alloc(dev, 4*rows*cols, 0)
			require.NoError(t, err)
			defer buf.Free()
			src := randomFloats(rows * cols)
			var ep transfer.Endpoint
			host := devarray.AsBytes(src)
			if path == transfer.PathPinned {
				ep = transfer.Pinned(buf, devarray.Float32, cols, rows)
				copy(buf.Bytes(), host)
			} else {
				ep = transfer.HostBytes(host, devarray.Float32, cols, rows)
			}
			transposed := ep.Strided(0, 4, cols*4) // shape (cols, rows) read as its transpose
			require.NoError(t, transposed.Err())
			before := dev.Ledger().Snapshot()
			require.NoError(t, transfer.Copy(transfer.Dev(a), transposed, transfer.Via(path)))
			d := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(1), d.Copied().Count, "one copy")
			assert.Equal(t, int64(1), d.Copies[accounting.HtoD][path.Ledger()].Count, "on the path asked for")
			got, err := devarray.ToHost[float32](a)
			require.NoError(t, err)
			for i := range cols {
				for j := range rows {
					require.Equal(t, src[j*cols+i], got[i*rows+j], "element (%d, %d)", i, j)
				}
			}
		})
	}
}
