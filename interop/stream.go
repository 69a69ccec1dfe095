package interop

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// WaitStream applies the CUDA Array Interface's stream rule: work on the
// consumer stream waits until the producer's stream (a handle from a CAI
// "stream" or a DLPack exchange) has passed everything enqueued on it so
// far. The wait is on the device, without blocking the caller; with a nil
// consumer the caller itself waits. Producer 0 means the producer gave no
// stream and there is nothing to wait for. Producer 2, CUDA's per-thread
// default stream, is the stream of the OS thread WaitStream runs on: call
// it on the producer's thread, from a goroutine locked to it
// (runtime.LockOSThread), as libcuarray's entry points run on their
// caller's thread.
func WaitStream(dev driver.Device, producer uintptr, consumer driver.Stream) error {
	if producer == 0 {
		return nil
	}
	ext, err := dev.ExternalStream(producer)
	if err != nil {
		return fmt.Errorf("interop: wait on producer stream: %w", err)
	}
	ev, err := dev.NewEvent()
	if err != nil {
		return errors.Join(fmt.Errorf("interop: wait on producer stream: %w", err), ext.Close())
	}
	err = ext.Record(ev)
	if err == nil && consumer != nil {
		err = consumer.WaitEvent(ev)
	} else if err == nil {
		err = ev.Synchronize()
	}
	// An event may be released while a stream still waits on it.
	if err := errors.Join(err, ev.Close(), ext.Close()); err != nil {
		return fmt.Errorf("interop: wait on producer stream %#x: %w", producer, err)
	}
	return nil
}

// ImportCAIOn is ImportCAI followed by the stream rule: the returned array
// may be used on consumer (or, with a nil consumer, from the host) at once,
// because consumer waits for the producer's stream first.
func ImportCAIOn(dev driver.Device, consumer driver.Stream, m map[string]any, opts ...devarray.WrapOption) (*devarray.DevArray, error) {
	a, stream, err := ImportCAI(dev, m, opts...)
	if err != nil {
		return nil, err
	}
	if err := WaitStream(dev, stream, consumer); err != nil {
		return nil, errors.Join(err, a.Free())
	}
	return a, nil
}
