package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
)

// TestEventNotReady arms an event without letting a stream reach it, so the
// not-ready answers are checked deterministically.
func TestEventNotReady(t *testing.T) {
	dev, err := New(Config{Memory: 1 << 20})
	require.NoError(t, err)
	defer dev.Close()
	start, err := dev.NewEvent()
	require.NoError(t, err)
	end, err := dev.NewEvent()
	require.NoError(t, err)

	m, err := end.(*event).arm(nil) // recorded, not yet reached
	require.NoError(t, err)
	done, err := end.Query()
	require.NoError(t, err)
	assert.False(t, done)
	_, err = end.Elapsed(start)
	assert.ErrorIs(t, err, driver.ErrNotReady)
	_, err = start.Elapsed(end)
	assert.ErrorIs(t, err, driver.ErrNotReady, "either side not ready")

	m.complete()
	require.NoError(t, end.Synchronize())
	el, err := end.Elapsed(start)
	require.NoError(t, err)
	assert.Positive(t, el)
}
