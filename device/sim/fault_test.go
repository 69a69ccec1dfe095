package sim_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestFaultIsSticky faults the device from a copy queued on a stream, as an
// illegal address does on a GPU, and checks that every call afterwards
// fails with ErrContextFailed at once (nothing waits forever), that work
// queued behind the fault never runs, and that Close still frees it all.
func TestFaultIsSticky(t *testing.T) {
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			goroutines := runtime.NumGoroutine()
			dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency})
			require.NoError(t, err)
			t.Cleanup(func() { dev.Close() })
			src := testdev.RandomBytes(4096)
			p, err := dev.Malloc(4096)
			require.NoError(t, err)
			q, err := dev.Malloc(4096)
			require.NoError(t, err)
			pinned, err := dev.HostAlloc(4096, driver.Mapped)
			require.NoError(t, err)
			registered := testdev.RandomBytes(8192)
			reg, err := dev.Register(registered, 0)
			require.NoError(t, err)
			s, err := dev.NewStream()
			require.NoError(t, err)
			ev, err := dev.NewEvent()
			require.NoError(t, err)

			require.NoError(t, dev.CopyHtoD(p, src), "before the fault, copies work")
			dev.FailFault(2)
			require.NoError(t, s.CopyDtoDAsync(q, p, 4096), "the first copy runs")
			require.NoError(t, s.CopyHtoDAsync(q, src), "the second faults when it runs, after this returns")
			behind := testdev.RandomBytes(4096)
			before := append([]byte(nil), behind...)
			if err := s.CopyDtoHAsync(behind, p); err != nil {
				// without latency the fault may have happened already: the enqueue reports it
				require.ErrorIs(t, err, driver.ErrContextFailed)
			} else if err := s.Record(ev); err != nil {
				require.ErrorIs(t, err, driver.ErrContextFailed)
			}

			err = s.Synchronize()
			require.ErrorIs(t, err, driver.ErrContextFailed)
			assert.ErrorIs(t, err, driver.ErrInjected)
			assert.ErrorIs(t, dev.Fault(), driver.ErrContextFailed)
			assert.Equal(t, before, behind, "work queued behind a fault does not run")
			assert.ErrorIs(t, s.Synchronize(), driver.ErrContextFailed, "the error is sticky: a second Synchronize reports it too")

			calls := append(everyCall(dev, p, q, src, pinned, reg, s, ev),
				deviceCall{"Event.Synchronize", ev.Synchronize},
				deviceCall{"Event.Query", func() error { _, err := ev.Query(); return err }},
				deviceCall{"Elapsed", func() error { _, err := ev.Elapsed(ev); return err }},
				deviceCall{"Device.Synchronize", dev.Synchronize},
			)
			for _, c := range calls {
				assert.ErrorIs(t, c.call(), driver.ErrContextFailed, c.name)
			}
			assert.Equal(t, int64(2*4096), dev.Ledger().Current(accounting.Device), "a failed free keeps the memory, as cuMemFree does after a sticky error")

			assert.ErrorIs(t, s.Close(), driver.ErrContextFailed, "Close of a stream reports the fault and releases it")
			assert.NoError(t, ev.Close())
			require.NoError(t, dev.Close(), "Close ends the fault: it frees everything")
			snap := dev.Ledger().Snapshot()
			for _, k := range []accounting.Kind{accounting.Device, accounting.Mapped, accounting.Registered} {
				assert.Zero(t, snap.Kinds[k].Current, "%v bytes after Close", k)
			}
			// a plain loop: assert.Eventually runs its condition on goroutines of its own
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "the device's stream goroutines end")
		})
	}
}

// TestFaultFromEachKind faults the device from a synchronous copy, a
// memset and a kernel, and checks that FailFault(0) cancels a countdown.
func TestFaultFromEachKind(t *testing.T) {
	for _, tt := range []struct {
		name string
		work func(dev *sim.Device, p devarray.Ptr) error
	}{
		{"copy", func(dev *sim.Device, p devarray.Ptr) error { return dev.CopyHtoD(p, testdev.RandomBytes(64)) }},
		{"memset", func(dev *sim.Device, p devarray.Ptr) error { return dev.Memset(p, 7, 64) }},
		{"kernel", func(dev *sim.Device, p devarray.Ptr) error {
			return dev.Access([]driver.Range{{Ptr: p, N: 64}}, func([][]byte) error { return nil })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dev := newDevice(t, sim.Config{})
			p, err := dev.Malloc(64)
			require.NoError(t, err)
			dev.FailFault(1)
			dev.FailFault(0)
			require.NoError(t, tt.work(dev, p), "0 cancels")
			require.NoError(t, dev.Fault())
			dev.FailFault(1)
			assert.ErrorIs(t, tt.work(dev, p), driver.ErrContextFailed)
			dev.FailFault(0)
			assert.ErrorIs(t, tt.work(dev, p), driver.ErrContextFailed, "cancelling the countdown does not undo a fault")
		})
	}
}

// TestPeekIsNotDeviceWork: Peek, the tests' look at device memory, counts
// no fault position and still reads after a fault.
func TestPeekIsNotDeviceWork(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	p, err := dev.Malloc(64)
	require.NoError(t, err)
	src := testdev.RandomBytes(64)
	require.NoError(t, dev.CopyHtoD(p, src))
	dev.FailFault(1)
	got, err := dev.Peek(p, 64)
	require.NoError(t, err)
	assert.Equal(t, src, got)
	require.NoError(t, dev.Fault(), "Peek used no fault position")
	assert.ErrorIs(t, dev.Memset(p, 1, 64), driver.ErrContextFailed, "the next device work faults")
	got, err = dev.Peek(p, 64)
	require.NoError(t, err, "Peek reads after the fault")
	assert.Equal(t, src, got, "the faulted memset changed nothing")
}
