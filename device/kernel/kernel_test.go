package kernel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestSaxpyMatchesGoReference runs the guide's SAXPY on the test device
// (sim, the emulated driver, or a GPU) and compares every element, bit for
// bit, with fma.rn.f32 computed in Go.
func TestSaxpyMatchesGoReference(t *testing.T) {
	dev := testdev.Open(t)
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	for _, n := range []int{1, 255, 256, 1000, 4097} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			xs, ys := randomFloats(n), randomFloats(n)
			a := randomFloats(1)[0]
			x, err := devarray.FromHost(dev, xs)
			require.NoError(t, err)
			defer x.Free()
			y, err := devarray.FromHost(dev, ys)
			require.NoError(t, err)
			defer y.Free()
			err = saxpy.Launch(kernel.Grid1D(int64(n), 256),
				kernel.F32(a), kernel.In(x).Of(devarray.Float32), kernel.InOut(y).Of(devarray.Float32), kernel.I32(int32(n)))
			require.NoError(t, err)
			got, err := devarray.ToHost[float32](y)
			require.NoError(t, err)
			for i := range got {
				require.Equal(t, fma32(a, xs[i], ys[i]), got[i], "element %d", i)
			}
		})
	}
}

// laplacianRef is the stencil's Go reference, adding in the kernel's
// order: ((up + down) + left) + right - 4·centre (4·centre is exact).
func laplacianRef(in []float32, h, w int) []float32 {
	at := func(r, c int) float32 {
		if r < 0 || r >= h || c < 0 || c >= w {
			return 0
		}
		return in[r*w+c]
	}
	out := make([]float32, h*w)
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			s := at(r-1, c) + at(r+1, c)
			s += at(r, c-1)
			s += at(r, c+1)
			out[r*w+c] = s + -4*at(r, c)
		}
	}
	return out
}

// TestLaplacianStencilMatchesGoReference runs the guide's shared-memory
// stencil on 16×16 tiles with a halo, on images that do and do not fill
// whole tiles.
func TestLaplacianStencilMatchesGoReference(t *testing.T) {
	dev := testdev.Open(t)
	lap := loadKernel(t, dev, stencilPTX, "laplacian")
	const tile = 16
	for _, sz := range [][2]int{{1, 1}, {16, 16}, {33, 47}, {7, 100}} {
		h, w := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", h, w), func(t *testing.T) {
			img := randomFloats(h * w)
			in, err := devarray.FromHost(dev, img, h, w)
			require.NoError(t, err)
			defer in.Free()
			out, err := devarray.Empty(dev, devarray.Float32, h, w)
			require.NoError(t, err)
			defer out.Free()
			cfg := kernel.Tiles2D(int64(w), int64(h), tile, tile).WithShared((tile + 2) * (tile + 2) * 4)
			err = lap.Launch(cfg, kernel.In(in).Contiguous(), kernel.Out(out).Contiguous(), kernel.I32(int32(h)), kernel.I32(int32(w)))
			require.NoError(t, err)
			got, err := devarray.ToHost[float32](out)
			require.NoError(t, err)
			require.Equal(t, laplacianRef(img, h, w), got)
		})
	}
}

// TestLaunchRefusesBadArguments: each bad argument or shape is refused
// before the launch, with an error that says which, and nothing is left
// allocated.
func TestLaunchRefusesBadArguments(t *testing.T) {
	dev := testdev.Open(t)
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	x, err := devarray.FromHost(dev, randomFloats(64), 8, 8)
	require.NoError(t, err)
	defer x.Free()
	y, err := devarray.FromHost(dev, randomFloats(64), 8, 8)
	require.NoError(t, err)
	defer y.Free()
	freed, err := devarray.FromHost(dev, randomFloats(64))
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	ro, err := y.AsReadOnly()
	require.NoError(t, err)
	strided, err := y.Transpose()
	require.NoError(t, err)
	ints, err := devarray.FromHost(dev, []int32{3, 1, 4, 1, 5, 9, 2, 6})
	require.NoError(t, err)
	defer ints.Free()
	ok := kernel.Grid1D(64, 64)
	for _, tc := range []struct {
		name string
		cfg  kernel.Config
		args []kernel.Arg
		want error
		says string
	}{
		{"freed array", ok, []kernel.Arg{kernel.F32(2), kernel.In(freed), kernel.InOut(y), kernel.I32(64)}, devarray.ErrFreed, "argument 2 (In)"},
		{"read-only array written", ok, []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(ro), kernel.I32(64)}, devarray.ErrReadOnly, "argument 3 (InOut)"},
		{"wrong dtype", ok, []kernel.Arg{kernel.F32(2), kernel.In(ints).Of(devarray.Float32), kernel.InOut(y), kernel.I32(64)}, devarray.ErrDType, "int32"},
		{"not contiguous", ok, []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(strided).Contiguous(), kernel.I32(64)}, devarray.ErrShape, "C-contiguous"},
		{"zero Arg", ok, []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(y), {}}, nil, "argument 4 is empty"},
		{"struct alignment", ok, []kernel.Arg{kernel.Struct([]byte{1, 2, 3}, 3)}, nil, "not a power of two"},
		{"no threads", kernel.Config{Grid: kernel.Dim3{1, 1, 1}}, nil, nil, "no threads"},
		{"block too large", kernel.Grid1D(4096, 2048), nil, nil, "2048 threads"},
		{"grid too large", kernel.Config{Grid: kernel.Dim3{1, 1 << 17, 1}, Block: kernel.Dim3{32, 1, 1}}, nil, nil, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := saxpy.Launch(tc.cfg, tc.args...)
			require.Error(t, err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			assert.Contains(t, err.Error(), tc.says)
			assert.Contains(t, err.Error(), "saxpy")
		})
	}
	assert.Equal(t, int64(3*256), dev.Ledger().Current(accounting.Device), "x, y and ints, nothing else")
}

