package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
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

			calls := []struct {
				name string
				call func() error
			}{
				{"Malloc", func() error { _, err := dev.Malloc(256); return err }},
				{"Free", func() error { return dev.Free(p) }},
				{"CopyHtoD", func() error { return dev.CopyHtoD(p, src) }},
				{"CopyDtoH", func() error { return dev.CopyDtoH(make([]byte, 16), p) }},
				{"CopyDtoD", func() error { return dev.CopyDtoD(q, p, 16) }},
				{"Memset", func() error { return dev.Memset(p, 1, 16) }},
				{"Memcpy2D", func() error {
					return dev.Memcpy2D(devarray.Memcpy2D{Dst: devarray.Place{Dev: q}, Src: devarray.Place{Dev: p}, Width: 16, Height: 2, DstPitch: 32, SrcPitch: 32})
				}},
				{"Access", func() error {
					return dev.Access([]driver.Range{{Ptr: p, N: 16}}, func([][]byte) error { return nil })
				}},
				{"Launch", func() error {
					return dev.Launch(s, []driver.Range{{Ptr: p, N: 16}}, func([][]byte) error { return nil })
				}},
				{"MemInfo", func() error { _, _, err := dev.MemInfo(); return err }},
				{"HostAlloc", func() error { _, err := dev.HostAlloc(4096, 0); return err }},
				{"HostFree", func() error { return dev.HostFree(pinned) }},
				{"Register", func() error { _, err := dev.Register(testdev.RandomBytes(4096), 0); return err }},
				{"Unregister", func() error { return dev.Unregister(reg) }},
				{"NewStream", func() error { _, err := dev.NewStream(); return err }},
				{"NewEvent", func() error { _, err := dev.NewEvent(); return err }},
				{"Record", func() error { return s.Record(ev) }},
				{"WaitEvent", func() error { return s.WaitEvent(ev) }},
				{"CopyHtoDAsync", func() error { return s.CopyHtoDAsync(p, src) }},
				{"Stream.Synchronize", s.Synchronize},
			}
			for _, c := range calls {
				err := c.call()
				assert.ErrorIs(t, err, driver.ErrClosed, c.name)
				assert.NotErrorIs(t, err, driver.ErrContextFailed, "%s: Close ended the fault", c.name)
			}
		})
	}
}
