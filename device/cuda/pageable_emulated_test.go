//go:build cuda && cudaemu && linux

package cuda

import (
	"errors"
	"math/big"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// On the emulated driver the cuda backend reads the two attributes of
// pageable memory access (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS and
// ..._USES_HOST_PAGE_TABLES) as the option pageable-access sets them
// (without it, as device's TestPageableRefused shows, the device has
// none), and a kernel (saxpy, y = a·x + y) runs on Go
// slices in place: no allocation, no copy.
func TestPageableAccessEmulated(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want driver.PageableAccess
	}{
		{"pageable-access=hmm", driver.PageableHMM},
		{"pageable-access=ats", driver.PageableATS},
	} {
		t.Run(tc.want.String(), func(t *testing.T) {
			if !inChild(t, tc.cfg) {
				return
			}
			d, err := Open(0)
			require.NoError(t, err)
			defer d.Close()
			require.Equal(t, tc.want, d.PageableAccess())
			r := rand.For(t)
			n := 1 + r.IntN(2048)
			xs, ys := make([]float32, n), make([]float32, n)
			for i := range xs {
				xs[i], ys[i] = r.Float32()*16-8, r.Float32()*16-8
			}
			saxpy := loadSaxpy(t, d)
			a := r.Float32()*4 - 2
			want := make([]float32, n)
			for i := range want {
				want[i] = fmaFloat32(a, xs[i], ys[i])
			}
			before := d.Ledger().Snapshot()
			x, err := devarray.FromPageable(d, xs)
			require.NoError(t, err)
			y, err := devarray.FromPageable(d, ys)
			require.NoError(t, err)
			require.NoError(t, saxpy.Launch(kernel.Grid1D(int64(n), 128),
				kernel.F32(a), kernel.In(x).Of(devarray.Float32), kernel.InOut(y).Of(devarray.Float32), kernel.I32(int32(n))))
			require.NoError(t, d.Synchronize())
			assert.Equal(t, want, ys, "the kernel updated the Go slice in place")
			diff := accounting.Diff(before, d.Ledger().Snapshot())
			assert.Zero(t, diff.Kinds[accounting.Device].Allocs+diff.Kinds[accounting.Registered].Allocs, "no allocation, no registration")
			assert.Zero(t, diff.CopyTotal(accounting.HtoD).Bytes+diff.CopyTotal(accounting.DtoH).Bytes, "no copy")
			require.NoError(t, x.Free())
			require.NoError(t, y.Free())
			assert.Error(t, d.ReleasePageable(devarray.AsBytes(ys)), "Free ended the declaration")
		})
	}
}

// A kernel that runs past its Go slice touches host memory the emulated
// driver was not told of: CUDA_ERROR_ILLEGAL_ADDRESS, sticky, as sim
// answers it (a guess: a GPU with HMM reaches every valid host address).
func TestPageableBeyondSliceEmulated(t *testing.T) {
	if !inChild(t, "pageable-access=hmm") {
		return
	}
	d, err := Open(0)
	require.NoError(t, err)
	defer d.Close()
	saxpy := loadSaxpy(t, d)
	n := 256
	xs, ys := make([]float32, n+64), make([]float32, n+64)
	x, err := devarray.FromPageable(d, xs[:n])
	require.NoError(t, err)
	y, err := devarray.FromPageable(d, ys[:n])
	require.NoError(t, err)
	err = saxpy.Launch(kernel.Grid1D(int64(n+64), 128),
		kernel.F32(2), kernel.In(x).Of(devarray.Float32), kernel.InOut(y).Of(devarray.Float32), kernel.I32(int32(n+64)))
	err = errors.Join(err, d.Synchronize())
	require.ErrorIs(t, err, driver.ErrContextFailed)
	assert.Contains(t, err.Error(), "ILLEGAL_ADDRESS")
}

// fmaFloat32 is fma.rn.f32, as saxpy's PTX computes a·x+y: rounded once
// to float32 (the product of two float32s is exact in big.Float).
func fmaFloat32(a, x, y float32) float32 {
	var p, s big.Float
	p.SetPrec(256).SetFloat64(float64(a))
	p.Mul(&p, new(big.Float).SetFloat64(float64(x)))
	s.SetPrec(256).Add(&p, new(big.Float).SetFloat64(float64(y)))
	f, _ := s.Float32()
	return f
}

// loadSaxpy loads the guide's saxpy kernel on d.
func loadSaxpy(t *testing.T, d *Device) *kernel.Kernel {
	t.Helper()
	text, err := os.ReadFile("../../examples/ownkernels/saxpy.ptx")
	require.NoError(t, err)
	mod, err := kernel.Load(d, string(text))
	require.NoError(t, err)
	t.Cleanup(func() { mod.Close() })
	k, err := mod.Kernel("saxpy")
	require.NoError(t, err)
	return k
}
