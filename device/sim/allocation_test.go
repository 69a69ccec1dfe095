package sim_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// Allocation finds the live allocation holding an address, device or
// page-locked host memory, and nothing once it is freed or the device is
// closed: what imports are checked against.
func TestAllocation(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	p, err := dev.Malloc(100)
	require.NoError(t, err)
	q, err := dev.Malloc(1000)
	require.NoError(t, err)
	h, err := dev.HostAlloc(4096, driver.Mapped)
	require.NoError(t, err)

	base, size, ok := dev.Allocation(p + 99)
	require.True(t, ok, "the last byte asked for")
	require.Equal(t, p, base)
	require.GreaterOrEqual(t, size, int64(100))
	base, size, ok = dev.Allocation(q)
	require.True(t, ok)
	require.Equal(t, q, base)
	require.GreaterOrEqual(t, size, int64(1000))
	if b, _, ok := dev.Allocation(q + devarray.Ptr(size)); ok {
		require.NotEqual(t, q, b, "one past the allocation is not in it")
	}
	hp := devarray.Ptr(uintptr(unsafe.Pointer(&h.Bytes[0])))
	base, size, ok = dev.Allocation(hp + 4095)
	require.True(t, ok, "page-locked host memory")
	require.Equal(t, hp, base)
	require.Equal(t, int64(4096), size)
	// The byte after an allocation may start another live one (an mmap
	// next to it, the arena); Allocation then rightly names that one.
	if b, _, ok := dev.Allocation(hp + 4096); ok {
		require.NotEqual(t, hp, b, "one past the host allocation is not in it")
	}
	_, _, ok = dev.Allocation(0x1000)
	require.False(t, ok, "no allocation there")

	require.NoError(t, dev.Free(p))
	_, _, ok = dev.Allocation(p)
	require.False(t, ok, "a freed allocation")
	require.NoError(t, dev.HostFree(h))
	_, _, ok = dev.Allocation(hp)
	require.False(t, ok, "freed host memory")

	require.NoError(t, dev.Close())
	_, _, ok = dev.Allocation(q)
	require.False(t, ok, "the memory of a closed device")
}

// Allocation names the live allocation that holds an address, so the byte
// after one page-locked range, where a second range starts, belongs to the
// second: the extent an import is checked against ends where its own
// allocation does.
func TestAllocationAdjacentHostRanges(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	n := 1000 + rand.IntN(3000)
	b := make([]byte, 2*n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	first, err := dev.Register(b[:n], driver.Mapped)
	require.NoError(t, err)
	second, err := dev.Register(b[n:], driver.Mapped)
	require.NoError(t, err)
	p := devarray.Ptr(uintptr(unsafe.Pointer(&b[0])))

	base, size, ok := dev.Allocation(p + devarray.Ptr(n-1))
	require.True(t, ok)
	require.Equal(t, p, base, "the last byte of the first range")
	require.Equal(t, int64(n), size)
	base, size, ok = dev.Allocation(p + devarray.Ptr(n))
	require.True(t, ok)
	require.Equal(t, p+devarray.Ptr(n), base, "one past the first range is the second's first byte")
	require.Equal(t, int64(n), size)

	require.NoError(t, dev.Unregister(second))
	if b, _, ok := dev.Allocation(p + devarray.Ptr(n)); ok {
		require.NotEqual(t, p, b, "one past the first range is never in it")
	}
	require.NoError(t, dev.Unregister(first))
	_, _, ok = dev.Allocation(p)
	require.False(t, ok, "unregistered memory")
}
