package driver_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
)

// CheckCopy refuses host memory that shares bytes with a page-locked range
// without lying inside one, naming both ranges, and lets memory wholly
// inside one range or outside all of them pass. Offsets and lengths are
// drawn at random inside each case's bounds.
func TestCheckCopyPartlyLocked(t *testing.T) {
	mem := make([]byte, 4*4096)
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	a, b, c := mem[1000:2000], mem[4096:8192], mem[8192:9000] // b and c adjacent
	var r driver.HostRanges
	r.Insert(driver.HostRange{Addr: addr(a), Mem: a})
	r.Insert(driver.HostRange{Addr: addr(b), Mem: b, Registered: true})
	r.Insert(driver.HostRange{Addr: addr(c), Mem: c, Registered: true})
	in := func(lo, hi int) int { return lo + rand.IntN(hi-lo+1) } // [lo, hi]
	for _, tc := range []struct {
		name   string
		span   func() []byte
		locked []byte // the range the error names; nil: no error
	}{
		{"pageable, before every range", func() []byte { return mem[in(0, 500):in(501, 1000)] }, nil},
		{"pageable, in the gap, sharing a page with a and b", func() []byte { return mem[in(2000, 3000):in(3001, 4096)] }, nil},
		{"inside a", func() []byte { return mem[in(1000, 1500):in(1501, 2000)] }, nil},
		{"inside b", func() []byte { return mem[in(4096, 6000):in(6001, 8192)] }, nil},
		{"starting inside a", func() []byte { return mem[in(1000, 1999):in(2001, 4096)] }, a},
		{"ending inside a", func() []byte { return mem[in(0, 999):in(1001, 2000)] }, a},
		{"around a", func() []byte { return mem[in(0, 999):in(2001, 4096)] }, a},
		{"spanning b and c", func() []byte { return mem[in(4096, 8191):in(8193, 9000)] }, b},
		{"starting inside c", func() []byte { return mem[in(8192, 8999):in(9001, 16384)] }, c},
		{"from the gap into b", func() []byte { return mem[in(2000, 4095):in(4097, 8192)] }, b},
		{"empty, inside a", func() []byte { x := in(1000, 2000); return mem[x:x] }, nil},
	} {
		for range 20 {
			s := tc.span()
			err := r.CheckCopy("copy HtoD", s)
			desc := fmt.Sprintf("%s: [%d, %d)", tc.name, addr(s)-addr(mem), addr(s)-addr(mem)+uintptr(len(s)))
			if tc.locked == nil {
				require.NoError(t, err, desc)
				continue
			}
			require.ErrorIs(t, err, driver.ErrPartlyLocked, desc)
			assert.ErrorIs(t, err, driver.ErrInvalidValue, "%s: a case of the driver's invalid value", desc)
			var pe *driver.PartlyLockedError
			require.True(t, errors.As(err, &pe), desc)
			assert.Equal(t, driver.PartlyLockedError{Op: "copy HtoD", Addr: addr(s), N: int64(len(s)),
				LockedAddr: addr(tc.locked), LockedN: int64(len(tc.locked)), Registered: &tc.locked[0] != &a[0]}, *pe, desc)
			assert.Contains(t, err.Error(), fmt.Sprintf("[%#x, %#x) (%d bytes)", addr(s), addr(s)+uintptr(len(s)), len(s)), "%s: names the copy's range", desc)
			assert.Contains(t, err.Error(), fmt.Sprintf("[%#x, %#x) (%d bytes, ", addr(tc.locked), addr(tc.locked)+uintptr(len(tc.locked)), len(tc.locked)), "%s: names the locked range", desc)
		}
	}
}
