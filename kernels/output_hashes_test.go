//go:build cuda

package kernels_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

// outputHashesFile is the table of every kernel's output hashes on fixed
// inputs: what the emulated driver's interpreted PTX gives, which a GPU
// must give bit for bit.
const outputHashesFile = "testdata/output_hashes.json"

var updateHashes = flag.Bool("update-hashes", false, "rewrite "+outputHashesFile+" with this run's hashes")

// outputHashes is the file's content: a SHA-256 per output, by the kernel
// that wrote it, and the reductions' results, which are kept as values
// because they add floats with atomics, in an order a GPU does not fix.
type outputHashes struct {
	Note    string             `json:"note"`
	Hashes  map[string]string  `json:"hashes"`
	Reduced map[string]float64 `json:"reduced_with_float_atomics"`
}

// fixedFloats returns n floats in [-2, 2) from a generator seeded by name:
// the same inputs on every machine.
func fixedFloats[T float32 | float64](name string, n int) []T {
	r := rand.New(rand.NewPCG(uint64(len(name)), seedOf(name)))
	s := make([]T, n)
	for i := range s {
		s[i] = T(r.Float64()*4 - 2)
	}
	return s
}

// fixedBytes returns n bytes from a generator seeded by name.
func fixedBytes(name string, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), seedOf(name)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func seedOf(name string) uint64 {
	h := sha256.Sum256([]byte(name))
	var s uint64
	for _, b := range h[:8] {
		s = s<<8 | uint64(b)
	}
	return s
}

// hashOf returns the SHA-256 of the bytes of a, which must be C-contiguous.
func hashOf[T devarray.Element](t *testing.T, a *devarray.DevArray) string {
	t.Helper()
	h, err := devarray.ToHost[T](a)
	require.NoError(t, err)
	sum := sha256.Sum256(devarray.AsBytes(h))
	return hex.EncodeToString(sum[:])
}

// TestOutputHashes runs each of the project's kernels on fixed random
// inputs and checks the SHA-256 of each output against the table: on the
// emulated driver, the interpreted PTX's answers, kept from run to run; on
// a GPU, the check that the interpreter computes what the GPU does, bit for
// bit. The reductions (sum_f32, sum_f64) add with float atomics, whose
// order a GPU does not fix: their values are compared within a tolerance.
// go test -tags cuda,cudaemu -run TestOutputHashes ./kernels -update-hashes
// rewrites the table.
func TestOutputHashes(t *testing.T) {
	if strings.Contains(os.Getenv("CUARRAY_EMULATED_DRIVER"), "kernels=go") {
		t.Skip("kernels=go runs the Go references, not the PTX the table is of")
	}
	dev := testdev.Open(t)
	k, err := kernels.New(dev)
	require.NoError(t, err)
	defer k.Close()
	got := outputHashes{
		Note:    "SHA-256 of each kernel's output on fixed inputs (kernels/output_hashes_test.go); written by the emulated driver's PTX interpreter, to equal a GPU's bit for bit. Sums use float atomics: values, compared within 1e-9 relative.",
		Hashes:  map[string]string{},
		Reduced: map[string]float64{},
	}
	elementwise[float32](t, k, "f32", got)
	elementwise[float64](t, k, "f64", got)
	moves(t, k, got)
	tomography[float32](t, k, "f32", got)
	tomography[float64](t, k, "f64", got)

	if *updateHashes {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(outputHashesFile, append(b, '\n'), 0o644))
		t.Logf("wrote %s: %d hashes", outputHashesFile, len(got.Hashes))
		return
	}
	raw, err := os.ReadFile(outputHashesFile)
	require.NoError(t, err, "make the table with -update-hashes on the emulated driver")
	var want outputHashes
	require.NoError(t, json.Unmarshal(raw, &want))
	names := make([]string, 0, len(got.Hashes))
	for name := range got.Hashes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Logf("%s %s", got.Hashes[name], name)
		assert.Equal(t, want.Hashes[name], got.Hashes[name], "%s: the output differs from the table's", name)
	}
	assert.Len(t, got.Hashes, len(want.Hashes), "every output of the table is computed")
	for name, v := range want.Reduced {
		assert.InEpsilon(t, v, got.Reduced[name], 1e-9, "%s", name)
	}
}

