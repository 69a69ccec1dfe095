package driver_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

func TestHostRanges(t *testing.T) {
	mem := make([]byte, 3*4096)
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	a, b, c := mem[:1000], mem[4096:8192], mem[8192:9000]
	var r driver.HostRanges
	// Inserted out of order; lookups must still find each.
	r.Insert(driver.HostRange{Addr: addr(c), Mem: c, Registered: true})
	r.Insert(driver.HostRange{Addr: addr(a), Mem: a})
	r.Insert(driver.HostRange{Addr: addr(b), Mem: b, Flags: driver.Mapped})

	got, ok := r.Containing(addr(b)+100, 3996)
	require.True(t, ok)
	assert.Equal(t, driver.Mapped, got.Flags)
	_, ok = r.Containing(addr(b)+100, 3997)
	assert.False(t, ok, "one byte past the range")
	_, ok = r.Containing(addr(a)+1000, 1)
	assert.False(t, ok, "the gap between ranges")
	_, ok = r.Containing(addr(a)-1, 1)
	assert.False(t, ok, "before every range")

	assert.Equal(t, accounting.PathPinned, r.Path(a[10:20]))
	assert.Equal(t, accounting.PathDirect, r.Path(mem[990:1010]), "straddles the end of a range")
	assert.Equal(t, accounting.PathDirect, r.Path(make([]byte, 8)))
	assert.Equal(t, accounting.PathDirect, r.Path(nil))

	_, err := r.Take(&driver.HostMem{Bytes: c}, false)
	assert.ErrorIs(t, err, driver.ErrInvalidPointer, "registered memory is not freed as allocated memory")
	_, err = r.Take(&driver.HostMem{Bytes: a}, true)
	assert.ErrorIs(t, err, driver.ErrInvalidPointer, "allocated memory is not unregistered")
	h, err := r.Take(&driver.HostMem{Bytes: a}, false)
	require.NoError(t, err)
	assert.Equal(t, addr(a), h.Addr)
	_, err = r.Take(&driver.HostMem{Bytes: a}, false)
	assert.ErrorIs(t, err, driver.ErrInvalidPointer, "taken twice")
	_, err = r.Take(nil, false)
	assert.ErrorIs(t, err, driver.ErrInvalidPointer)
	_, err = r.Take(&driver.HostMem{Bytes: c}, true)
	require.NoError(t, err)
	assert.Len(t, r.TakeAll(), 1)
	assert.Empty(t, r.TakeAll())
}

func TestHostRangesOverlapsAndKinds(t *testing.T) {
	mem := make([]byte, 3*4096)
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	a, b := mem[1000:2000], mem[4096:8192]
	var r driver.HostRanges
	r.Insert(driver.HostRange{Addr: addr(a), Mem: a, Flags: driver.Staging})
	r.Insert(driver.HostRange{Addr: addr(b), Mem: b, Flags: driver.Mapped, Registered: true})
	for _, tc := range []struct {
		name string
		off  int
		n    int64
		want bool
	}{
		{"ends just before a", 0, 1000, false},
		{"last byte of a", 1999, 1, true},
		{"starts just after a", 2000, 2096, false},
		{"spans a gap and b", 2000, 2097, true},
		{"inside b", 5000, 10, true},
		{"after b", 8192, 100, false},
		{"empty", 1500, 0, false},
	} {
		assert.Equal(t, tc.want, r.Overlaps(addr(mem)+uintptr(tc.off), tc.n), tc.name)
	}
	assert.Equal(t, accounting.PathStaged, r.Path(a[:10]), "staging memory records the staged path")
	assert.Equal(t, accounting.PathPinned, r.Path(b[:10]))
	got, ok := r.Containing(addr(b), 1)
	require.True(t, ok)
	assert.Equal(t, accounting.Registered, got.Kind())
	got, ok = r.Containing(addr(a), 1)
	require.True(t, ok)
	assert.Equal(t, accounting.Pinned, got.Kind())
	assert.Equal(t, "mapped|staging", (driver.Mapped | driver.Staging).String())
}

func TestKernelArgsLayout(t *testing.T) {
	var a driver.KernelArgs
	a.I32(7).U64(1).F32(2).F64(3).Struct(make([]byte, 12), 8).Ptr(0x1000).I64(-1)
	buf, offs := a.Bytes()
	// Each argument at its natural alignment, as the CUDA ABI lays them out.
	assert.Equal(t, []int{0, 8, 16, 24, 32, 48, 56}, offs)
	assert.Len(t, buf, 64)
	assert.Equal(t, 7, a.Len())
	assert.Equal(t, byte(7), buf[0])
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, buf[56:64])
}
