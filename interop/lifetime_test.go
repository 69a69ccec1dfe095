package interop_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// What outlives the owner's Free (docs/guide.md, "Zero-copy rules"): no
// view; a DLPack tensor, which holds the memory until its deleter runs;
// neither a CAI map nor the array ImportCAI borrows from it, unless the
// consumer holds the memory itself. Every export after Free is refused.
func TestExportsAfterFree(t *testing.T) {
	dev := testdev.Open(t)
	current := func() int64 { return dev.Ledger().Current(accounting.Device) }
	filled := func(t *testing.T) (*devarray.DevArray, []float32) {
		data := randomFloats(24)
		a, err := devarray.FromHost(dev, data, 4, 6)
		require.NoError(t, err)
		return a, data
	}
	transposed := func(data []float32) []float32 { // data of shape (4, 6), read as its (6, 4) transpose
		out := make([]float32, 0, len(data))
		for j := range 6 {
			for i := range 4 {
				out = append(out, data[i*6+j])
			}
		}
		return out
	}

	t.Run("a view does not", func(t *testing.T) {
		a, _ := filled(t)
		v, err := a.Transpose()
		require.NoError(t, err)
		require.NoError(t, a.Free())
		assert.Zero(t, current(), "the view held nothing")
		_, err = devarray.ToHost[float32](v)
		assert.ErrorIs(t, err, devarray.ErrFreed)
		_, err = interop.ExportCAI(v, 0)
		assert.ErrorIs(t, err, devarray.ErrFreed, "no CAI export of freed memory")
		_, err = interop.ExportDLPack(v)
		assert.ErrorIs(t, err, devarray.ErrFreed, "no DLPack export of freed memory")
	})

	t.Run("a DLPack tensor of a view does, until its deleter runs", func(t *testing.T) {
		a, data := filled(t)
		v, err := a.Transpose()
		require.NoError(t, err)
		p, err := interop.ExportDLPack(v)
		require.NoError(t, err)
		held := current()
		require.NoError(t, a.Free())
		assert.Equal(t, held, current(), "the tensor holds the memory")
		b, err := interop.ImportDLPack(dev, p)
		require.NoError(t, err)
		got, err := devarray.ToHost[float32](b)
		require.NoError(t, err)
		assert.Equal(t, transposed(data), got)
		require.NoError(t, b.Free(), "the deleter runs")
		assert.Zero(t, current(), "the deleter freed the memory")
	})

	t.Run("a CAI map and its import do not", func(t *testing.T) {
		a, _ := filled(t)
		m, err := interop.ExportCAI(a, 0)
		require.NoError(t, err)
		b, _, err := interop.ImportCAI(dev, m)
		require.NoError(t, err)
		require.NoError(t, a.Free())
		assert.Zero(t, current(), "the memory went at Free, though b still points at it")
		require.NoError(t, b.Free(), "freeing the borrower frees nothing")
	})

	t.Run("a CAI consumer that holds the memory does", func(t *testing.T) {
		a, data := filled(t)
		m, err := interop.ExportCAI(a, 0)
		require.NoError(t, err)
		release, err := a.Hold()
		require.NoError(t, err)
		b, _, err := interop.ImportCAI(dev, m, devarray.OnFree(release))
		require.NoError(t, err)
		held := current()
		require.NoError(t, a.Free())
		assert.Equal(t, held, current(), "the hold keeps the memory")
		c, err := devarray.FromHost(dev, randomFloats(24), 4, 6)
		require.NoError(t, err)
		assert.NotEqual(t, b.Ptr(), c.Ptr(), "a new allocation does not get held memory")
		got, err := devarray.ToHost[float32](b)
		require.NoError(t, err)
		assert.Equal(t, data, got, "the consumer reads the freed array's elements")
		require.NoError(t, b.Free(), "the borrower's Free releases the hold")
		require.NoError(t, c.Free())
		assert.Zero(t, current(), "the last release freed the memory")
	})
}
