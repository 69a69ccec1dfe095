package tomo_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// sinogramsOnDevice uploads sinograms to dev.
func sinogramsOnDevice(t *testing.T, dev device.Device, g tomo.Geometry, sino []float32) *devarray.DevArray {
	t.Helper()
	s := g.SinogramShape()
	a, err := devarray.Empty(dev, tomo.DType, s[:]...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	require.NoError(t, transfer.Copy(transfer.Dev(a), transfer.Host(sino, s[:]...)))
	return a
}

func TestReconstructDeviceEqualsReconstruct(t *testing.T) {
	tests := []struct {
		name      string
		g         tomo.Geometry
		limit     bool // a device limit that makes several chunks
		minChunks int
	}{
		{"one chunk", tomo.Geometry{Size: 24, Angles: 30, Slices: 5}, false, 1},
		{"odd sizes", tomo.Geometry{Size: 17, Angles: 23, Slices: 7}, false, 1},
		{"chunks under a limit", tomo.Geometry{Size: 24, Angles: 30, Slices: 9}, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := testdev.Open(t)
			sino := randomSinograms(tt.g)
			want, err := tomo.ReconstructWith(dev, tt.g, sino, tomo.Resident, tomo.Options{Streams: 1})
			require.NoError(t, err)
			a := sinogramsOnDevice(t, dev, tt.g, sino)
			if tt.limit {
				// room beside the sinograms for the planner's chunks of about a third of the slices
				require.NoError(t, dev.Ledger().SetLimit(accounting.Device, dev.Ledger().Current(accounting.Device)+
					3*int64(tt.g.Slices/3)*(tt.g.SinogramSliceBytes()+tt.g.SliceBytes())))
				defer dev.Ledger().SetLimit(accounting.Device, 0)
			}
			before := dev.Ledger().Current(accounting.Device)
			res, err := tomo.ReconstructDevice(dev, tt.g, a, nil)
			require.NoError(t, err)
			assert.Equal(t, want.Volume, res.Volume, "the same bits as Reconstruct")
			assert.GreaterOrEqual(t, len(res.Plan.Chunks), tt.minChunks)
			assert.Zero(t, res.Traffic.HtoD, "nothing goes up: the sinograms are on the device")
			assert.Equal(t, tt.g.VolumeBytes(), res.Traffic.DtoH, "the volume comes down once")
			assert.Equal(t, before, dev.Ledger().Current(accounting.Device), "all it allocated is freed")
			assert.Positive(t, res.KernelSeconds)
		})
	}
}

func TestReconstructDeviceRefuses(t *testing.T) {
	dev := testdev.Open(t)
	g := tomo.Geometry{Size: 8, Angles: 6, Slices: 4}
	a := sinogramsOnDevice(t, dev, g, randomSinograms(g))
	strided, err := a.Permute(1, 0, 2)
	require.NoError(t, err)
	freed, err := devarray.Empty(dev, tomo.DType, 4, 6, 8)
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	tests := []struct {
		name string
		g    tomo.Geometry
		a    *devarray.DevArray
	}{
		{"another geometry", tomo.Geometry{Size: 8, Angles: 6, Slices: 3}, a},
		{"not contiguous", tomo.Geometry{Size: 8, Angles: 4, Slices: 6}, strided},
		{"freed", g, freed},
		{"a bad geometry", tomo.Geometry{}, a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tomo.ReconstructDevice(dev, tt.g, tt.a, nil)
			assert.Error(t, err)
		})
	}
}

func TestReconstructDeviceFailureFreesEverything(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 12, Slices: 6}
	sino := randomSinograms(g)
	failed := 0
	for n := 1; n <= 8; n++ {
		t.Run(fmt.Sprintf("allocation %d", n), func(t *testing.T) {
			dev, err := device.Open(fmt.Sprintf("sim:0?mem=64MiB&fail-alloc=%d", n+1)) // the first is the sinograms'
			require.NoError(t, err)
			defer dev.Close()
			a := sinogramsOnDevice(t, dev, g, sino)
			held := dev.Ledger().Current(accounting.Device)
			if _, err := tomo.ReconstructDevice(dev, g, a, nil); err != nil {
				failed++
				assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
			}
			assert.Equal(t, held, dev.Ledger().Current(accounting.Device), "only the sinograms are left")
		})
	}
	assert.Positive(t, failed)
}

func TestProjectionsRoundTrip(t *testing.T) {
	for _, g := range []tomo.Geometry{{Size: 5, Angles: 7, Slices: 3}, {Size: 1, Angles: 1, Slices: 1}, {Size: 4, Angles: 2, Slices: 9}} {
		t.Run(fmt.Sprint(g.Size, g.Angles, g.Slices), func(t *testing.T) {
			sino := randomSinograms(g)
			proj, err := tomo.Projections(g, sino)
			require.NoError(t, err)
			s, a, d := rand.IntN(g.Slices), rand.IntN(g.Angles), rand.IntN(g.Size)
			assert.Equal(t, sino[(s*g.Angles+a)*g.Size+d], proj[(a*g.Slices+s)*g.Size+d], "slice %d, angle %d, bin %d", s, a, d)
			back, err := tomo.SinogramsOf(g, proj)
			require.NoError(t, err)
			assert.Equal(t, sino, back)
		})
	}
	g := tomo.Geometry{Size: 4, Angles: 3, Slices: 2}
	_, err := tomo.Projections(g, make([]float32, 5))
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = tomo.SinogramsOf(g, make([]float32, 5))
	assert.ErrorIs(t, err, devarray.ErrShape)
}

func TestShares(t *testing.T) {
	tests := []struct {
		total, n int
		lens     []int
	}{
		{10, 3, []int{4, 3, 3}},
		{12, 4, []int{3, 3, 3, 3}},
		{5, 5, []int{1, 1, 1, 1, 1}},
		{7, 1, []int{7}},
	}
	for _, tt := range tests {
		shares, err := tomo.Shares(tt.total, tt.n)
		require.NoError(t, err)
		start := 0
		for i, s := range shares {
			assert.Equal(t, start, s.Start)
			assert.Equal(t, tt.lens[i], s.Len)
			start += s.Len
		}
		assert.Equal(t, tt.total, start)
	}
	for _, bad := range [][2]int{{3, 4}, {3, 0}, {0, 1}} {
		_, err := tomo.Shares(bad[0], bad[1])
		assert.ErrorIs(t, err, devarray.ErrShape, "%d in %d", bad[0], bad[1])
	}
}
