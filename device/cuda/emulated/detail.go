//go:build cuda && cudaemu && linux

package emulated

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cuarray/cuarray/device/ptx"
)

// A driver call returns a number; what the interpreter knows of a kernel
// that faulted or was refused (its name, PTX line, block, thread, address,
// argument) goes to the caller beside it, for the cuda backend to put in
// the error it returns (Detail). A GPU's driver says no more than the
// number.

// callDetail is what the interpreter said of the result of a driver call
// on one OS thread.
type callDetail struct {
	r    cuResult
	text string
	done atomic.Bool // the call that noted it has returned
}

var (
	details      sync.Map     // thread id → *callDetail
	detailsNoted atomic.Int64 // entries in details, so that result skips the map while there are none
)

// noteKernelDetail notes, for the driver call in progress on the calling
// thread, the report of the kernel fault err carries, if any: the call
// returns r for it.
func noteKernelDetail(r cuResult, err error) {
	var f *ptx.Fault
	if r == success || !errors.As(err, &f) {
		return
	}
	if _, loaded := details.Swap(syscall.Gettid(), &callDetail{r: r, text: f.Error()}); !loaded {
		detailsNoted.Add(1)
	}
}

// settleDetail runs as a driver call on the calling thread returns r: a
// detail noted during the call for r is kept for the caller; any other,
// noted before, is dropped.
func settleDetail(r cuResult) {
	if detailsNoted.Load() == 0 {
		return
	}
	tid := syscall.Gettid()
	v, ok := details.Load(tid)
	if !ok {
		return
	}
	if d := v.(*callDetail); !d.done.Load() && d.r == r {
		d.done.Store(true)
		return
	}
	if details.CompareAndDelete(tid, v) {
		detailsNoted.Add(-1)
	}
}

// faultReport is the report of the kernel fault that spoiled a device.
type faultReport struct {
	r    cuResult
	text string
}

// noteFault records the report of the kernel fault that spoils d with r
// (the first fault wins).
func (d *device) noteFault(r cuResult, text string) {
	d.report.CompareAndSwap(nil, &faultReport{r: r, text: text})
}

// Detail returns what the emulated driver knows of result code, which
// the last driver call on the calling OS thread returned: the report of
// the kernel that faulted or was refused (kernel, PTX line, block,
// thread, address, the argument it broke), or "" when there is none. A
// sticky result of the current context's device is its first kernel
// fault's, for every call that returns it.
func Detail(code int) string {
	r := cuResult(code)
	if r == success {
		return ""
	}
	if detailsNoted.Load() != 0 {
		tid := syscall.Gettid()
		if v, ok := details.Load(tid); ok {
			if d := v.(*callDetail); d.done.Load() && d.r == r && details.CompareAndDelete(tid, v) {
				detailsNoted.Add(-1)
				return d.text
			}
		}
	}
	if !drv.ready() {
		return ""
	}
	if c := drv.currentContext(); c != nil {
		if f := c.dev.report.Load(); f != nil && f.r == r {
			return f.text
		}
	}
	return ""
}
