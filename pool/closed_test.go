package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// closerOnly is a device that says whether it was closed only through a
// call (Closed), with no flag to read in place (driver.ClosedFlag).
type closerOnly struct {
	driver.Device
	closed func() bool
}

func (d closerOnly) Closed() bool { return d.closed() }

// closeReporters are the two ways a device tells the pool it was closed:
// its closed flag, read in place (sim's, cuda's), or only Closed, called.
var closeReporters = []struct {
	name string
	wrap func(d driver.Device) driver.Device
}{
	{"closed flag", func(d driver.Device) driver.Device { return d }},
	{"Closed only", func(d driver.Device) driver.Device {
		return closerOnly{Device: d, closed: d.(interface{ Closed() bool }).Closed}
	}},
}

// Whether the device gives the pool its closed flag to read (sim's does)
// or only answers Closed: parked blocks come back while it is open, and
// once it is closed a parked block is not handed out (ErrClosed).
func TestPoolSeesTheDeviceClosed(t *testing.T) {
	for _, tc := range closeReporters {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.OpenOwned(t)
			p := pool.New(tc.wrap(dev))
			n := int64(1 + rand.IntN(64<<10))
			for range 3 {
				ptr, err := p.Alloc(n)
				require.NoError(t, err)
				require.NoError(t, p.Free(ptr))
			}
			st := p.Stats()
			assert.Equal(t, int64(1), st.FromDevice)
			assert.Equal(t, int64(2), st.FromCache, "the block parked and handed back")
			require.NoError(t, dev.Close())
			_, err := p.Alloc(n)
			assert.ErrorIs(t, err, driver.ErrClosed, "a parked block went with the device's memory")
		})
	}
}
