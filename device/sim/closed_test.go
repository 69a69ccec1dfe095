package sim_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

func TestClosedAndHostLimits(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(t, err)
	_, err = dev.HostAlloc(math.MaxInt64, 0)
	assert.ErrorIs(t, err, driver.ErrOutOfMemory, "more host memory than there is: the typed OOM, as cuMemHostAlloc")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
	assert.False(t, dev.Closed())
	flag := dev.ClosedFlag() // what package pool reads at every allocation
	assert.True(t, flag.Valid())
	assert.False(t, flag.Closed())
	require.NoError(t, dev.Close())
	assert.True(t, dev.Closed())
	assert.True(t, flag.Closed(), "the flag taken before Close sees it")
	_, err = dev.ExternalStream(driver.LegacyDefaultStream)
	assert.ErrorIs(t, err, driver.ErrClosed)
}
