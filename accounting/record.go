package accounting

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrRecording is returned by Record when the ledger is already recording.
var ErrRecording = errors.New("the ledger is already recording (close the first Recording)")

// Recording writes a ledger's allocations and frees to a writer as an
// allocation log (the format is described at ReadLog). Record starts one;
// Close stops it and flushes. A Recording is safe for concurrent use.
type Recording struct {
	l *Ledger

	mu      sync.Mutex
	w       *bufio.Writer
	cw      countWriter
	epoch   time.Time
	last    time.Duration // the time of the last event written
	allocs  uint64        // allocations written: the last one's id
	live    map[recKey]uint64
	queued  map[recKey][]uint64 // later ids at an address whose free is still on its way (rare)
	scopes  map[*Scope]uint64
	streams map[uintptr]uint64
	buf     []byte
	events  int64
	err     error
	closed  bool
}

// recKey names a live allocation: a caching allocator's block can start at
// the address of the segment it was cut from, so blocks have keys of their own.
type recKey struct {
	addr  uintptr
	kind  Kind
	block bool
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Record starts writing every allocation, free and failed allocation of
// the ledger to w, in the compact binary format that ReadLog reads: per
// event its kind, size, time, the innermost scope, the stream where a
// caching allocator says it, and an id that pairs each free with its
// allocation. An event takes 5 to 10 bytes of log (the recorded FBP run:
// 9 bytes an event, header included). Copies are not recorded. The
// ledger sees a caching allocator's segments; the blocks the program
// asked for are recorded when the allocator reports them (NoteBlockAlloc,
// NoteBlockFree, NoteSegment). Close the returned Recording to stop and
// flush; until then w must stay usable, and events are buffered (64 KiB)
// and written from whichever goroutine fills the buffer, under the
// Recording's lock. A write error stops the recording (later events are
// dropped) and Close returns it.
//
// Events are written in the order they reach the recorder. Events of one
// goroutine keep their order; events of goroutines allocating at the same
// instant can be written in another order than the ledger counted them, so
// a replay of a run whose allocations are concurrent can peak a little
// above or below the ledger. A free of an allocation made before Record is
// written with its size and no id.
//
// A ledger has one recording at a time: Record fails with ErrRecording
// while another is open. Recording costs nothing while it is off (the
// ledger checks one atomic pointer per event).
func (l *Ledger) Record(w io.Writer) (*Recording, error) {
	if l == nil || w == nil {
		return nil, fmt.Errorf("accounting: record: %w", ErrNil)
	}
	r := &Recording{l: l, cw: countWriter{w: w}, epoch: time.Now(),
		live: make(map[recKey]uint64), scopes: make(map[*Scope]uint64), streams: make(map[uintptr]uint64),
		buf: make([]byte, 0, 64)}
	r.w = bufio.NewWriterSize(&r.cw, 64<<10)
	r.buf = appendLogHeader(r.buf, l.name, r.epoch)
	if !l.rec.CompareAndSwap(nil, r) {
		return nil, ErrRecording
	}
	r.mu.Lock()
	r.write()
	r.mu.Unlock()
	return r, nil
}

// Recording returns the ledger's open recording, or nil.
func (l *Ledger) Recording() *Recording {
	if l == nil {
		return nil
	}
	return l.rec.Load()
}

// Close stops the recording and flushes what it buffered to the writer. It
// returns the first error writing met; a second Close returns the same.
// Close does not close the writer.
func (r *Recording) Close() error {
	if r == nil {
		return fmt.Errorf("accounting: close recording: %w", ErrNil)
	}
	r.l.rec.CompareAndSwap(r, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		if r.err == nil {
			r.err = r.w.Flush()
		}
	}
	if r.err != nil {
		return fmt.Errorf("accounting: recording: %w", r.err)
	}
	return nil
}

// Events returns how many events (allocations, frees, failures) were
// recorded so far.
func (r *Recording) Events() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events
}

// Bytes returns how many bytes of log reached the writer so far (Close
// flushes the rest).
func (r *Recording) Bytes() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cw.n
}

// write writes r.buf and empties it. The caller holds r.mu.
func (r *Recording) write() {
	if r.err == nil {
		_, r.err = r.w.Write(r.buf)
	}
	r.buf = r.buf[:0]
}

// open reports whether events may still be written. The caller holds r.mu.
func (r *Recording) open() bool {
	return !r.closed && r.err == nil
}

