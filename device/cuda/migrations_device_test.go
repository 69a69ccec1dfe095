//go:build cuda

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// A managed array written by the host and prefetched to the device shows
// the prefetch in the ledger after a synchronize: on a GPU from CUPTI's
// unified-memory counters (skipped, with CUPTI's reason, where CUPTI cannot
// count), on the emulated driver from its pages. The bytes are at least the
// array's, and the data comes back unchanged.
func TestPrefetchReachesTheLedger(t *testing.T) {
	d := open(t)
	if !d.ConcurrentManagedAccess() {
		t.Skip("the device has no concurrent managed access: cuMemPrefetchAsync to it is refused")
	}
	r := rand.For(t)
	n := (1 + r.IntN(16)) << 16 // 64 KiB to 1 MiB
	a, err := devarray.EmptyManaged(d, devarray.AttachGlobal, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Free()) }()
	if why := d.Ledger().Managed().Uncounted; why != "" {
		t.Skip("the driver's migrations cannot be counted here: " + why)
	}
	host, err := a.HostView(true)
	require.NoError(t, err)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	copy(host, want)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	before := d.Ledger().Snapshot()
	require.NoError(t, s.Prefetch(a.Ptr(), int64(n), driver.Location(d.ordinal)))
	require.NoError(t, s.Synchronize())
	require.NoError(t, d.Synchronize())
	diff := accounting.Diff(before, d.Ledger().Snapshot())
	assert.GreaterOrEqual(t, diff.Copies[accounting.HtoD][accounting.PathPrefetch].Bytes, int64(n), "the prefetch's bytes, HtoD")
	host, err = a.HostView(false)
	require.NoError(t, err)
	assert.Equal(t, want, host)
}
