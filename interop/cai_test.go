package interop_test

import (
	"encoding/json"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

func randomFloats(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = rand.Float32()*2 - 1
	}
	return xs
}

// Go → CAI (map and JSON) → Go keeps pointer, shape, strides, dtype and
// read-only, and the ledger shows no copy and no allocation.
func TestCAIRoundTrip(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.FromHost(dev, randomFloats(6*8), 6, 8)
	require.NoError(t, err)
	defer a.Free()
	sl, err := a.Slice(1, 1, 7, 2)
	require.NoError(t, err)
	tr, err := a.Transpose()
	require.NoError(t, err)
	ro, err := a.AsReadOnly()
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		arr    *devarray.DevArray
		stream uintptr
	}{
		{"contiguous", a, 0},
		{"stepped slice", sl, 0},
		{"transposed", tr, 7},
		{"read-only", ro, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dev.Ledger().Snapshot()
			m, err := interop.ExportCAI(tc.arr, tc.stream)
			require.NoError(t, err)
			assert.Equal(t, 3, m["version"])
			if tc.arr.IsContiguous() {
				assert.Nil(t, m["strides"], "C-contiguous arrays give strides None")
			}
			js, err := interop.MarshalCAI(tc.arr, tc.stream)
			require.NoError(t, err)
			parsed, err := interop.ParseJSON(js)
			require.NoError(t, err)
			for _, in := range []map[string]any{m, parsed} {
				b, stream, err := interop.ImportCAI(dev, in, devarray.WithBounds(a.Ptr(), a.NBytes()))
				require.NoError(t, err)
				assert.Equal(t, tc.stream, stream)
				assert.Equal(t, tc.arr.Ptr(), b.Ptr())
				assert.Equal(t, tc.arr.Shape(), b.Shape())
				assert.Equal(t, tc.arr.Strides(), b.Strides())
				assert.Equal(t, tc.arr.DType(), b.DType())
				assert.Equal(t, tc.arr.ReadOnly(), b.ReadOnly())
				assert.False(t, b.Owned(), "an imported array borrows")
				require.NoError(t, b.Free(), "freeing a borrowed array frees nothing")
			}
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Zero(t, diff.Copied().Count, "a hand-over copies nothing")
			assert.Zero(t, diff.Allocations(), "a hand-over allocates nothing")
			got, err := devarray.ToHost[float32](tc.arr)
			require.NoError(t, err)
			assert.Len(t, got, int(tc.arr.Size()), "the memory is still there to read")
		})
	}
	require.NoError(t, a.Err())
}

func TestArrayInterfaceIsHostOnly(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.FromHost(dev, randomFloats(10))
	require.NoError(t, err)
	defer a.Free()
	m, err := interop.ExportArrayInterface(a)
	if !testdev.IsSim(dev) {
		assert.ErrorIs(t, err, devarray.ErrDevice, "GPU memory has no __array_interface__")
		return
	}
	require.NoError(t, err)
	assert.NotContains(t, m, "stream")
	h, err := interop.ImportArrayInterface(m)
	require.NoError(t, err)
	assert.Equal(t, devarray.CPU, h.Device().Kind)
	assert.Equal(t, a.Ptr(), h.Ptr())
}

