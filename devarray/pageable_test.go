package devarray_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// An array over a Go slice (FromPageable) is viewed as any array, and
// its views are pageable too; Free waits for the last Hold before the
// device lets go of the slice, and a second Free does nothing. The device
// reaches the slice through its driver copies as through its kernels.
func TestFromPageableLifetime(t *testing.T) {
	r := rand.For(t)
	dev, err := device.Open("sim:0?mem=64MiB&pageable-access=hmm")
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	rows, cols := 1+r.IntN(32), 1+r.IntN(32)
	host := randomFloat32(rows * cols)
	a, err := devarray.FromPageable(dev, host, rows, cols)
	require.NoError(t, err)
	assert.Equal(t, []int{rows, cols}, a.Shape())
	v, err := a.Slice(0, 0, 1)
	require.NoError(t, err)
	assert.True(t, v.Pageable(), "a view of pageable memory is pageable")
	got, err := devarray.ToHost[float32](a)
	require.NoError(t, err)
	assert.Equal(t, host, got, "the device reads the slice in place")
	assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Device].Allocs, "nothing allocated")

	release, err := a.Hold()
	require.NoError(t, err)
	require.NoError(t, a.Free())
	probe := make([]byte, 4)
	require.NoError(t, dev.CopyDtoH(probe, a.Ptr()), "held: the device still reaches the slice")
	require.NoError(t, release())
	assert.ErrorIs(t, dev.CopyDtoH(probe, a.Ptr()), driver.ErrInvalidPointer, "the last release let go of it")
	assert.NoError(t, a.Free(), "a second Free does nothing")

	var nilArr *devarray.DevArray
	assert.False(t, nilArr.Pageable())
}

// noPageable is a Backend that cannot use host memory in place.
type noPageable struct{ devarray.Backend }

// A backend that is no PageableBackend refuses with ErrNoPageableAccess.
func TestFromPageableBackendWithout(t *testing.T) {
	dev := newDev(t)
	_, err := devarray.FromPageable(noPageable{dev}, randomFloat32(16))
	assert.ErrorIs(t, err, devarray.ErrNoPageableAccess)
}
