//go:build cuda

package conformance

import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Gate holds a stream at a point (a host function, cuLaunchHostFunc, that
// waits) until Release: how a test keeps device work queued, on a GPU as
// on the emulated driver, to see whether a call waits for it.
type Gate struct {
	id      int
	open    chan struct{}
	entered chan struct{} // closed when its host function starts
	once    sync.Once
}

var (
	gates  sync.Map // id → *Gate
	lastID atomic.Int64
)

// NewGate closes a gate on stream s: work queued on s after it waits until Release.
func NewGate(s uintptr) (*Gate, int) {
	g := &Gate{id: int(lastID.Add(1)), open: make(chan struct{}), entered: make(chan struct{})}
	gates.Store(g.id, g)
	if c := GateStream(s, g.id); c != Success {
		gates.Delete(g.id)
		return nil, c
	}
	return g, Success
}

// Entered returns a channel closed once the gate's host function runs:
// from then on the stream is held, and the driver's host function worker
// is busy with it.
func (g *Gate) Entered() <-chan struct{} { return g.entered }

// Release lets the stream go on. Releasing twice is harmless.
func (g *Gate) Release() { g.once.Do(func() { close(g.open) }) }

//export cuarrayConformanceGate
func cuarrayConformanceGate(id unsafe.Pointer) {
	if g, ok := gates.Load(int(uintptr(id))); ok {
		close(g.(*Gate).entered)
		<-g.(*Gate).open
		gates.Delete(int(uintptr(id)))
	}
}
