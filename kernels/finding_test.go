package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/kernels"
)

// RampFilter refuses a detector axis the ramp_filter kernel cannot index:
// its tap index d - j + D - 1 is a 32-bit int, so D may be at most 2^30
// (2D - 2 < 2^31). A longer axis would reach the kernel as a negative or
// wrapped D, the kernels would do nothing, and the uninitialised scratch
// would be copied over the sinogram. The arrays borrow a small allocation
// (nothing reads them: the call must refuse before any work), and the
// check comes before the workspace is asked for, in query mode too.
func TestFinding09RampFilterDetectorCountFitsInt32(t *testing.T) {
	dev, k := setup(t)
	buf, err := devarray.Empty(dev, devarray.Float32, 64)
	require.NoError(t, err)
	defer buf.Free()
	const limit = 1 << 30
	cases := []struct {
		name   string
		dtype  devarray.DType
		shape  []int
		refuse bool
	}{
		{"float32, D = 2^30 + 1", devarray.Float32, []int{1, limit + 1}, true},
		{"float64, D = 2^31 (int32(D) < 0)", devarray.Float64, []int{1, 1 << 31}, true},
		{"float32, D = 2^32 + random (int32(D) wraps)", devarray.Float32, []int{1<<32 + 1 + rand.IntN(1<<20)}, true},
		{"float32, D = MaxInt32", devarray.Float32, []int{2, math.MaxInt32}, true},
		{"float64, D = 2^30", devarray.Float64, []int{1, limit}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := devarray.Wrap(dev, devarray.Descriptor{Ptr: buf.Ptr(), Shape: tc.shape, DType: tc.dtype, Device: dev.DeviceID()})
			require.NoError(t, err)
			defer a.Free()
			for _, mode := range []string{"query", "temporary workspace"} {
				var ws *accounting.Workspace
				if mode == "query" {
					ws = accounting.NewWorkspace(dev)
					require.NoError(t, ws.StartQuery())
				}
				err := k.RampFilter(a, ws)
				if !tc.refuse {
					if mode == "query" {
						require.True(t, accounting.IsSizeQuery(err), "%s: D = 2^30 fits the kernel: %v", mode, err)
						got, err := ws.StopQuery()
						require.NoError(t, err)
						want := kernels.RampFilterWorkspace(1, tc.shape[len(tc.shape)-1], tc.dtype.Size())
						assert.Equal(t, accounting.AlignUp(want), got, "%s: the one-pass workspace", mode)
					}
					continue
				}
				require.ErrorIs(t, err, devarray.ErrShape, "%s: D = %d does not fit the kernel's int", mode, tc.shape[len(tc.shape)-1])
				assert.Contains(t, err.Error(), "detector", "%s: the message names the axis", mode)
			}
			assert.Zero(t, dev.Ledger().Current(accounting.Device)-buf.NBytes(), "nothing left allocated")
		})
	}
}
