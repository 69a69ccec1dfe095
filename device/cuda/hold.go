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

var (
	_ driver.Holder        = (*stream)(nil)
	_ driver.ReachedHolder = (*stream)(nil)
)

// holdGate is a held stream's gate: reached closes when its host function
// starts, open when resume lets it return.
type holdGate struct {
	reached, open chan struct{}
}

// holds are the gates of held streams, by id.
var (
	holds    sync.Map // uintptr → *holdGate
	lastHold atomic.Uintptr
)

// Hold holds the stream at this point (driver.Holder): a host function
// queued on it (cuLaunchHostFunc) waits until resume is called, and the
// stream's later work waits behind it, as behind a long kernel.
func (s *stream) Hold() (resume func(), err error) {
	_, resume, err = s.HoldReached()
	return resume, err
}

// HoldReached is Hold, and reached closes once the host function runs
// (driver.ReachedHolder).
func (s *stream) HoldReached() (reached <-chan struct{}, resume func(), err error) {
	id := lastHold.Add(1)
	g := &holdGate{reached: make(chan struct{}), open: make(chan struct{})}
	holds.Store(id, g)
	err = s.enqueue("hold", func() error { return check(code(C.cuarray_hold(cstream(s.s), C.uintptr_t(id)))) })
	if err != nil {
		holds.Delete(id)
		return nil, nil, fmt.Errorf("cuda: hold a stream: %w", err)
	}
	var once sync.Once
	return g.reached, func() { once.Do(func() { close(g.open) }) }, nil
}

//export cuarrayHoldWait
func cuarrayHoldWait(id C.uintptr_t) {
	if g, ok := holds.Load(uintptr(id)); ok {
		close(g.(*holdGate).reached)
		<-g.(*holdGate).open
		holds.Delete(uintptr(id))
	}
}