// head appends an event's tag and time, and returns the stream's number
// in the log (0: none).
func (r *Recording) head(op logOp, k Kind, stream uintptr, block bool) (streamNo uint64) {
	tag := byte(op)
	if stream != 0 {
		var ok bool
		if streamNo, ok = r.streams[stream]; !ok {
			streamNo = uint64(len(r.streams) + 1)
			r.streams[stream] = streamNo
		}
		tag |= tagStream
	}
	if block {
		tag |= tagBlock
	}
	at := time.Since(r.epoch)
	dt := max(at-r.last, 0)
	r.last += dt
	r.buf = appendTag(r.buf, tag, k)
	r.buf = appendUvarint(r.buf, uint64(dt))
	return streamNo
}

// tail appends an event's scope and stream, and writes it.
func (r *Recording) tail(scope, streamNo uint64) {
	r.buf = appendUvarint(r.buf, scope)
	if streamNo != 0 {
		r.buf = appendUvarint(r.buf, streamNo)
	}
	r.events++
	r.write()
}

// scope returns the id of the ledger's innermost scope (0: none), writing
// a scope record (and its parents') the first time it is seen.
func (r *Recording) scope(s *Scope) uint64 {
	if s == nil {
		return 0
	}
	if id, ok := r.scopes[s]; ok {
		return id
	}
	parent := r.scope(s.parent)
	id := uint64(len(r.scopes) + 1)
	r.scopes[s] = id
	r.buf = append(r.buf, byte(logScope))
	r.buf = appendUvarint(r.buf, parent)
	r.buf = appendUvarint(r.buf, uint64(len(s.name)))
	r.buf = append(r.buf, s.name...)
	r.write()
	return id
}

// alloc records an allocation of n bytes of kind k at addr.
func (r *Recording) alloc(k Kind, addr uintptr, n int64, stream uintptr, block bool) {
	top := r.l.top.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open() {
		return
	}
	scope := r.scope(top)
	s := r.head(logAlloc, k, stream, block)
	r.buf = appendUvarint(r.buf, uint64(max(n, 0)))
	r.allocs++
	key := recKey{addr, k, block}
	if _, ok := r.live[key]; ok {
		// The last allocation at addr was freed, but its free has not
		// reached the recorder yet: it pairs with the older id.
		if r.queued == nil {
			r.queued = make(map[recKey][]uint64)
		}
		r.queued[key] = append(r.queued[key], r.allocs)
	} else {
		r.live[key] = r.allocs
	}
	r.tail(scope, s)
}

// free records the free of the n-byte allocation of kind k at addr.
func (r *Recording) free(k Kind, addr uintptr, n int64, stream uintptr, block bool) {
	top := r.l.top.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open() {
		return
	}
	scope := r.scope(top)
	s := r.head(logFree, k, stream, block)
	key := recKey{addr, k, block}
	id, ok := r.live[key]
	if ok {
		if q := r.queued[key]; len(q) > 0 {
			r.live[key] = q[0]
			if len(q) == 1 {
				delete(r.queued, key)
			} else {
				r.queued[key] = q[1:]
			}
		} else {
			delete(r.live, key)
		}
		r.buf = appendUvarint(r.buf, r.allocs-id+1)
	} else {
		r.buf = appendUvarint(r.buf, 0)
		r.buf = appendUvarint(r.buf, uint64(max(n, 0)))
	}
	r.tail(scope, s)
}

// failed records an allocation of n bytes of kind k that failed.
func (r *Recording) failed(k Kind, n int64) {
	top := r.l.top.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open() {
		return
	}
	scope := r.scope(top)
	s := r.head(logFailed, k, 0, false)
	r.buf = appendUvarint(r.buf, uint64(max(n, 0)))
	r.tail(scope, s)
}

// segment marks the live allocation of kind k at addr as a caching
// allocator's segment.
func (r *Recording) segment(k Kind, addr uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open() {
		return
	}
	id, ok := r.live[recKey{addr, k, false}]
	if !ok {
		return // allocated before the recording began: its alloc is not in the log
	}
	if q := r.queued[recKey{addr, k, false}]; len(q) > 0 {
		id = q[len(q)-1] // the newest allocation at addr is the one just made
	}
	r.buf = appendTag(r.buf, byte(logSegment), k)
	r.buf = appendUvarint(r.buf, r.allocs-id+1)
	r.write()
}
