package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// Negative indices count from the end of an axis, as Python's do: a view
// made with them is the view made with the positive indices Python would
// use, over random data, and the error for one outside the axis says so.
func TestNegativeIndices(t *testing.T) {
	rows, cols := 3+rand.IntN(6), 3+rand.IntN(6)
	host := make([]float32, rows*cols)
	for i := range host {
		host[i] = rand.Float32()*2 - 1
	}
	a, err := devarray.FromHost(newDev(t), host, rows, cols)
	require.NoError(t, err)
	defer a.Free()
	k := 1 + rand.IntN(cols-1) // 1 .. cols-1
	tests := []struct {
		name      string
		neg, same func() (*devarray.DevArray, error)
	}{
		{"index -1", func() (*devarray.DevArray, error) { return a.Index(0, -1) }, func() (*devarray.DevArray, error) { return a.Index(0, rows-1) }},
		{"index -n", func() (*devarray.DevArray, error) { return a.Index(1, -cols) }, func() (*devarray.DevArray, error) { return a.Index(1, 0) }},
		{"index -k", func() (*devarray.DevArray, error) { return a.Index(1, -k) }, func() (*devarray.DevArray, error) { return a.Index(1, cols-k) }},
		{"slice the last k", func() (*devarray.DevArray, error) { return a.Slice(1, -k, cols) }, func() (*devarray.DevArray, error) { return a.Slice(1, cols-k, cols) }},
		{"slice all but the last", func() (*devarray.DevArray, error) { return a.Slice(0, 0, -1) }, func() (*devarray.DevArray, error) { return a.Slice(0, 0, rows-1) }},
		{"slice -n to -1, step 2", func() (*devarray.DevArray, error) { return a.Slice(1, -cols, -1, 2) }, func() (*devarray.DevArray, error) { return a.Slice(1, 0, cols-1, 2) }},
		{"slice -1 to -1, empty", func() (*devarray.DevArray, error) { return a.Slice(0, -1, -1) }, func() (*devarray.DevArray, error) { return a.Slice(0, rows-1, rows-1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.neg()
			require.NoError(t, err)
			want, err := tc.same()
			require.NoError(t, err)
			assert.Equal(t, want.Shape(), got.Shape())
			assert.Equal(t, want.Strides(), got.Strides())
			assert.Equal(t, want.Ptr(), got.Ptr(), "the same element 0")
			gh, err := devarray.ToHost[float32](got)
			require.NoError(t, err)
			wh, err := devarray.ToHost[float32](want)
			require.NoError(t, err)
			assert.Equal(t, wh, gh)
		})
	}
	for _, tc := range []struct {
		name string
		op   func() (*devarray.DevArray, error)
		msg  string
	}{
		{"index -(n+1)", func() (*devarray.DevArray, error) { return a.Index(0, -rows-1) }, "negative indices count from the end"},
		{"index n", func() (*devarray.DevArray, error) { return a.Index(0, rows) }, "out of range"},
		{"slice start -(n+1)", func() (*devarray.DevArray, error) { return a.Slice(1, -cols-1, cols) }, "negative ones count from the end"},
		{"slice stop before start", func() (*devarray.DevArray, error) { return a.Slice(1, -1, -2) }, "before its start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.op()
			require.ErrorIs(t, err, devarray.ErrShape)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}
