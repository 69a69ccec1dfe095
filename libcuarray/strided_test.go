//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/stridedcase"
)

// The C library's copies of a strided view (cuarray_to_host,
// cuarray_from_host) take devarray.StridedCopy, transfer's code path:
// one pitched copy, or one pack kernel and one contiguous copy, both
// ways, counted in the ledger, with the NumPy-style reference's data.
func TestStridedCopyCounts(t *testing.T) {
	dev, err := openDevice(testSpec())
	require.NoError(t, err)
	d, err := deviceOf(dev)
	require.NoError(t, err)
	for _, tc := range stridedcase.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			n := 1
			for _, s := range tc.Parent {
				n *= s
			}
			data := make([]float32, n)
			for i := range data {
				data[i] = rand.Float32()*2 - 1
			}
			parent, err := empty(dev, "float32", tc.Parent, false)
			require.NoError(t, err)
			defer releaseArray(parent)
			raw := devarray.AsBytes(data)
			require.NoError(t, copyHost(parent, unsafe.Pointer(&raw[0]), int64(len(raw)), true))
			v := parent
			for a := range tc.Parent {
				op, _ := json.Marshal(viewOp{Op: "slice", Axis: a, Start: tc.Start[a], Stop: tc.Stop[a], Step: 1})
				v, err = view(v, op)
				require.NoError(t, err)
				defer releaseArray(v)
			}
			op, _ := json.Marshal(viewOp{Op: "permute", Axes: tc.Perm})
			v, err = view(v, op)
			require.NoError(t, err)
			defer releaseArray(v)
			kernels := int64(1)
			if tc.Pitched {
				kernels = 0
			}
			size := len(tc.ParentIndex())
			got := make([]float32, size)
			gotRaw := devarray.AsBytes(got)

			before := d.Ledger().Snapshot()
			require.NoError(t, copyHost(v, unsafe.Pointer(&gotRaw[0]), int64(len(gotRaw)), false))
			diff := accounting.Diff(before, d.Ledger().Snapshot())
			assert.Equal(t, stridedcase.Gather(tc, data), got, "download of the view")
			assert.Equal(t, int64(1), diff.CopyTotal(accounting.DtoH).Count, "one copy to the host")
			assert.Equal(t, kernels, diff.Copies[accounting.DtoD][accounting.PathKernel].Count, "pack kernels")
			assert.Equal(t, 1+kernels, diff.Copied().Count, "and nothing else")

			fresh := make([]float32, size)
			for i := range fresh {
				fresh[i] = rand.Float32()
			}
			freshRaw := devarray.AsBytes(fresh)
			before = d.Ledger().Snapshot()
			require.NoError(t, copyHost(v, unsafe.Pointer(&freshRaw[0]), int64(len(freshRaw)), true))
			diff = accounting.Diff(before, d.Ledger().Snapshot())
			assert.Equal(t, int64(1), diff.CopyTotal(accounting.HtoD).Count, "one copy to the device")
			assert.Equal(t, kernels, diff.Copies[accounting.DtoD][accounting.PathKernel].Count, "unpack kernels")
			assert.Equal(t, 1+kernels, diff.Copied().Count, "and nothing else")
			all := make([]float32, n)
			allRaw := devarray.AsBytes(all)
			require.NoError(t, copyHost(parent, unsafe.Pointer(&allRaw[0]), int64(len(allRaw)), false))
			want := append([]float32(nil), data...)
			for i, p := range tc.ParentIndex() {
				want[p] = fresh[i]
			}
			assert.Equal(t, want, all, fmt.Sprintf("the upload wrote the view's elements and nothing else (%s)", tc.Name))
		})
	}
}
