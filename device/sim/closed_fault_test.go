package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestClosedSaysClosed: once Close has returned, every call that allocates,
// copies, launches, makes a stream or an event, or queues work says
// driver.ErrClosed, whether or not the device faulted before: Close ends
// the fault, so a caller that checks for ErrClosed (a pool or a copier
// shutting down) is not told of a fault that no longer exists.
func TestClosedSaysClosed(t *testing.T) {
	for _, faulted := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "faulted then closed"}[faulted], func(t *testing.T) {
			dev, err := sim.New(sim.Config{Memory: 1 << 20})
			require.NoError(t, err)
			t.Cleanup(func() { dev.Close() })
			src := testdev.RandomBytes(4096)
			p, err := dev.Malloc(4096)
			require.NoError(t, err)
			q, err := dev.Malloc(4096)
			require.NoError(t, err)
			pinned, err := dev.HostAlloc(4096, driver.Mapped)
			require.NoError(t, err)
			reg, err := dev.Register(testdev.RandomBytes(8192), 0)
			require.NoError(t, err)
			s, err := dev.NewStream()
			require.NoError(t, err)
			ev, err := dev.NewEvent()
			require.NoError(t, err)
			require.NoError(t, dev.CopyHtoD(p, src))
			if faulted {
				dev.FailFault(1)
				require.ErrorIs(t, dev.CopyDtoD(q, p, 4096), driver.ErrContextFailed, "the copy faults the device")
				require.ErrorIs(t, dev.Fault(), driver.ErrContextFailed)
			}
			require.NoError(t, dev.Close())

			calls := everyCall(dev, p, q, src, pinned, reg, s, ev)
			for _, c := range calls {
				err := c.call()
				assert.ErrorIs(t, err, driver.ErrClosed, c.name)
				assert.NotErrorIs(t, err, driver.ErrContextFailed, "%s: Close ended the fault", c.name)
			}
		})
	}
}
