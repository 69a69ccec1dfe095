package sim_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestFaultWaitersWaitForRunningWork: a kernel is running on one stream
// when work elsewhere faults the device. A Synchronize of that stream, of
// an event recorded behind the kernel, or of the device reports the fault,
// but only once the kernel has stopped touching memory: returning while it
// runs lets the caller reuse memory (a Go slice a copy writes, a buffer it
// reads) under it, a data race the sim must not create.
func TestFaultWaitersWaitForRunningWork(t *testing.T) {
	for _, tt := range []struct {
		name string
		wait func(dev *sim.Device, s driver.Stream, ev driver.Event) error
	}{
		{"stream", func(_ *sim.Device, s driver.Stream, _ driver.Event) error { return s.Synchronize() }},
		{"event", func(_ *sim.Device, _ driver.Stream, ev driver.Event) error { return ev.Synchronize() }},
		{"device", func(dev *sim.Device, _ driver.Stream, _ driver.Event) error { return dev.Synchronize() }},
		{"query", func(_ *sim.Device, _ driver.Stream, ev driver.Event) error {
			for { // a Done loop: transfer's Op and pinned buffers poll so
				if ok, err := ev.Query(); ok || err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dev := newDevice(t, sim.Config{})
			p, err := dev.Malloc(4096)
			require.NoError(t, err)
			q, err := dev.Malloc(4096)
			require.NoError(t, err)
			s, err := dev.NewStream()
			require.NoError(t, err)
			ev, err := dev.NewEvent()
			require.NoError(t, err)
			src := testdev.RandomBytes(4096)
			require.NoError(t, dev.CopyHtoD(p, src))

			started := make(chan struct{})
			var finished atomic.Bool
			require.NoError(t, dev.Launch(s, []driver.Range{{Ptr: p, N: 4096}}, func(mem [][]byte) error {
				close(started)
				time.Sleep(200 * time.Millisecond) // a long kernel
				copy(mem[0], testdev.RandomBytes(4096))
				finished.Store(true)
				return nil
			}))
			require.NoError(t, s.Record(ev))
			<-started
			dev.FailFault(1)
			require.ErrorIs(t, dev.Memset(q, 1, 4096), driver.ErrContextFailed, "work elsewhere faults while the kernel runs")

			err = tt.wait(dev, s, ev)
			assert.True(t, finished.Load(), "%s Synchronize returned (%v) while the kernel still ran", tt.name, err)
			assert.ErrorIs(t, err, driver.ErrContextFailed)
			assert.ErrorIs(t, s.Close(), driver.ErrContextFailed)
			assert.NoError(t, ev.Close())
		})
	}
}