// elementwise runs fill, scale, axpy and sum on fixed inputs.
func elementwise[T float32 | float64](t *testing.T, k *kernels.Kernels, suffix string, out outputHashes) {
	dev := k.Device()
	const n = 3001
	from := func(name string) *devarray.DevArray {
		a, err := devarray.FromHost(dev, fixedFloats[T](name+suffix, n), n)
		require.NoError(t, err)
		t.Cleanup(func() { a.Free() })
		return a
	}
	a := from("fill")
	require.NoError(t, k.Fill(a, 1.2345678901234567))
	out.Hashes["fill_"+suffix] = hashOf[T](t, a)
	b := from("scale")
	require.NoError(t, k.Scale(b, -0.7071067811865476))
	out.Hashes["scale_"+suffix] = hashOf[T](t, b)
	x, y := from("axpy x"), from("axpy y")
	require.NoError(t, k.Axpy(y, 1.6180339887498949, x))
	out.Hashes["axpy_"+suffix] = hashOf[T](t, y)
	s, err := k.Sum(from("sum"))
	require.NoError(t, err)
	out.Reduced["sum_"+suffix] = s
}

// moves runs pack and unpack of every item size on strided views, the
// 16-byte contiguous copy, and the checksum.
func moves(t *testing.T, k *kernels.Kernels, out outputHashes) {
	t.Run("pack and unpack", func(t *testing.T) {
		for _, tc := range []struct {
			item int
			run  func(t *testing.T, k *kernels.Kernels, item int, out outputHashes)
		}{
			{1, packUnpack[uint8]}, {2, packUnpack[int16]}, {4, packUnpack[float32]}, {8, packUnpack[float64]}, {16, packUnpack[complex128]},
		} {
			tc.run(t, k, tc.item, out)
		}
	})
	dev := k.Device()
	src, err := devarray.FromBytes(dev, fixedBytes("copy_wide", 4099*16), devarray.Complex128, 4099)
	require.NoError(t, err)
	defer src.Free()
	dst, err := devarray.Empty(dev, devarray.Complex128, 4099)
	require.NoError(t, err)
	defer dst.Free()
	require.NoError(t, k.Pack(dst, src)) // contiguous on both sides: copy_wide
	out.Hashes["copy_wide"] = hashOf[complex128](t, dst)

	bytes, err := devarray.FromBytes(dev, fixedBytes("checksum", 100003), devarray.Uint8, 100003)
	require.NoError(t, err)
	defer bytes.Free()
	c, err := k.Checksum(bytes)
	require.NoError(t, err)
	out.Hashes["checksum"] = fmt.Sprintf("%016x", c)
}

// packUnpack packs every other column of a (37, 24) array of T, then
// unpacks the result into the other columns.
func packUnpack[T devarray.Element](t *testing.T, k *kernels.Kernels, item int, out outputHashes) {
	dev := k.Device()
	dt := devarray.DTypeOf[T]()
	base, err := devarray.FromBytes(dev, fixedBytes(fmt.Sprint("pack", item), 37*24*item), dt, 37, 24)
	require.NoError(t, err)
	defer base.Free()
	even, err := base.Slice(1, 0, 24, 2)
	require.NoError(t, err)
	odd, err := base.Slice(1, 1, 24, 2)
	require.NoError(t, err)
	flat, err := devarray.Empty(dev, dt, 37, 12)
	require.NoError(t, err)
	defer flat.Free()
	require.NoError(t, k.Pack(flat, even))
	out.Hashes[fmt.Sprintf("pack_%d", item)] = hashOf[T](t, flat)
	require.NoError(t, k.Unpack(odd, flat))
	out.Hashes[fmt.Sprintf("unpack_%d", item)] = hashOf[T](t, base)
}

// tomography runs the phantom, the projection, the ramp filter (its taps
// and filter kernels) and both backprojections (each with its trig table).
func tomography[T float32 | float64](t *testing.T, k *kernels.Kernels, suffix string, out outputHashes) {
	dev := k.Device()
	const n, slices, angles, bins = 24, 2, 30, 35
	empty := func(shape ...int) *devarray.DevArray {
		a, err := devarray.Empty(dev, devarray.DTypeOf[T](), shape...)
		require.NoError(t, err)
		t.Cleanup(func() { a.Free() })
		return a
	}
	ws := accounting.NewWorkspace(dev)
	defer ws.Free()
	img := empty(slices, n, n)
	require.NoError(t, k.Phantom(img, kernels.SheppLogan3D, 3, 8))
	out.Hashes["phantom_"+suffix] = hashOf[T](t, img)
	sino := empty(slices, angles, bins)
	require.NoError(t, k.Project(sino, img, ws))
	out.Hashes["project_"+suffix] = hashOf[T](t, sino)
	require.NoError(t, k.RampFilter(sino, ws))
	out.Hashes["ramp_filter_"+suffix] = hashOf[T](t, sino)
	for _, tiled := range []bool{false, true} {
		back := empty(slices, n, n)
		require.NoError(t, k.BackprojectWith(back, sino, ws, tiled))
		name := "backproject_" + suffix
		if tiled {
			name = "backproject_tiled_" + suffix
		}
		out.Hashes[name] = hashOf[T](t, back)
	}
}
