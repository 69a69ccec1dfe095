//go:build cuda && cudaemu && linux

package cuda

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// openSecond opens cuda:1, or skips where the emulated driver has one
// device (make cuda-emu-test runs it with two).
func openSecond(t *testing.T) *Device {
	t.Helper()
	d, err := Open(1)
	if err != nil {
		t.Skipf("needs a second device (CUARRAY_EMULATED_DRIVER=devices=2): %v", err)
	}
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// batchRig is a device's stream, page-locked source and device memory of
// n bytes, and an event, for a batch's copy and record.
type batchRig struct {
	d   *Device
	s   driver.Stream
	src *driver.HostMem
	dst devarray.Ptr
	ev  driver.Event
}

func newBatchRig(t *testing.T, d *Device, n int) *batchRig {
	t.Helper()
	s, err := d.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	src, err := d.HostAlloc(int64(n), 0)
	require.NoError(t, err)
	t.Cleanup(func() { d.HostFree(src) })
	_, err = rand.Read(src.Bytes)
	require.NoError(t, err)
	p, err := d.Malloc(int64(n))
	require.NoError(t, err)
	t.Cleanup(func() { d.Free(p) })
	ev, err := d.NewEvent()
	require.NoError(t, err)
	t.Cleanup(func() { ev.Close() })
	return &batchRig{d: d, s: s, src: src, dst: p, ev: ev}
}

// check reads the device memory back and compares it with the source.
func (r *batchRig) check(t *testing.T) {
	t.Helper()
	back := make([]byte, len(r.src.Bytes))
	require.NoError(t, r.d.CopyDtoH(back, r.dst))
	assert.True(t, bytes.Equal(r.src.Bytes, back), "the copy's bytes on %v", r.d.DeviceID())
}

// Inside a batch, the view's copy and record share one cuCtxSetCurrent;
// a call of the backend for another device in between makes that
// device's context current on the batch's thread, and the view's next call
// makes its own current again (the emulated driver refuses a stream of
// another context, so a call in the wrong one fails).
func TestBatchSwitchesBackAfterAnotherDevicesCall(t *testing.T) {
	d0 := open(t)
	d1 := openSecond(t)
	const n = 4 << 10
	r0, r1 := newBatchRig(t, d0, n), newBatchRig(t, d1, n)
	before := emulated.Calls()
	err := r0.s.(driver.Batcher).Batch(func(v driver.Stream) error {
		if err := v.CopyHtoDAsync(r0.dst, r0.src.Bytes); err != nil {
			return err
		}
		if err := v.Record(r0.ev); err != nil {
			return err
		}
		if err := r1.s.CopyHtoDAsync(r1.dst, r1.src.Bytes); err != nil { // device 1's context, on this thread
			return err
		}
		return v.Record(r0.ev) // device 0's again
	})
	require.NoError(t, err)
	after := emulated.Calls()
	assert.Equal(t, int64(3), after["cuCtxSetCurrent"]-before["cuCtxSetCurrent"],
		"one switch for the batch's first copy and record, one for device 1's copy, one back")
	require.NoError(t, r0.ev.Synchronize())
	require.NoError(t, r1.s.Synchronize())
	r0.check(t)
	r1.check(t)
}

// Goroutines batch copies and records on two devices at once, each on
// threads the others' switches also move: every copy lands, on its own
// device, whatever thread ran it.
func TestBatchesOnTwoDevicesConcurrently(t *testing.T) {
	devs := []*Device{open(t), openSecond(t)}
	const n, workers, rounds = 4 << 10, 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(devs))
	for w := range workers * len(devs) {
		r := newBatchRig(t, devs[w%len(devs)], n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				r.src.Bytes[0] = byte(i) // a fresh first byte each round
				err := r.s.(driver.Batcher).Batch(func(v driver.Stream) error {
					if err := v.CopyHtoDAsync(r.dst, r.src.Bytes); err != nil {
						return err
					}
					return v.Record(r.ev)
				})
				if err == nil {
					err = r.ev.Synchronize()
				}
				if err == nil {
					back := make([]byte, n)
					if err = r.d.CopyDtoH(back, r.dst); err == nil && !bytes.Equal(back, r.src.Bytes) {
						err = fmt.Errorf("round %d on %v: the bytes differ", i, r.d.DeviceID())
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}
