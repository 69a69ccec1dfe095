//go:build cuda && cudaemu && linux

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// On the emulated driver with managed=exclusive, a device whose
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0, the cuda backend
// refuses a prefetch to the device ("If dstDevice is a GPU, then the
// device attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS must be
// non-zero", cuMemPrefetchAsync) and the host's view of managed memory
// while a stream has work in flight (the GPU then owns all managed
// memory), and allows it once the context is synchronized.
func TestManagedExclusiveDevice(t *testing.T) {
	if !inChild(t, "managed=exclusive") {
		return
	}
	d, err := Open(0)
	require.NoError(t, err)
	defer d.Close()
	require.False(t, d.ConcurrentManagedAccess())
	a, err := devarray.EmptyManaged(d, devarray.AttachGlobal, devarray.Uint8, 8192)
	require.NoError(t, err)
	defer a.Free()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	assert.Error(t, s.Prefetch(a.Ptr(), 8192, 0), "a prefetch to a device without concurrent managed access")
	resume, err := s.(driver.Holder).Hold()
	require.NoError(t, err)
	defer resume()
	other, err := d.Malloc(4096)
	require.NoError(t, err)
	defer d.Free(other)
	require.NoError(t, s.MemsetAsync(other, 7, 4096))
	_, err = a.HostView(false)
	assert.ErrorIs(t, err, driver.ErrManagedBusy, "work in flight: the device owns the managed memory")
	resume()
	require.NoError(t, d.Synchronize())
	b, err := a.HostView(true)
	require.NoError(t, err, "after a synchronize the host may touch it")
	assert.Len(t, b, 8192)
}
