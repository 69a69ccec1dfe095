package devarray_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// %+v of an array adds its descriptor to what %v prints; %v, %s and %#v
// print as String and GoString do; a freed or nil array prints as %v does.
func TestFormatPlusV(t *testing.T) {
	dev := newDev(t)
	rows, cols := 2+rand.IntN(7), 2+rand.IntN(7)
	host := make([]float64, rows*cols)
	for i := range host {
		host[i] = rand.NormFloat64()
	}
	a, err := devarray.FromHost(dev, host, rows, cols)
	require.NoError(t, err)
	defer a.Free()
	tr, err := a.Transpose()
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		a    *devarray.DevArray
		want []string
	}{
		{"owned", a, []string{fmt.Sprintf("shape [%d %d]", rows, cols), fmt.Sprintf("strides [%d 8] bytes", 8*cols), "typestr <f8", "readonly false", fmt.Sprintf("%d elements in %d bytes", rows*cols, 8*rows*cols), "C-contiguous true", "ptr 0x"}},
		{"transposed view", tr, []string{fmt.Sprintf("shape [%d %d]", cols, rows), fmt.Sprintf("strides [8 %d] bytes", 8*cols), "C-contiguous false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plus := fmt.Sprintf("%+v", tc.a)
			assert.Contains(t, plus, tc.a.String(), "%+v begins with what %v prints")
			assert.Contains(t, plus, "descriptor:")
			for _, w := range tc.want {
				assert.Contains(t, plus, w)
			}
			assert.Equal(t, tc.a.String(), fmt.Sprintf("%v", tc.a))
			assert.Equal(t, tc.a.String(), fmt.Sprintf("%s", tc.a))
			assert.Equal(t, tc.a.GoString(), fmt.Sprintf("%#v", tc.a))
			assert.Equal(t, fmt.Sprintf("%q", tc.a.String()), fmt.Sprintf("%q", tc.a))
		})
	}
	freed, err := devarray.FromHost(dev, host[:2])
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	assert.Contains(t, fmt.Sprintf("%+v", freed), "freed")
	var nilArray *devarray.DevArray
	assert.Equal(t, "DevArray(nil)", fmt.Sprintf("%+v", nilArray))
}
