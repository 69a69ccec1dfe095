package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

func TestStreamErrorsAtSynchronize(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	s, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.CopyHtoDAsync(0x42, testdev.RandomBytes(8)), "enqueueing succeeds; the work fails later")
	err = s.Synchronize()
	assert.ErrorIs(t, err, driver.ErrInvalidPointer)
	assert.NoError(t, s.Synchronize(), "the error is reported once")

	require.NoError(t, s.MemsetAsync(0x42, 0, 1))
	assert.ErrorIs(t, dev.Synchronize(), driver.ErrInvalidPointer, "Device.Synchronize reports stream errors")
	require.NoError(t, s.CopyDtoHAsync(make([]byte, 1), 0x42))
	assert.ErrorIs(t, s.Close(), driver.ErrInvalidPointer, "Close reports what was not yet reported")
	assert.NoError(t, s.Close())
	assert.ErrorIs(t, s.Synchronize(), driver.ErrClosed)
}
