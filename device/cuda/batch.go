//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// contextSwitches counts the contexts this package has made current, on
// any thread (callAlways). A batch's calls skip the switch while it has
// not moved since the batch made its context current: the batch's OS
// thread is locked to its goroutine, so only that goroutine's own calls
// can have switched that thread's context meanwhile, and each of those
// counts here. A switch on another thread also moves it; the batch then
// switches again, which costs a call and is never wrong.
var contextSwitches atomic.Uint64

// batchStream is a stream's view inside Batch: its copies and records are
// queued with the context the batch made current (call).
type batchStream struct {
	*stream
	mark uint64 // contextSwitches just after the batch's context became current
}

var _ driver.Batcher = (*stream)(nil)

// Batch runs f with a view of the stream whose copies (HtoD, DtoH, DtoD)
// and event records share one cuCtxSetCurrent: the device's context is
// made current once, on an OS thread locked for f's duration. The view is
// for f's goroutine only (driver.Batcher).
func (s *stream) Batch(f func(driver.Stream) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := &batchStream{stream: s}
	if err := s.d.call(func() error { b.mark = contextSwitches.Load(); return nil }); err != nil {
		return fmt.Errorf("cuda: batch: %w", err)
	}
	return f(b)
}

// call runs f with the batch's context current: at once while no call of
// this package has switched a context since the batch's, else after
// making it current again.
func (b *batchStream) call(f func() error) error {
	if contextSwitches.Load() != b.mark {
		return b.d.call(func() error { b.mark = contextSwitches.Load(); return f() })
	}
	if b.d.isClosed.Load() {
		return fmt.Errorf("device %v: %w", b.d.DeviceID(), driver.ErrClosed)
	}
	return inContext(f())
}

func (b *batchStream) CopyHtoDAsync(dst devarray.Ptr, src []byte) error {
	return b.copyHtoDAsync(b.call, dst, src)
}

func (b *batchStream) CopyDtoHAsync(dst []byte, src devarray.Ptr) error {
	return b.copyDtoHAsync(b.call, dst, src)
}

func (b *batchStream) CopyDtoDAsync(dst, src devarray.Ptr, n int64) error {
	return b.copyDtoDAsync(b.call, dst, src, n)
}

func (b *batchStream) Record(e driver.Event) error { return b.record(b.call, e) }

// Batch inside a batch runs f with the same view.
func (b *batchStream) Batch(f func(driver.Stream) error) error { return f(b) }

// streamOf returns the backend's stream behind s, a stream or a batch's
// view of one, or false.
func streamOf(s driver.Stream) (*stream, bool) {
	switch v := s.(type) {
	case *stream:
		return v, true
	case *batchStream:
		return v.stream, true
	}
	return nil, false
}
