package accounting_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// largestEstimate is the largest whole number of granules in int64.
const largestEstimate = math.MaxInt64 / accounting.Granularity * accounting.Granularity

func TestEstimateBytes(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		dtype devarray.DType
		want  int64
		err   error
	}{
		{[]int{512, 512}, devarray.Float32, 1 << 20, nil},
		{[]int{3, 5, 7}, devarray.Float64, 1024, nil}, // 840 bytes, one allocation rounded up
		{[]int{}, devarray.Int16, 256, nil},           // a scalar still takes a granule
		{[]int{0, 10}, devarray.Float32, 256, nil},
		{[]int{1000, 1000, 10}, devarray.Complex128, 160_000_000, nil},
		{[]int{-1}, devarray.Float32, 0, devarray.ErrShape},
		{[]int{1 << 40, 1 << 40}, devarray.Uint8, 0, devarray.ErrOverflow},
		{[]int{math.MaxInt64 / 2}, devarray.Float32, 0, devarray.ErrOverflow},
		{[]int{4}, devarray.Invalid, 0, devarray.ErrDType},
		// The largest estimate is the largest whole number of granules in int64.
		{[]int{largestEstimate}, devarray.Uint8, largestEstimate, nil},
		{[]int{largestEstimate / 16}, devarray.Complex128, largestEstimate, nil},
		{[]int{largestEstimate + 1}, devarray.Uint8, 0, devarray.ErrOverflow},
		{[]int{largestEstimate/4 + 1}, devarray.Float32, 0, devarray.ErrOverflow},
	} {
		got, err := accounting.EstimateBytes(tc.shape, tc.dtype)
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, "%v %v", tc.shape, tc.dtype)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v %v", tc.shape, tc.dtype)
	}
}

func TestAlignUp(t *testing.T) {
	for in, want := range map[int64]int64{0: 0, 1: 256, 255: 256, 256: 256, 257: 512, -5: -1, math.MaxInt64: -1,
		math.MaxInt64 - 255: math.MaxInt64 - 255, math.MaxInt64 - 254: -1} { // the largest that rounds, and one more
		assert.Equal(t, want, accounting.AlignUp(in), "AlignUp(%d)", in)
	}
	assert.Equal(t, int64(256), accounting.AllocBytes(0))
}

func TestWouldFit(t *testing.T) {
	l := accounting.NewLedger("test")
	assert.True(t, l.WouldFit(1<<40), "nothing known: everything fits")
	require.NoError(t, l.SetLimit(accounting.Device, 1100))
	require.NoError(t, l.Alloc(accounting.Device, 0x1000, 100))
	room, err := l.Available()
	require.NoError(t, err)
	assert.Equal(t, int64(1000), room)
	assert.Equal(t, accounting.DefaultOverhead, l.Overhead())
	assert.True(t, l.WouldFit(909), "909 × 1.1 = 999.9")
	assert.False(t, l.WouldFit(910), "910 × 1.1 = 1001")
	assert.False(t, l.WouldFit(-1))
	assert.True(t, l.WouldFit(0), "nothing fits in any room")

	require.NoError(t, l.SetOverhead(1))
	assert.True(t, l.WouldFit(1000))
	for _, bad := range []float64{0.5, math.NaN(), math.Inf(1)} {
		assert.ErrorIs(t, l.SetOverhead(bad), accounting.ErrInvalidArgument, "%v", bad)
	}

	// The device's own free memory bounds it too.
	l.SetMemInfo(func() (int64, int64, error) { return 600, 4096, nil })
	room, err = l.Available()
	require.NoError(t, err)
	assert.Equal(t, int64(600), room)
	assert.False(t, l.WouldFit(700))
	l.SetMemInfo(func() (int64, int64, error) { return 0, 0, errors.New("driver gone") })
	_, err = l.Available()
	assert.ErrorContains(t, err, "driver gone")
	assert.False(t, l.WouldFit(1), "unknown room: nothing is promised")
	l.Free(accounting.Device, 0x1000, 100)
}

// An array with a zero-length axis needs one granule, whatever its other
// axes, wherever devarray can describe it; EstimateBytes refuses such a
// shape only where devarray does (an element count past int64 before the
// zero). 7·7·73·127·337·92737·649657 is math.MaxInt64: a shape of 1-byte
// elements that reaches it exactly is still described.
func TestEstimateBytesOfEmptyShapesAgreesWithDevarray(t *testing.T) {
	maxFactors := []int{7, 7, 73, 127, 337, 92737, 649657}
	big := 1<<40 + rand.IntN(1<<20)
	for _, tc := range []struct {
		name  string
		shape []int
		dtype devarray.DType
	}{
		{"zero first", []int{0, big, big}, devarray.Float64},
		{"zero last", []int{3 + rand.IntN(100), 0}, devarray.Float32},
		{"math.MaxInt64 elements, then zero", []int{math.MaxInt64, 0}, devarray.Uint8},
		{"math.MaxInt64 elements in factors, then zero", append(slices.Clone(maxFactors), 0), devarray.Int8},
		{"math.MaxInt64 bytes of 2-byte elements, then zero", []int{math.MaxInt64 / 2, 0}, devarray.Int16},
		{"past int64 before the zero", []int{big, big, 0}, devarray.Uint8},
		{"past int64 in elements before the zero", []int{math.MaxInt64 / 2, 3, 0}, devarray.Uint8},
		{"past int64 in bytes, not in elements, then zero", []int{math.MaxInt64 / 2, 0}, devarray.Float32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, lerr := devarray.NewHostStrided(nil, 0, tc.shape, nil, tc.dtype.Size())
			got, err := accounting.EstimateBytes(tc.shape, tc.dtype)
			if lerr != nil {
				require.ErrorIs(t, lerr, devarray.ErrOverflow)
				assert.ErrorIs(t, err, devarray.ErrOverflow, "devarray refuses %v: %v", tc.shape, lerr)
				return
			}
			require.NoError(t, err, "devarray describes %v", tc.shape)
			assert.Equal(t, int64(accounting.Granularity), got)
		})
	}
}
