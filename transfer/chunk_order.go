package transfer

import (
	"errors"
	"sync"
)

// chunkOrder makes the staged path's goroutines scatter their chunks one
// after another in chunk order, for a host destination whose elements may
// share memory: there the chunks write the same bytes, and the last
// element in C order must win, as in a plain loop. A nil *chunkOrder
// orders nothing (the common, disjoint case keeps its parallel scatters).
//
// The goroutine of chunk ci handles its earlier chunks first, and chunk
// ci-1's goroutine likewise, so waiting for ci-1 always ends: in a scatter
// or in fail.
type chunkOrder struct {
	mu     sync.Mutex
	cond   sync.Cond
	next   int // the chunk whose scatter may run now
	failed bool
}

func newChunkOrder() *chunkOrder {
	o := &chunkOrder{}
	o.cond.L = &o.mu
	return o
}

// chunkTurn is one chunk's place in a chunkOrder.
type chunkTurn struct {
	o  *chunkOrder
	ci int
}

// turn returns chunk ci's place in o.
func (o *chunkOrder) turn(ci int) chunkTurn { return chunkTurn{o: o, ci: ci} }

// fail wakes every chunk waiting for its turn, which then gives up: a
// chunk before it will never be scattered.
func (o *chunkOrder) fail() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.failed = true
	o.mu.Unlock()
	o.cond.Broadcast()
}

// errOtherChunkFailed is a chunk's error when it gave up its turn because
// another chunk failed (whose own error says why).
var errOtherChunkFailed = errors.New("not scattered: another chunk failed")

// begin waits until every chunk before this one has been scattered and
// reports true, or false when one of them failed.
func (t chunkTurn) begin() bool {
	o := t.o
	if o == nil {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.next != t.ci && !o.failed {
		o.cond.Wait()
	}
	return !o.failed
}

// end passes the turn to the next chunk.
func (t chunkTurn) end() {
	o := t.o
	if o == nil {
		return
	}
	o.mu.Lock()
	o.next++
	o.mu.Unlock()
	o.cond.Broadcast()
}
