package interop_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/faultsweep"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// faultErr checks an error of a sweep: nil, or one that says the context
// failed (nothing else goes wrong in these workflows).
func faultErr(t *testing.T, err error, what string) bool {
	t.Helper()
	if err != nil {
		assert.ErrorIs(t, err, device.ErrContextFailed, "%s: the only error here is the fault's", what)
	}
	return err == nil
}

// faultDLPack, set by the cgo build's fault_dlpack_test.go, exports b
// through DLPack and imports it back, checking what it reads against want.
var faultDLPack func(t *testing.T, dev *sim.Device, b *devarray.DevArray, want []byte)

// TestFaultPendingExports sweeps a sticky fault over a workflow of
// Pending and the exports: a copy queued on a stream and recorded,
// ExportStream and ExportCAI, WaitOn a consumer stream, ImportCAIOn,
// Wait and a read back, DLPack (with and without a copy), IPC, a memset
// recorded and reaped. At every position every call returns, fails only
// with ErrContextFailed, succeeds only with correct data, the done
// functions run once each, nothing stays pending, and Close frees it all.
func TestFaultPendingExports(t *testing.T) {
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			for n := int64(1); ; n++ {
				require.Less(t, n, int64(100), "the workflow never ran without a fault")
				var faulted bool
				ok := t.Run(fmt.Sprint("fault=", n), func(t *testing.T) {
					faulted = pendingExportsFault(t, latency, n)
				})
				if !ok || !faulted {
					return
				}
			}
		})
	}
}

