package sim_test

import (
	"testing"
	"time"

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

// A stream that Synchronize has returned for is idle at once, with no
// latency and with: "cuStreamQuery: Returns CUDA_SUCCESS if all operations
// in the stream specified by hStream have completed". The wait that
// Synchronize ends on must not leave itself counted as pending work.
func TestStreamIdleRightAfterSynchronize(t *testing.T) {
	for _, latency := range []time.Duration{0, 50 * time.Microsecond} {
		t.Run(latency.String(), func(t *testing.T) {
			dev := newDevice(t, sim.Config{Latency: latency})
			buf, err := dev.Malloc(4096)
			require.NoError(t, err)
			defer dev.Free(buf)
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer s.Close()
			src := testdev.RandomBytes(4096)
			for i := range 500 {
				require.NoError(t, s.CopyHtoDAsync(buf, src))
				require.NoError(t, s.Synchronize())
				require.True(t, sim.Idle(s), "round %d: the stream is busy right after Synchronize returned", i)
				require.NoError(t, s.Synchronize(), "round %d: synchronizing an idle stream", i)
				require.True(t, sim.Idle(s), "round %d: the stream is busy after a second Synchronize", i)
			}
		})
	}
}
