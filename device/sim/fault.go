package sim

import (
	"fmt"
	"sync/atomic"

	"github.com/cuarray/cuarray/device/driver"
)

// faultState emulates CUDA's sticky errors. On a GPU, device work that
// faults (an illegal address in a kernel, a launch that times out) leaves
// the context unusable: every later call returns the same error, frees and
// event queries included, and only destroying the context ends it. A
// library that panics on a failed free, waits forever on an event whose
// query fails, or retries the fault in a loop shows that bug here.
type faultState struct {
	countdown atomic.Int64          // the Nth device operation from the last arming faults
	err       atomic.Pointer[error] // the sticky error, once an operation has faulted
}

// FailFault makes the nth copy, memset or kernel from now (1 = the next)
// fault as device work that corrupts the context does on a GPU: it fails,
// and from then on every call of the device fails with an error wrapping
// driver.ErrContextFailed (and driver.ErrInjected) until Close, which
// still frees everything. 0 cancels a countdown; a fault that happened stays.
func (d *Device) FailFault(n int64) { d.fault.countdown.Store(n) }

// Fault returns the device's sticky error, nil until an operation has faulted.
func (d *Device) Fault() error {
	if p := d.fault.err.Load(); p != nil {
		return *p
	}
	return nil
}

// checkFault returns the sticky error, wrapped for operation op, if the
// device has faulted and is not closed (a closed device's calls say
// driver.ErrClosed, as they do without a fault).
func (d *Device) checkFault(op string) error {
	if err := d.Fault(); err != nil && !d.isClosed.Load() {
		return fmt.Errorf("sim: %s: %w", op, err)
	}
	return nil
}

// deviceWork is called by every copy, memset and kernel as it runs on the
// device: it fails if the device has faulted, and faults the device when
// the countdown reaches this operation.
func (d *Device) deviceWork(op string) error {
	if err := d.checkFault(op); err != nil {
		return err
	}
	if d.isClosed.Load() || !injected(&d.fault.countdown) {
		return nil
	}
	err := fmt.Errorf("an illegal memory access was encountered (injected at %s): %w: %w", op, driver.ErrContextFailed, driver.ErrInjected)
	d.fault.err.CompareAndSwap(nil, &err)
	return d.checkFault(op)
}

// LaunchMisaligned queues on stream s (nil: the default stream) a kernel
// whose access what is not aligned to its type, as a GPU runs one: the
// launch returns at once, and when the stream reaches the kernel the
// device faults as CUDA_ERROR_MISALIGNED_ADDRESS does, a sticky error
// (wrapping driver.ErrContextFailed) that every later call returns until
// Close. Kernels' Go references call it where the kernel a GPU runs would
// make such an access, so that sim fails where a GPU would.
func (d *Device) LaunchMisaligned(s driver.Stream, what string) error {
	return d.launch(s, nil, func() error {
		if err := d.checkFault("kernel"); err != nil {
			return err
		}
		err := fmt.Errorf("misaligned address (CUDA_ERROR_MISALIGNED_ADDRESS): %s: %w", what, driver.ErrContextFailed)
		d.fault.err.CompareAndSwap(nil, &err)
		return d.checkFault("kernel")
	})
}