// pendingExportsFault runs the workflow with the nth device operation
// faulting and reports whether the device faulted.
func pendingExportsFault(t *testing.T, latency time.Duration, n int64) bool {
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency, FailFault: n})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			dev.Close()
		}
	})
	const size = 4096
	src := testdev.RandomBytes(size)
	pending := &interop.Pending{}
	var queued, finished atomic.Int64
	done := func() error { finished.Add(1); return nil }

	var a, b *devarray.DevArray
	var s, consumer driver.Stream
	var faulted bool
	faultsweep.Within(t, "the workflow", func() {
		if a, err = devarray.FromBytes(dev, src, devarray.Uint8, size); !faultErr(t, err, "FromBytes") {
			return
		}
		if b, err = devarray.FromBytes(dev, testdev.RandomBytes(size), devarray.Uint8, size); !faultErr(t, err, "FromBytes") {
			return
		}
		if s, err = dev.NewStream(); !faultErr(t, err, "NewStream") {
			return
		}
		if consumer, err = dev.NewStream(); !faultErr(t, err, "NewStream") {
			return
		}
		if err := s.CopyDtoDAsync(b.Ptr(), a.Ptr(), size); !faultErr(t, err, "CopyDtoDAsync") {
			return
		}
		if err := pending.Queued(dev, s, done, b, a); faultErr(t, err, "Queued") {
			queued.Add(1)
		}
		stream, err := pending.ExportStream(b)
		if faultErr(t, err, "ExportStream") {
			m, err := interop.ExportCAI(b, stream)
			require.NoError(t, err, "ExportCAI moves nothing")
			// a consumer on another stream of the device follows the stream rule
			if c, err := interop.ImportCAIOn(dev, consumer, m); faultErr(t, err, "ImportCAIOn") {
				assert.Equal(t, b.Ptr(), c.Ptr())
				assert.NoError(t, c.Free(), "a borrowed import frees nothing")
			}
			if c, err := interop.ImportCAIOn(dev, nil, m); faultErr(t, err, "ImportCAIOn from the host") {
				got := make([]byte, size)
				if err := c.CopyTo(got); faultErr(t, err, "CopyTo of the import") {
					assert.Equal(t, src, got, "the host waited for the producer: the copy is there")
				}
				assert.NoError(t, c.Free())
			}
		}
		faultErr(t, pending.WaitOn(b, consumer.Handle()), "WaitOn")
		if err := pending.Wait(b); faultErr(t, err, "Wait") {
			assert.Zero(t, pending.Len(), "Wait saw the work complete")
			got := make([]byte, size)
			if err := b.CopyTo(got); faultErr(t, err, "CopyTo") {
				assert.Equal(t, src, got, "Wait returned nil: the copy is complete")
			}
		}
		if faultDLPack != nil {
			faultDLPack(t, dev, b, src)
		}
		if d, err := interop.ExportIPC(dev, b); errors.Is(err, errors.ErrUnsupported) {
			// sim without memfd (-tags sim_nomemfd, macOS) has no IPC
		} else if faultErr(t, err, "ExportIPC") {
			// a handle of this process does not open here; on a faulted
			// device the fault is what the open reports
			_, err := interop.OpenIPC(dev, d)
			require.Error(t, err)
			if dev.Fault() != nil {
				assert.ErrorIs(t, err, device.ErrContextFailed, "OpenIPC on a faulted device")
			}
		}
		v := byte(1 + time.Now().UnixNano()%255)
		if err := s.MemsetAsync(b.Ptr(), v, size); faultErr(t, err, "MemsetAsync") {
			if err := pending.Queued(dev, s, done, b); faultErr(t, err, "Queued") {
				queued.Add(1)
			}
		}
		// reaping ends: what completed or failed is forgotten, nothing is
		// retried forever. After a fault, an event's query fails once the
		// work ahead of it on its stream has stopped (sim's streams finish
		// the operation that faulted first, as TestFaultWaitersWaitForRunningWork
		// in device/sim requires), so Reap may keep work for that long.
		var faultSeen time.Time
		for pending.Len() > 0 {
			if faultSeen.IsZero() && dev.Fault() != nil {
				faultSeen = time.Now()
			}
			faultErr(t, pending.Reap(), "Reap")
			if !faultSeen.IsZero() {
				require.Less(t, time.Since(faultSeen), 10*time.Second,
					"Reap still keeps %d works 10 s after the fault: their events' queries never fail", pending.Len())
			}
			time.Sleep(100 * time.Microsecond)
		}
		if err := pending.Wait(b); faultErr(t, err, "Wait with nothing pending") && dev.Fault() == nil {
			got := make([]byte, size)
			if err := b.CopyTo(got); faultErr(t, err, "CopyTo") {
				assert.Equal(t, bytes.Repeat([]byte{v}, size), got, "the memset ran")
			}
		}
	})

	faultsweep.Within(t, "closing", func() {
		faultErr(t, pending.Reap(), "Reap")
		assert.Zero(t, pending.Len(), "nothing stays pending")
		assert.Equal(t, queued.Load(), finished.Load(), "every recorded work's done ran once")
		for _, x := range []*devarray.DevArray{a, b} {
			faultErr(t, x.Free(), "Free")
		}
		for _, x := range []driver.Stream{s, consumer} {
			if x != nil {
				faultErr(t, x.Close(), "Stream.Close")
			}
		}
		faulted = dev.Fault() != nil
		closed = true
		require.NoError(t, dev.Close())
	})
	snap := dev.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.Registered, accounting.IPC} {
		assert.Zero(t, snap.Kinds[k].Current, "%v bytes after Close", k)
	}
	faultsweep.Settled(t, goroutines)
	return faulted
}

