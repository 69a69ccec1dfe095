package kernels_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
)

// TestEstimators holds every method's MaxSlices against the ledger's peak of
// a real run (plan.Verify): 4 shapes × 2 dtypes each, estimate within
// 95–100 % of the slices run. The table it logs is the one in the notes.
func TestEstimators(t *testing.T) {
	dev := testdev.Open(t)
	type shape struct {
		dims     [3]int
		sliceDim int
	}
	anyAxis := []shape{{[3]int{6, 60, 64}, 0}, {[3]int{40, 12, 36}, 1}, {[3]int{24, 20, 17}, 2}, {[3]int{20, 24, 32}, 0}}
	sinograms := []shape{{[3]int{6, 60, 64}, 0}, {[3]int{12, 36, 40}, 0}, {[3]int{4, 90, 96}, 0}, {[3]int{20, 24, 32}, 0}}
	cases := []struct {
		method plan.Method
		shapes []shape
		params plan.Params
	}{
		{kernels.ScaleMethod, anyAxis, plan.Params{"factor": 3}},
		{kernels.TransposeMethod, anyAxis, nil},
		{kernels.FilterMethod, sinograms, nil},
		{kernels.BackprojectMethod, sinograms, nil},
		{kernels.BackprojectMethod, sinograms, plan.Params{"size": 48}},
		{kernels.ReconstructMethod, sinograms, nil},
		{kernels.ProjectMethod, []shape{{[3]int{6, 40, 40}, 0}, {[3]int{3, 64, 64}, 0}, {[3]int{10, 17, 17}, 0}}, plan.Params{"angles": 30}},
		{kernels.ProjectMethod, []shape{{[3]int{5, 24, 24}, 0}}, plan.Params{"angles": 12, "detectors": 35}},
	}
	var table strings.Builder
	for _, c := range cases {
		for _, s := range c.shapes {
			for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64} {
				name := fmt.Sprintf("%s/%v/axis%d/%v", c.method.Name(), s.dims, s.sliceDim, dt)
				res, err := plan.Verify(dev, plan.Case{Method: c.method, Shape: s.dims, SliceDim: s.sliceDim, DType: dt, Params: c.params})
				require.NoError(t, err, name)
				assert.Equal(t, dt, res.OutDType, name)
				assert.False(t, res.Degraded, name)
				fmt.Fprintf(&table, "| %s | %v axis %d | %v | %v | %s | %d | %d | %.3f |\n", c.method.Name(), s.dims, s.sliceDim, dt, c.params,
					accounting.FormatBytes(res.Peak), res.Slices, res.Estimated, res.Ratio)
			}
		}
	}
	t.Logf("estimators on %s:\n| method | shape | dtype | params | peak | slices run | estimate | ratio |\n|---|---|---|---|---|---|---|---|\n%s", dev.Info().Name, table.String())
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "Verify frees everything")
}

func TestMethodsRegistered(t *testing.T) {
	for _, name := range []string{"kernels.scale", "kernels.transpose", "fbp.filter", "fbp.backproject", "fbp.reconstruct", "fbp.project"} {
		m, err := plan.Default.Lookup(name)
		require.NoError(t, err)
		assert.Equal(t, name, m.Name())
	}
}

func TestMethodEstimatorErrors(t *testing.T) {
	for _, tc := range []struct {
		method   plan.Method
		sliceDim int
		dtype    devarray.DType
		err      error
	}{
		{kernels.ScaleMethod, 0, devarray.Int32, devarray.ErrDType},
		{kernels.FilterMethod, 1, devarray.Float32, devarray.ErrShape},
		{kernels.BackprojectMethod, 0, devarray.Complex64, devarray.ErrDType},
		{kernels.ReconstructMethod, 2, devarray.Float64, devarray.ErrShape},
	} {
		_, _, err := tc.method.MaxSlices(tc.sliceDim, [2]int{10, 10}, tc.dtype, 1<<20, nil)
		assert.ErrorIs(t, err, tc.err, "%s axis %d %v", tc.method.Name(), tc.sliceDim, tc.dtype)
	}
	n, _, err := kernels.ReconstructMethod.MaxSlices(0, [2]int{720, 2048}, devarray.Float32, 1<<20, nil)
	require.NoError(t, err)
	assert.Zero(t, n, "1 MiB holds no slice of 720 × 2048")
}

// TestTransposeMethodOutput checks the transpose method's result itself.
func TestTransposeMethodOutput(t *testing.T) {
	dev := testdev.Open(t)
	data := randomFloats[float32](3 * 4 * 5)
	in, err := devarray.FromHost(dev, data, 3, 4, 5)
	require.NoError(t, err)
	defer in.Free()
	out, err := kernels.TransposeMethod.Run(plan.Env{Dev: dev}, in, 1, nil)
	require.NoError(t, err)
	defer out.Free()
	assert.Equal(t, []int{5, 4, 3}, out.Shape(), "axes 0 and 2 swap around the slice axis 1")
	got, err := devarray.ToHost[float32](out)
	require.NoError(t, err)
	for i := range 3 {
		for j := range 4 {
			for k := range 5 {
				assert.Equal(t, data[(i*4+j)*5+k], got[(k*4+j)*3+i])
			}
		}
	}
}
