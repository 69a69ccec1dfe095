package devarray_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// An error of this package says "devarray: " once, at its start, and
// still wraps its sentinel: the sentinel's own text carries no prefix.
func TestErrorsSayThePackageOnce(t *testing.T) {
	dev := newDev(t)
	data := randomFloat32(6)
	a, err := devarray.FromHost(dev, data, 2, 3)
	require.NoError(t, err)
	defer a.Free()
	freed, err := devarray.FromHost(dev, randomFloat32(4), 4)
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	for _, tc := range []struct {
		name string
		call func() error
		want error
		msg  string // the whole message, where it has no address in it
	}{
		{"from host, negative shape", func() error { _, err := devarray.FromHost(dev, data, -2, -3); return err }, devarray.ErrShape,
			"devarray: from host: shape [-2 -3]: dimension 0 is negative: invalid shape or index"},
		{"empty, negative shape", func() error { _, err := devarray.Empty(dev, devarray.Float32, 4, -1); return err }, devarray.ErrShape,
			"devarray: empty: shape [4 -1]: dimension 1 is negative: invalid shape or index"},
		{"zeros, too many elements", func() error { _, err := devarray.Zeros(dev, devarray.Float64, 1<<40, 1<<40); return err }, devarray.ErrOverflow,
			"devarray: empty: shape [1099511627776 1099511627776] has too many elements: size or offset overflows int64"},
		{"from host, wrong length", func() error { _, err := devarray.FromHost(dev, data, 4, 2); return err }, devarray.ErrHostSize,
			"devarray: from host: 24 bytes for [4 2] float32, which needs 32: host buffer size mismatch"},
		{"reshape", func() error { _, err := a.Reshape(4, 2); return err }, devarray.ErrShape, ""},
		{"slice", func() error { _, err := a.Slice(1, 0, 7); return err }, devarray.ErrShape, ""},
		{"copy of freed memory", func() error { _, err := devarray.ToHost[float32](freed); return err }, devarray.ErrFreed,
			"devarray: copy to host: memory was freed"},
		{"wrap, strides for another rank", func() error {
			_, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: a.Ptr(), Shape: []int{2, 3}, Strides: []int64{12}, DType: devarray.Float32, Device: a.Device()})
			return err
		}, devarray.ErrShape, "devarray: wrap: 1 strides for 2 dimensions: invalid shape or index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, tc.want)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "devarray: "), msg)
			assert.Equal(t, 1, strings.Count(msg, "devarray:"), "the package said once: %s", msg)
			assert.True(t, strings.HasSuffix(msg, ": "+tc.want.Error()), "ends with the sentinel: %s", msg)
			if tc.msg != "" {
				assert.Equal(t, tc.msg, msg)
			}
		})
	}
	for _, s := range []error{devarray.ErrFreed, devarray.ErrShape, devarray.ErrBounds, devarray.ErrHostSize, devarray.ErrDType} {
		assert.NotContains(t, s.Error(), "devarray:", "a sentinel's own text")
	}
}
