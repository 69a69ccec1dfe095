package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/plan"
)

// wrongOutput is identity saying its output is a byte larger than it is.
type wrongOutput struct{ plan.Model }

func (w wrongOutput) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	return plan.InputBytes(s, other, dtype) + 1, nil
}

// noOutput is a method that does not say its output's size.
type noOutput struct{ plan.Method }

// OutputBytes answers a method's output's bytes where it says them
// (identity: its input's), and false where it does not; Verify checks
// the answer against the run's output and refuses a wrong one.
func TestOutputBytes(t *testing.T) {
	r := rand.For(t)
	shape := [3]int{20 + r.IntN(20), 64 + r.IntN(64), 64 + r.IntN(64)} // slices of many granules: Verify's ratio is not rounding's
	other := [2]int{shape[1], shape[2]}
	n, ok, err := plan.OutputBytes(plan.Identity, 0, other, devarray.Float64, int64(shape[0]), nil)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(shape[0]*shape[1]*shape[2]*8), n)
	assert.Equal(t, n, plan.InputBytes(int64(shape[0]), other, devarray.Float64))
	assert.Equal(t, int64(-1), plan.InputBytes(1<<40, [2]int{1 << 20, 1 << 20}, devarray.Float64), "past int64")
	_, _, err = plan.OutputBytes(plan.Identity, 3, other, devarray.Float64, 1, nil)
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, ok, err = plan.OutputBytes(noOutput{plan.Identity}, 0, other, devarray.Float64, 1, nil)
	assert.False(t, ok)
	assert.NoError(t, err)

	dev := testdev.Open(t)
	_, err = plan.Verify(dev, plan.Case{Method: plan.Identity, Shape: shape, DType: devarray.Float32})
	require.NoError(t, err)
	_, err = plan.Verify(dev, plan.Case{Method: wrongOutput{plan.Identity}, Shape: shape, DType: devarray.Float32})
	assert.ErrorIs(t, err, plan.ErrEstimate)
	assert.ErrorContains(t, err, "OutputBytes says")
}