// TestFaultWaitStream: the stream rule on a faulted device reports the
// fault and leaves no event or borrowed stream behind.
func TestFaultWaitStream(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20, Latency: time.Millisecond})
	require.NoError(t, err)
	defer dev.Close()
	producer, err := dev.NewStream()
	require.NoError(t, err)
	consumer, err := dev.NewStream()
	require.NoError(t, err)
	p, err := dev.Malloc(256)
	require.NoError(t, err)
	dev.FailFault(1)
	require.NoError(t, producer.MemsetAsync(p, 3, 256), "the memset faults after it was queued")
	faultsweep.Within(t, "WaitStream", func() {
		// the consumer waits on the device: nil is no lie if its stream then reports the fault
		faultErr(t, interop.WaitStream(dev, producer.Handle(), consumer), "WaitStream")
		assert.ErrorIs(t, consumer.Synchronize(), device.ErrContextFailed)
		assert.ErrorIs(t, interop.WaitStream(dev, producer.Handle(), nil), device.ErrContextFailed, "the host waits")
		assert.ErrorIs(t, interop.WaitStream(dev, producer.Handle(), consumer), device.ErrContextFailed)
	})
	assert.ErrorIs(t, producer.Close(), device.ErrContextFailed)
	assert.ErrorIs(t, consumer.Close(), device.ErrContextFailed)
	require.NoError(t, dev.Close())
	assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Device].Current)
}

// TestFaultPendingConcurrent: goroutines queue copies on streams of their
// own and record them in one Pending, while others export (ExportStream,
// WaitOn, Wait) and reap, and the device faults part-way (at every
// position of the first few dozen operations). Every goroutine returns
// within the deadline, errors are the fault's, every done function runs
// once, and nothing stays pending.
func TestFaultPendingConcurrent(t *testing.T) {
	const workers, rounds, size = 4, 6, 1024
	for _, latency := range []time.Duration{0, time.Millisecond} {
		for n := int64(1); n <= 40; n += 3 {
			t.Run(fmt.Sprintf("%v/fault=%d", latency, n), func(t *testing.T) {
				dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency})
				require.NoError(t, err)
				defer dev.Close()
				pending := &interop.Pending{}
				var queued, finished atomic.Int64
				arrays := make([]*devarray.DevArray, workers)
				for i := range arrays {
					arrays[i], err = devarray.FromBytes(dev, testdev.RandomBytes(size), devarray.Uint8, size)
					require.NoError(t, err)
				}
				dev.FailFault(n)
				faultsweep.Within(t, "the goroutines", func() {
					var wg sync.WaitGroup
					for i := range workers {
						wg.Add(2)
						go func() { // a producer: memsets of its array on its stream
							defer wg.Done()
							s, err := dev.NewStream()
							if !faultErr(t, err, "NewStream") {
								return
							}
							defer func() { faultErr(t, s.Close(), "Stream.Close") }()
							for r := range rounds {
								if !faultErr(t, s.MemsetAsync(arrays[i].Ptr(), byte(r), size), "MemsetAsync") {
									return
								}
								if err := pending.Queued(dev, s, func() error { finished.Add(1); return nil }, arrays[i]); !faultErr(t, err, "Queued") {
									return
								}
								queued.Add(1)
							}
							faultErr(t, s.Synchronize(), "Synchronize")
						}()
						go func() { // a consumer: exports of the next array
							defer wg.Done()
							a := arrays[(i+1)%workers]
							for range rounds {
								_, err := pending.ExportStream(a)
								faultErr(t, err, "ExportStream")
								faultErr(t, pending.WaitOn(a, driver.LegacyDefaultStream), "WaitOn")
								faultErr(t, pending.Wait(a), "Wait")
								faultErr(t, pending.Reap(), "Reap")
							}
						}()
					}
					wg.Wait()
					for pending.Len() > 0 {
						faultErr(t, pending.Reap(), "Reap")
						if dev.Fault() != nil {
							require.Zero(t, pending.Len(), "after the fault Reap forgets it all")
						}
						time.Sleep(100 * time.Microsecond)
					}
				})
				assert.Equal(t, queued.Load(), finished.Load(), "every done ran once")
				for _, a := range arrays {
					faultErr(t, a.Free(), "Free")
				}
				require.NoError(t, dev.Close())
				assert.Zero(t, dev.Ledger().Current(accounting.Device))
			})
		}
	}
}
