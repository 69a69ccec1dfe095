package kernels_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

// onGPU skips a test or benchmark of the compiled kernels on sim, where
// both backprojection kernels are the one Go reference (the host emulation
// of the two, fbp_tiled_test.go, is what sim checks).
func onGPU(tb testing.TB, dev device.Device) {
	tb.Helper()
	if dev.Info().Backend == "sim" {
		tb.Skip("sim runs the Go reference for both backprojection kernels: comparing the compiled kernels needs a GPU (-tags cuda)")
	}
}

// maxInterpretedUpdates bounds the backprojections the tests run where the
// PTX is interpreted: a few seconds each under -race.
const maxInterpretedUpdates = 4 << 20

// interpreted reports whether dev runs kernels from their PTX through the
// interpreter (the emulated CUDA driver) rather than on a GPU.
func interpreted(dev device.Device) bool {
	return dev.Info().Emulated()
}

// bitsOf reads a float32 or float64 array's values as their bits, so that
// -0 and +0 differ.
func bitsOf(t testing.TB, a *devarray.DevArray) []uint64 {
	t.Helper()
	if a.DType() == devarray.Float32 {
		f, err := devarray.ToHost[float32](a)
		require.NoError(t, err)
		out := make([]uint64, len(f))
		for i, v := range f {
			out[i] = uint64(math.Float32bits(v))
		}
		return out
	}
	f, err := devarray.ToHost[float64](a)
	require.NoError(t, err)
	out := make([]uint64, len(f))
	for i, v := range f {
		out[i] = math.Float64bits(v)
	}
	return out
}

// TestBackprojectTiledSameBits: on a GPU, backproject_tiled writes the bits
// backproject writes, on random sinograms of shapes that exercise partial
// tiles, partial passes of angles, samples off the detector, and the
// example's geometry.
func TestBackprojectTiledSameBits(t *testing.T) {
	dev, k := setup(t)
	onGPU(t, dev)
	for _, tc := range []struct{ slices, a, d, n int }{
		{1, 1, 1, 1}, {2, 7, 3, 5}, {1, 17, 33, 33}, {3, 40, 130, 130}, {1, 23, 300, 140},
		{1, 33, 64, 150}, {1, 90, 512, 512}, {3, 61, 257, 255}, // small enough for run.sh's racecheck: the benchmark checks the size
	} {
		for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64} {
			t.Run(fmt.Sprintf("%v/%dx%dx%d->%d", dt, tc.slices, tc.a, tc.d, tc.n), func(t *testing.T) {
				if interpreted(dev) && tc.slices*tc.a*tc.n*tc.n > maxInterpretedUpdates {
					t.Skipf("%d pixel-angle updates: the emulated driver interprets the PTX, minutes for this size under -race; a GPU runs it", tc.slices*tc.a*tc.n*tc.n)
				}
				sino := upload(t, k, dt, randomFloats[float64](tc.slices*tc.a*tc.d), []int{tc.slices, tc.a, tc.d})
				defer sino.Free()
				var want []uint64
				for _, tiled := range []bool{false, true} {
					img, err := devarray.Empty(dev, dt, tc.slices, tc.n, tc.n)
					require.NoError(t, err)
					require.NoError(t, k.BackprojectWith(img, sino, nil, tiled))
					got := bitsOf(t, img)
					require.NoError(t, img.Free())
					if !tiled {
						want = got
						continue
					}
					require.Equal(t, want, got, "the tiled kernel's bits are the plain kernel's")
				}
				require.NotEqual(t, make([]uint64, len(want)), want, "not all +0")
			})
		}
	}
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkBackprojectKernels times, on a GPU, the two backprojection
// kernels on the same random filtered sinograms with CUDA events on one
// stream, after a warm-up, and reports the median kernel time (ms/kernel)
// and the rate in G pixel-angle updates per second (Gupdates/s): the figure
// of the tiled backprojection goal, whose peer is bench/peers/cupy_fbp.py's plain CuPy
// kernel at the same geometry. It then checks that the two kernels wrote
// the same bits. The geometry is the issue's, 512² pixels ×
// 256 slices from 720 angles, or CUARRAY_BP_SIZE, CUARRAY_BP_ANGLES and
// CUARRAY_BP_SLICES. On sim it skips (both kernels are the Go reference
// there; BenchmarkFBP256 times that).
func BenchmarkBackprojectKernels(b *testing.B) {
	dev := testdev.Open(b)
	onGPU(b, dev)
	k, err := kernels.New(dev)
	require.NoError(b, err)
	defer k.Close()
	n, angles, nslices := envInt("CUARRAY_BP_SIZE", 512), envInt("CUARRAY_BP_ANGLES", 720), envInt("CUARRAY_BP_SLICES", 256)
	s, err := dev.NewStream()
	require.NoError(b, err)
	defer s.Close()
	ks := k.Async(s)
	for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64} {
		vals := make([]float32, nslices*angles*n)
		for i := range vals {
			vals[i] = rand.Float32()*4 - 1
		}
		host := vals
		var sino *devarray.DevArray
		if dt == devarray.Float32 {
			sino, err = devarray.FromHost(dev, host, nslices, angles, n)
		} else {
			f := make([]float64, len(host))
			for i, v := range host {
				f[i] = float64(v)
			}
			sino, err = devarray.FromHost(dev, f, nslices, angles, n)
		}
		require.NoError(b, err)
		imgs := map[bool]*devarray.DevArray{}
		for _, tiled := range []bool{false, true} {
			imgs[tiled], err = devarray.Empty(dev, dt, nslices, n, n)
			require.NoError(b, err)
		}
		ws := accounting.NewWorkspace(dev)
		ran := map[bool]bool{}
		for _, name := range []string{"plain", "tiled"} {
			tiled := name == "tiled"
			img := imgs[tiled]
			b.Run(fmt.Sprintf("%v/%s/%dx%dx%d", dt, name, n, angles, nslices), func(b *testing.B) {
				start, err := dev.NewEvent()
				require.NoError(b, err)
				defer start.Close()
				end, err := dev.NewEvent()
				require.NoError(b, err)
				defer end.Close()
				run := func() time.Duration {
					require.NoError(b, s.Record(start))
					require.NoError(b, ks.BackprojectWith(img, sino, ws, tiled))
					require.NoError(b, s.Record(end))
					require.NoError(b, end.Synchronize())
					d, err := end.Elapsed(start)
					require.NoError(b, err)
					return d
				}
				for range 3 {
					run() // warm-up: module load, clocks, caches
				}
				var times []time.Duration
				for b.Loop() {
					times = append(times, run())
				}
				for len(times) < 9 { // the median of enough runs, whatever b.N was
					times = append(times, run())
				}
				ran[tiled] = true
				slices.Sort(times)
				med := times[len(times)/2].Seconds()
				b.ReportMetric(med*1e3, "ms/kernel")
				b.ReportMetric(kernels.BackprojectUpdates(int64(nslices), angles, n)/med/1e9, "Gupdates/s")
			})
		}
		require.NoError(b, s.Synchronize())
		if ran[false] && ran[true] && !b.Failed() { // both ran (a -bench pattern may pick one)
			require.Equal(b, bitsOf(b, imgs[false]), bitsOf(b, imgs[true]), "%v: the tiled kernel wrote the plain kernel's bits", dt)
		}
		require.NoError(b, ws.Free())
		for _, img := range imgs {
			require.NoError(b, img.Free())
		}
		require.NoError(b, sino.Free())
	}
}