// TestLaunchOnEmptyGridDoesNothing: n = 0 gives a grid of no blocks.
func TestLaunchOnEmptyGridDoesNothing(t *testing.T) {
	dev := testdev.Open(t)
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	x, err := devarray.Empty(dev, devarray.Float32, 0)
	require.NoError(t, err)
	defer x.Free()
	require.NoError(t, saxpy.Launch(kernel.Grid1D(0, 256), kernel.F32(1), kernel.In(x), kernel.InOut(x), kernel.I32(0)))
}

// TestLoadRefusesBadModules: an unknown kernel, PTX that does not parse
// and an empty image are clear errors.
func TestLoadRefusesBadModules(t *testing.T) {
	dev := testdev.Open(t)
	_, err := kernel.Load(dev, "")
	require.ErrorContains(t, err, "empty module image")
	_, err = kernel.Load(nil, "x")
	require.ErrorContains(t, err, "no device")
	_, err = kernel.LoadFile(dev, "testdata/no-such.ptx")
	require.ErrorContains(t, err, "no-such.ptx")
	mod, err := kernel.Load(dev, readPTX(t, saxpyPTX))
	require.NoError(t, err)
	_, err = mod.Kernel("daxpy")
	require.ErrorContains(t, err, "daxpy")
	require.NoError(t, mod.Close())
	require.NoError(t, mod.Close(), "closing twice is harmless")
	_, err = mod.Kernel("saxpy")
	require.ErrorContains(t, err, "closed")
}

// TestLoadNamesAnInstructionTheInterpreterCannotRun: on sim and the
// emulated driver, PTX with an instruction the interpreter does not know
// is refused when it loads, naming the instruction and its line.
func TestLoadNamesAnInstructionTheInterpreterCannotRun(t *testing.T) {
	dev := testdev.Open(t)
	if dev.Info().Backend == "cuda" && !emulatedDriver {
		t.Skip("a GPU's driver JIT-compiles the PTX: its errors are its own")
	}
	text := readPTX(t, saxpyPTX)
	line := ptxLine(t, text, "saxpy", "fma.rn.f32")
	bad := strings.Replace(text, "fma.rn.f32", "fma.rn.ftz.sat.q64", 1)
	_, err := kernel.Load(dev, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fma.rn.ftz.sat.q64")
	assert.Contains(t, err.Error(), fmt.Sprint(line))
}

// TestQueueReturnsBeforeWaiting: Queue launches on a stream and returns;
// after the stream is synchronized the result is there, equal to Go's.
func TestQueueReturnsBeforeWaiting(t *testing.T) {
	dev := testdev.Open(t)
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 777
	xs, ys := randomFloats(n), randomFloats(n)
	x, err := devarray.FromHost(dev, xs)
	require.NoError(t, err)
	defer x.Free()
	y, err := devarray.FromHost(dev, ys)
	require.NoError(t, err)
	defer y.Free()
	require.NoError(t, saxpy.Queue(s, kernel.Grid1D(n, 128), kernel.F32(-1.5), kernel.In(x), kernel.InOut(y), kernel.I32(n)))
	require.NoError(t, s.Synchronize())
	got, err := devarray.ToHost[float32](y)
	require.NoError(t, err)
	for i := range got {
		require.Equal(t, fma32(-1.5, xs[i], ys[i]), got[i], "element %d", i)
	}
}