// Every malformed field is a clear error, never a panic.
func TestImportCAIErrors(t *testing.T) {
	dev := testdev.Open(t)
	good := func() map[string]any {
		return map[string]any{"shape": []any{2, 3}, "typestr": "<f4", "data": []any{uint64(0x1000), false}, "version": 3}
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		opts   []devarray.WrapOption
		want   error
	}{
		{"bad typestr", func(m map[string]any) { m["typestr"] = "<x9" }, nil, devarray.ErrDType},
		{"big-endian", func(m map[string]any) { m["typestr"] = ">f4" }, nil, devarray.ErrDType},
		{"typestr not a string", func(m map[string]any) { m["typestr"] = 4 }, nil, interop.ErrInterface},
		{"negative shape", func(m map[string]any) { m["shape"] = []any{-1, 3} }, nil, interop.ErrInterface},
		{"overflowing shape", func(m map[string]any) { m["shape"] = []any{1 << 40, 1 << 40} }, nil, devarray.ErrOverflow},
		{"shape not a tuple", func(m map[string]any) { m["shape"] = "2,3" }, nil, interop.ErrInterface},
		{"fractional size", func(m map[string]any) { m["shape"] = []any{2.5, 3} }, nil, interop.ErrInterface},
		{"strides of the wrong length", func(m map[string]any) { m["strides"] = []any{12} }, nil, interop.ErrInterface},
		{"strides outside the allocation", func(m map[string]any) { m["strides"] = []any{400, 4} }, []devarray.WrapOption{devarray.WithBounds(0x1000, 24)}, devarray.ErrBounds},
		{"a mask", func(m map[string]any) { m["mask"] = map[string]any{} }, nil, interop.ErrInterface},
		{"stream 0", func(m map[string]any) { m["stream"] = 0 }, nil, interop.ErrInterface},
		{"negative stream", func(m map[string]any) { m["stream"] = -3 }, nil, interop.ErrInterface},
		{"version 1", func(m map[string]any) { m["version"] = 1 }, nil, interop.ErrInterface},
		{"version 4", func(m map[string]any) { m["version"] = 4 }, nil, interop.ErrInterface},
		{"no version", func(m map[string]any) { delete(m, "version") }, nil, interop.ErrInterface},
		{"data not a pair", func(m map[string]any) { m["data"] = []any{uint64(1)} }, nil, interop.ErrInterface},
		{"negative pointer", func(m map[string]any) { m["data"] = []any{-4, false} }, nil, interop.ErrInterface},
		{"read-only not a bool", func(m map[string]any) { m["data"] = []any{uint64(0x1000), "no"} }, nil, interop.ErrInterface},
		{"null pointer", func(m map[string]any) { m["data"] = []any{0, false} }, nil, devarray.ErrBounds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.change(m)
			_, _, err := interop.ImportCAI(dev, m, tc.opts...)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, _, err := interop.ImportCAI(dev, nil)
	assert.ErrorIs(t, err, interop.ErrInterface)
	_, _, err = interop.ImportCAI(nil, good())
	assert.ErrorIs(t, err, devarray.ErrNoBackend)
	_, err = interop.ParseJSON([]byte(`{"version": 3} {}`))
	assert.ErrorIs(t, err, interop.ErrInterface)
	_, err = interop.ParseJSON([]byte(`[1]`))
	assert.ErrorIs(t, err, interop.ErrInterface)
}

// FuzzImportCAIJSON feeds arbitrary JSON to the importer: it may refuse,
// never panic, and what it accepts lies inside the bounds it was given.
func FuzzImportCAIJSON(f *testing.F) {
	f.Add([]byte(`{"shape":[2,3],"typestr":"<f4","data":[4096,false],"version":3,"strides":null,"stream":null}`))
	f.Add([]byte(`{"shape":[3,2],"typestr":"<f8","data":[4096,true],"version":2,"strides":[8,24],"stream":2}`))
	f.Add([]byte(`{"shape":[],"typestr":"|u1","data":[18446744073709551615,false],"version":3}`))
	f.Add([]byte(`{"shape":[1e300],"typestr":"<c16","data":[1,false],"version":3,"mask":null}`))
	dev := testdev.Open(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := interop.ParseJSON(data)
		if err != nil {
			return
		}
		a, _, err := interop.ImportCAI(dev, m, devarray.WithBounds(0x1000, 1<<20))
		if err != nil {
			return
		}
		lo, hi := a.Extent()
		off := int64(a.Ptr() - 0x1000)
		if a.Size() > 0 {
			require.GreaterOrEqual(t, off+lo, int64(0))
			require.LessOrEqual(t, off+hi, int64(1<<20))
		}
		// What was accepted exports back to the same description.
		back, err := interop.MarshalCAI(a, 0)
		require.NoError(t, err)
		var again map[string]any
		require.NoError(t, json.Unmarshal(back, &again))
	})
}
