package bench_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// A calibration size larger than the device is refused before anything
// is measured or allocated (it made the host side first, filled with
// random bytes: -sizes 1TiB asked the host for a terabyte); sizes of 0 or
// less are refused too.
func TestCalibrateRefusesImpossibleSizes(t *testing.T) {
	dev, err := device.Open("sim:0?mem=16MiB")
	require.NoError(t, err)
	defer dev.Close()
	for _, n := range []int64{16<<20 + 1 + rand.Int64N(1<<30), 1 << 40, 1<<63 - 1, 0, -1} {
		_, err := bench.Calibrate(dev, bench.CalibrateConfig{Sizes: []int64{4 << 10, n}, Paths: []transfer.Path{transfer.PathDirect}})
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "size %d", n)
		assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Device].Allocs, "size %d: nothing allocated on the device", n)
	}
}
