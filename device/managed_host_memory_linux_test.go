package device_test

import (
	"math"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Managed memory may oversubscribe the device, not the host: on sim a
// managed allocation larger than the host's memory and swap together is
// out of memory at the call, counted as a failure, nothing left in the
// ledger, rather than a mapping the OS reserves without backing (and the
// page table sim keeps for it, which grows with the size asked for).
func TestManagedBeyondHostMemory(t *testing.T) {
	var si syscall.Sysinfo_t
	require.NoError(t, syscall.Sysinfo(&si))
	host := (int64(si.Totalram) + int64(si.Totalswap)) * int64(si.Unit)
	page := int64(4096)
	for _, tc := range []struct {
		name string
		n    int64
		want error
	}{
		{"a page more than the host has", host + page, device.ErrOutOfMemory},
		{"twice the host's memory", 2*host + page*rand.Int64N(1024), device.ErrOutOfMemory},
		{"the most int64 counts", math.MaxInt64, device.ErrOutOfMemory},
		{"a few pages", page * (1 + rand.Int64N(16)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := device.Open("sim:0?mem=1MiB")
			require.NoError(t, err)
			defer dev.Close()
			a, err := devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Uint8, int(tc.n))
			if tc.want == nil {
				require.NoError(t, err)
				require.NoError(t, a.Free())
				return
			}
			assert.ErrorIs(t, err, tc.want)
			assert.Nil(t, a)
			assert.Zero(t, dev.Ledger().Current(accounting.Managed))
			assert.Equal(t, int64(1), dev.Ledger().Snapshot().Kinds[accounting.Managed].Failed)
		})
	}
}
