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
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cuarray/cuarray/device/driver"
)

var (
	_ driver.Holder        = (*stream)(nil)
	_ driver.ReachedHolder = (*stream)(nil)
	_ driver.FailingHolder = (*stream)(nil)
)

// holdPoll is how often a hold not yet reached asks the driver whether
// its stream has failed (cuStreamQuery): after an error in the context
// the hold's host function is never called.
const holdPoll = 10 * time.Millisecond

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
	reached, _, resume, err = s.HoldFailing()
	return reached, resume, err
}

// HoldFailing is HoldReached, and failed receives the stream's error when
// the stream fails before the hold is reached (driver.FailingHolder): "in
// contrast to cuStreamAddCallback, the function will not be called in the
// event of an error in the CUDA context" (cuLaunchHostFunc), so after a
// sticky error the hold is never reached. Until it is reached, resumed or
// the stream closed, a goroutine asks the driver every holdPoll whether
// the stream has failed.
func (s *stream) HoldFailing() (reached <-chan struct{}, failed <-chan error, resume func(), err error) {
	id := lastHold.Add(1)
	g := &holdGate{reached: make(chan struct{}), open: make(chan struct{})}
	holds.Store(id, g)
	err = s.enqueue("hold", func() error { return check(code(C.cuarray_hold(cstream(s.s), C.uintptr_t(id)))) })
	if err != nil {
		holds.Delete(id)
		return nil, nil, nil, fmt.Errorf("cuda: hold a stream: %w", err)
	}
	fail := make(chan error, 1)
	go s.watchHold(id, g, fail)
	var once sync.Once
	return g.reached, fail, func() { once.Do(func() { close(g.open) }) }, nil
}

// watchHold sends on fail the error of the stream once it has failed
// before hold id is reached; it returns once the hold is reached or
// resumed, or the stream is closed. A failed hold's gate is forgotten:
// its host function will never run.
func (s *stream) watchHold(id uintptr, g *holdGate, fail chan<- error) {
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		select {
		case <-g.reached:
			return
		case <-g.open:
			return
		case <-tick.C:
		}
		err := s.enqueue("hold: query the stream", func() error { return check(code(C.cuStreamQuery(cstream(s.s)))) })
		switch {
		case err == nil, errors.Is(err, driver.ErrNotReady):
			continue
		case errors.Is(err, driver.ErrClosed):
			return
		case errors.Is(err, driver.ErrContextFailed):
			holds.Delete(id)
			fail <- fmt.Errorf("cuda: a held stream failed before its hold, whose host function will never run: %w", err)
			return
		}
	}
}

//export cuarrayHoldWait
func cuarrayHoldWait(id C.uintptr_t) {
	if g, ok := holds.Load(uintptr(id)); ok {
		close(g.(*holdGate).reached)
		<-g.(*holdGate).open
		holds.Delete(uintptr(id))
	}
}
