//go:build cgo

package main

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/transfer"
)

// streamEntry is a stream the library made for C (cuarray_stream_new).
type streamEntry struct {
	dev device.Device
	s   device.Stream
}

// newStream makes a stream on a device and returns its handle and the
// stream's own handle (a CUstream on CUDA), the one the async calls, CAI's
// "stream" and DLPack's stream argument carry.
func newStream(dev uint64) (uint64, uintptr, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, 0, err
	}
	if d == nil {
		return 0, 0, fmt.Errorf("stream: no device: %w", errHandle)
	}
	s, err := d.NewStream()
	if err != nil {
		return 0, 0, err
	}
	return register(&streamEntry{dev: d, s: s}), s.Handle(), nil
}

func streamOf(h uint64) (*streamEntry, error) {
	v, err := valueOf(h)
	if err != nil {
		return nil, err
	}
	s, ok := v.(*streamEntry)
	if !ok {
		return nil, fmt.Errorf("handle %d is not a stream: %w", h, errHandle)
	}
	return s, nil
}

// syncStream waits for the stream's work, then forgets the pending work
// that it completed.
func syncStream(h uint64) error {
	s, err := streamOf(h)
	if err != nil {
		return err
	}
	err = errors.Join(s.s.Synchronize(), pending.Reap())
	publish()
	return err
}

// releaseStream waits for the stream's work and destroys it.
func releaseStream(h uint64) error {
	s, err := streamOf(h)
	if err != nil {
		return err
	}
	if _, err := take(h); err != nil {
		return err // another thread released it first
	}
	// Memory that DLPack consumers let go of goes back first: an array
	// from cuarray_empty_async is freed in its stream's order.
	_ = reapKeeps()
	err = errors.Join(s.s.Close(), pending.Reap())
	publish()
	return err
}

// holdStream holds a stream of the emulated device at this point, as a long
// kernel would on a GPU, until the returned handle is resumed: how tests
// check from C or Python that a consumer waits for pending work.
func holdStream(h uint64) (uint64, error) {
	s, err := streamOf(h)
	if err != nil {
		return 0, err
	}
	resume, err := sim.Pause(s.s)
	if err != nil {
		return 0, fmt.Errorf("stream hold (sim streams only): %w", err)
	}
	return register(resume), nil
}

// resumeStream lets a held stream go on.
func resumeStream(h uint64) error {
	v, err := valueOf(h)
	if err != nil {
		return err
	}
	resume, ok := v.(func())
	if !ok {
		return fmt.Errorf("handle %d is not a held stream: %w", h, errHandle)
	}
	if _, err := take(h); err != nil {
		return err
	}
	resume()
	return nil
}

// copyAsync queues a copy of src into dst on the stream with handle
// stream (of the source's device: a cuarray stream's, another library's
// CUstream, or 1 and 2 for the default streams) and returns without
// waiting. The stream first waits, on the device, for the pending work
// on both arrays' memory; the copy is then pending work on it, which
// exports and synchronous calls of either array wait for. The arrays must
// stay alive until it is done (releasing one waits for it).
func copyAsync(dst, src uint64, stream uintptr) error {
	defer publish()
	d, err := live(dst)
	if err != nil {
		return err
	}
	s, err := live(src)
	if err != nil {
		return err
	}
	dev := s.dev
	if dev == nil {
		dev = d.dev
	}
	if dev == nil {
		return fmt.Errorf("copy async: host memory with no device has no stream: %w", devarray.ErrNoBackend)
	}
	if stream == 0 {
		return fmt.Errorf("copy async: stream 0 is ambiguous (1 is the legacy default stream): %w", device.ErrInvalidValue)
	}
	c, err := copierOf(dev)
	if err != nil {
		return err
	}
	for _, a := range []*devarray.DevArray{d.arr, s.arr} {
		if err := pending.WaitOn(a, stream); err != nil {
			return err
		}
	}
	ext, err := dev.ExternalStream(stream)
	if err != nil {
		return err
	}
	op, err := c.CopyAsync(ext, transfer.Dev(d.arr), transfer.Dev(s.arr))
	if err != nil {
		return errors.Join(err, ext.Close())
	}
	if ext.Handle() != stream {
		// The device stands in a stream of its own for a default stream
		// whose work it runs synchronously (sim): so does this copy.
		return errors.Join(op.Wait(), ext.Close())
	}
	done := func() error {
		over, err := op.Done()
		if err != nil || !over {
			// Pending runs done once the copy is over, or once the query
			// of its event failed (a sticky fault: an illegal address).
			// An op that does not see itself done then (transfer's Done
			// before e932db1 left one whose event query failed unfinished)
			// would hold both arrays for ever: Wait ends it (after such a
			// fault its stream's synchronize fails at once).
			err = errors.Join(err, op.Wait())
		}
		return errors.Join(err, ext.Close())
	}
	if err := pending.Queued(dev, ext, done, d.arr, s.arr); err != nil {
		return errors.Join(err, op.Wait(), ext.Close())
	}
	return nil
}
