package pool_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// noMemInfo is a device that cannot say how much memory it has free.
type noMemInfo struct{ driver.Device }

func (noMemInfo) MemInfo() (free, total int64, err error) {
	return 0, 0, errors.New("injected: memory figures unavailable")
}

// An out-of-memory error on a device that cannot report its memory says
// so: Free and Total are -1 ("unknown" in the message), not figures that
// look real, and the other figures are the pool's own.
func TestOutOfMemoryWithoutDeviceFigures(t *testing.T) {
	dev := noMemInfo{testdev.Open(t)}
	p := newPool(t, dev)
	limit := int64(256 * (1 + rand.IntN(4096)))
	require.NoError(t, p.SetLimit(limit))
	held, err := p.Alloc(limit)
	require.NoError(t, err)
	_, err = p.Alloc(int64(1 + rand.IntN(1<<20)))
	var oom *pool.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
	assert.Equal(t, int64(-1), oom.Free, "free unknown")
	assert.Equal(t, int64(-1), oom.Total, "total unknown")
	assert.Equal(t, limit, oom.Limit)
	assert.Equal(t, limit, oom.InUse)
	assert.True(t, oom.ByLimit)
	assert.Contains(t, err.Error(), "free unknown, total unknown")
	require.NoError(t, p.Free(held))
}
