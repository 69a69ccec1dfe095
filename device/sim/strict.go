package sim

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
)

// LaunchFaulting queues f on stream s (nil: the default stream) as Launch
// does, but with a GPU's consequences for a bad access: when f runs, a range
// that is not inside live memory, or an error of f that wraps
// driver.ErrContextFailed (a misaligned access, say), faults the device as
// an illegal address does on a GPU, and the fault is sticky (see FailFault).
// The emulated CUDA driver launches kernels through it.
func (d *Device) LaunchFaulting(s driver.Stream, ranges []driver.Range, f func(mem [][]byte) error) error {
	return d.launch(s, ranges, func() error {
		if err := d.deviceWork("kernel"); err != nil {
			return err
		}
		ran := false
		err := d.inspect(ranges, func(mem [][]byte) error { ran = true; return f(mem) })
		switch {
		case err == nil:
			return nil
		case !ran:
			err = fmt.Errorf("an illegal memory access was encountered: %v: %w", err, driver.ErrContextFailed)
		case !errors.Is(err, driver.ErrContextFailed):
			return err
		}
		d.fault.err.CompareAndSwap(nil, &err)
		return d.checkFault("kernel")
	})
}

// Idle reports whether stream s (a sim stream) has finished all the work
// queued on it so far. As cuStreamQuery answering done, a true answer
// orders that work before what the host does next (for the stream race
// checker).
func Idle(s driver.Stream) bool {
	st, ok := simStream(s)
	if !ok {
		return true
	}
	if st.pending.Load() != 0 {
		return false
	}
	if st.d.check != nil {
		_, pt := s.(perThreadStream)
		st.d.check.hostWaitsFor(st.lane, pt)
	}
	return true
}

// HostFunc queues f on stream s (a sim stream), as cuLaunchHostFunc does:
// f runs when the stream reaches it, after the work queued before it has
// finished or failed, and later work waits for f.
func HostFunc(s driver.Stream, f func()) error {
	st, ok := simStream(s)
	if !ok {
		return fmt.Errorf("sim: host function: not a sim stream: %w", driver.ErrInvalidValue)
	}
	return st.enqueueMarker(func() error { f(); return nil })
}

// Hold holds the stream at this point until resume (driver.Holder): Pause.
func (s *stream) Hold() (resume func(), err error) { return Pause(s) }
