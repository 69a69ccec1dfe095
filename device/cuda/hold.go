//go:build cuda

package cuda

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdint.h>
CUresult cuarray_hold(CUstream s, uintptr_t id);
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cuarray/cuarray/device/driver"
)

var _ driver.Holder = (*stream)(nil)

// holds are the gates of held streams, by id.
var (
	holds    sync.Map // uintptr → chan struct{}
	lastHold atomic.Uintptr
)

// Hold holds the stream at this point (driver.Holder): a host function
// queued on it (cuLaunchHostFunc) waits until resume is called, and the
// stream's later work waits behind it, as behind a long kernel.
func (s *stream) Hold() (resume func(), err error) {
	id := lastHold.Add(1)
	gate := make(chan struct{})
	holds.Store(id, gate)
	err = s.enqueue("hold", func() error { return check(code(C.cuarray_hold(cstream(s.s), C.uintptr_t(id)))) })
	if err != nil {
		holds.Delete(id)
		return nil, fmt.Errorf("cuda: hold a stream: %w", err)
	}
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }, nil
}

//export cuarrayHoldWait
func cuarrayHoldWait(id C.uintptr_t) {
	if g, ok := holds.Load(uintptr(id)); ok {
		<-g.(chan struct{})
		holds.Delete(uintptr(id))
	}
}
