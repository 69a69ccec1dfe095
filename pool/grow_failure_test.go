package pool_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// failingMalloc is a device whose Malloc fails with err while err is set.
type failingMalloc struct {
	driver.Device
	err error
}

func (d *failingMalloc) Malloc(n int64) (devarray.Ptr, error) {
	if d.err != nil {
		return 0, d.err
	}
	return d.Device.Malloc(n)
}

// A request whose new segment the device refuses (an error other than out
// of memory) after the reserve ratio gave a cached segment back leaves the
// ledger's cached bytes equal to the pool's, also through the fast path
// that follows (which updates the ledger by differences only).
func TestFailedGrowKeepsLedgerCached(t *testing.T) {
	dev := &failingMalloc{Device: testdev.Open(t)}
	led := dev.Ledger()
	cached := func() int64 { return led.Snapshot().Kinds[accounting.Device].Cached }
	p := pool.New(dev)
	require.NoError(t, p.SetReserveRatio(1))
	big := int64(12<<20 + 256*rand.IntN(1024)) // a segment of its own, cached once freed
	b, err := p.Alloc(big)
	require.NoError(t, err)
	small := int64(256 * (1 + rand.IntN(200)))
	x, err := p.Alloc(small) // a small segment, and a block the fast path parks
	require.NoError(t, err)
	require.NoError(t, p.Free(b))
	dev.err = errors.New("injected malloc failure")
	// too large for the cached segment: the ratio gives that back, then the device refuses
	_, err = p.Alloc(big + 16<<20)
	require.ErrorIs(t, err, dev.err)
	dev.err = nil
	require.NoError(t, p.Free(x)) // the fast path: parked
	y, err := p.Alloc(small)      // the fast path: handed out again
	require.NoError(t, err)
	assert.Equal(t, x, y)
	require.NoError(t, p.Free(y))
	assert.Equal(t, p.Stats().Cached, cached(), "the ledger's cached bytes follow the pool's")
	require.NoError(t, p.Release())
	assert.Zero(t, cached())
	assert.Zero(t, led.Current(accounting.Device))
}
