package transfer

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// The parts a chunk's host copy is cut into, one for each worker at a time.
const (
	minPart   = 64 << 10 // the least a part moves: less costs more in goroutine hand-offs than it saves
	partAlign = 4 << 10  // parts begin on multiples of it from the chunk's start, so no two write one cache line
)

// pipeline is one staged copy through the ring: n packed bytes cut into
// chunks of size bytes, chunk ci passing through slot ci mod S of the
// ring's S slots, its DMA on stream ci mod len(streams) (the ring's
// streams, or the one stream an async copy is queued on).
//
// The workers copy every chunk's bytes together: each chunk is cut into
// parts (partsOf), the workers take the parts in order, chunk by chunk,
// from one counter, and whoever copies a chunk's last part queues the DMA
// that comes next. Towards the device (HtoD) that is the chunk's own DMA:
// it starts once that one chunk is gathered, and the workers gather the
// next chunks while it runs, waiting only for a slot whose DMA has not
// completed. From the device (DtoH), the DMAs of the first S chunks are
// queued at once; the workers scatter a chunk once its DMA has completed,
// while the DMAs of the next chunks run, and the last part of chunk ci
// frees its slot for the DMA of chunk ci+S. A worker that is late takes
// fewer parts, so the one that queues a DMA falls behind no one.
type pipeline struct {
	dev      driver.Device
	led      *accounting.Ledger
	r        *ring
	streams  []driver.Stream // the DMAs' streams
	d        devarray.Ptr    // the device's packed bytes
	host     hostLayout
	toDevice bool
	n, size  int64
	nchunks  int
	workers  int // the most parts a chunk is cut into
	chunks   []chunkState
	next     atomic.Int64 // the next part to take, counting over the chunks in order
	t0       time.Time    // chunkState.start counts from it
	trace    stageTrace
	queueMu  sync.Mutex // held by finish while it queues a DMA

	stop     chan struct{} // closed on the first failure
	stopOnce sync.Once
	errMu    sync.Mutex
	errs     []error
	traced   sync.WaitGroup // the goroutines of traceDone
}

// chunkState is what the workers share about one chunk.
type chunkState struct {
	// queued is closed once the chunk's DMA and the record of its slot's
	// event after it are queued, or queueing failed.
	queued chan struct{}
	// ready waits for the slot's event: HtoD, the DMA of chunk ci-S, so
	// that the slot can be written; DtoH, the chunk's own DMA, so that
	// the slot can be read. The first worker to need it waits; readyErr
	// is what it got.
	ready    sync.Once
	readyErr error
	left     atomic.Int64 // the chunk's parts not yet copied
	start    atomic.Int64 // when its first part began: nanoseconds since t0, plus one; 0 before
}

// partsOf cuts a chunk of m bytes for the given number of workers: into
// count parts of per bytes, the last one shorter, each at least minPart
// and a multiple of partAlign but the last.
func partsOf(m int64, workers int) (count int, per int64) {
	if m <= 0 {
		return 0, 0
	}
	per = (m + int64(workers) - 1) / int64(max(workers, 1))
	per = max((per+partAlign-1)/partAlign*partAlign, minPart)
	return int((m + per - 1) / per), per
}

// newPipeline prepares a staged copy of n bytes in chunks of size bytes
// on at most workers goroutines.
func newPipeline(c *Copier, r *ring, streams []driver.Stream, d devarray.Ptr, host hostLayout, toDevice bool, n, size int64, workers int) *pipeline {
	p := &pipeline{dev: c.dev, led: c.dev.Ledger(), r: r, streams: streams, d: d, host: host, toDevice: toDevice, n: n, size: size,
		nchunks: int((n + size - 1) / size), workers: max(workers, 1), t0: time.Now(), trace: c.trace, stop: make(chan struct{})}
	p.chunks = make([]chunkState, p.nchunks)
	for ci := range p.chunks {
		_, m := p.bounds(ci)
		count, _ := partsOf(m, p.workers)
		p.chunks[ci].queued = make(chan struct{})
		p.chunks[ci].left.Store(int64(count))
	}
	return p
}

// bounds returns where chunk ci begins in the packed bytes, and its length.
func (p *pipeline) bounds(ci int) (lo, m int64) {
	lo = int64(ci) * p.size
	return lo, min(p.size, p.n-lo)
}

// goroutines returns how many goroutines the copy runs on: the parts of a
// whole chunk, no more.
func (p *pipeline) goroutines() int {
	count, _ := partsOf(min(p.size, p.n), p.workers)
	return count
}

// run copies the chunks: DtoH, it queues the first DMAs; then it works
// on this goroutine and goroutines()-1 more until every part is copied
// or the copy has failed. It returns once every worker has.
func (p *pipeline) run() {
	if !p.toDevice {
		for ci := range min(len(p.r.slots), p.nchunks) {
			p.queue(ci)
		}
	}
	var wg sync.WaitGroup
	for range p.goroutines() - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work()
		}()
	}
	p.work()
	wg.Wait()
}

// work takes parts in order and copies them until none is left or the
// copy has failed.
func (p *pipeline) work() {
	full, _ := partsOf(min(p.size, p.n), p.workers)
	for {
		k := p.next.Add(1) - 1
		ci, part := int(k/int64(full)), int(k%int64(full))
		if ci >= p.nchunks {
			return
		}
		lo, m := p.bounds(ci)
		count, per := partsOf(m, p.workers)
		if part >= count { // past the parts of a short last chunk
			return
		}
		if !p.ready(ci) {
			return
		}
		cs := &p.chunks[ci]
		if cs.start.CompareAndSwap(0, int64(time.Since(p.t0))+1) && p.trace != nil {
			p.trace(ci, stepHostStart)
		}
		off := int64(part) * per
		b := p.r.slots[ci%len(p.r.slots)].Bytes[off:min(off+per, m)]
		if p.toDevice {
			p.host.gather(b, lo+off)
		} else {
			p.host.scatter(b, lo+off)
		}
		if cs.left.Add(-1) == 0 {
			p.finish(ci, m)
		}
	}
}

// ready waits until chunk ci's slot may be used (see chunkState.ready)
// and reports whether it may, false once the copy has failed.
func (p *pipeline) ready(ci int) bool {
	wait := ci // DtoH: the chunk's own DMA
	if p.toDevice {
		wait = ci - len(p.r.slots) // HtoD: the slot's last DMA
		if wait < 0 {
			return !p.stopped() // a copy begins with every slot free (stage)
		}
	}
	select {
	case <-p.chunks[wait].queued:
	case <-p.stop:
		return false
	}
	cs := &p.chunks[ci]
	cs.ready.Do(func() {
		cs.readyErr = p.r.events[ci%len(p.r.slots)].Synchronize()
		if cs.readyErr != nil {
			p.fail(fmt.Errorf("chunk %d: %w", wait, cs.readyErr))
		}
	})
	return cs.readyErr == nil && !p.stopped()
}

// finish follows the last part of chunk ci: it counts the chunk's host
// copy in the ledger, with the time from its first part's start, and
// queues the DMA that was waiting for it. DMAs are queued one at a time:
// the chunks whose host copies end in one order have their DMAs queued
// in that order.
func (p *pipeline) finish(ci int, m int64) {
	cs := &p.chunks[ci]
	took := time.Since(p.t0) - time.Duration(cs.start.Load()-1)
	p.led.RecordCopy(accounting.HtoH, accounting.PathStaged, m, took)
	p.queueMu.Lock()
	defer p.queueMu.Unlock()
	if p.trace != nil {
		p.trace(ci, stepHostEnd)
	}
	switch {
	case p.toDevice:
		p.queue(ci)
	case ci+len(p.r.slots) < p.nchunks:
		p.queue(ci + len(p.r.slots))
	}
}

// queue queues chunk ci's DMA and records its slot's event after it,
// under one switch of the thread's context (batched).
func (p *pipeline) queue(ci int) {
	defer close(p.chunks[ci].queued)
	if p.stopped() {
		return
	}
	lo, m := p.bounds(ci)
	st, ev := p.streams[ci%len(p.streams)], p.r.events[ci%len(p.r.slots)]
	slot := p.r.slots[ci%len(p.r.slots)].Bytes[:m]
	err := batched(st, func(bs driver.Stream) error {
		var err error
		if p.toDevice {
			err = bs.CopyHtoDAsync(p.d+devarray.Ptr(lo), slot)
		} else {
			err = bs.CopyDtoHAsync(slot, p.d+devarray.Ptr(lo))
		}
		if err != nil {
			return err
		}
		return bs.Record(ev)
	})
	if err == nil && p.trace != nil {
		p.trace(ci, stepDMAQueued)
		err = p.traceDone(ci, st)
	}
	if err != nil {
		p.fail(fmt.Errorf("chunk %d: %w", ci, err))
	}
}

// wait waits until every DMA the copy queued has completed, so that every
// slot is free for the next copy, through the events recorded after them,
// which report the errors of their streams' work before them
// ("cuEventSynchronize ... may also return error codes from previous,
// asynchronous launches") and need no context switch. DtoH, each chunk's
// event was waited for before its scatter (ready). HtoD, the last DMA
// through each slot the copy used may still run: its slot's event is
// waited for. A caller's stream may carry work queued after the copy's
// DMAs, which is not waited for. After a failure, which may have left a
// DMA without its record, the streams that carried a chunk are
// synchronized instead (the ring's others carried none of this copy's
// work).
func (p *pipeline) wait(failed bool) error {
	var errs []error
	if failed {
		for _, s := range p.streamsUsed() {
			errs = append(errs, s.Synchronize())
		}
		return errors.Join(errs...)
	}
	if p.toDevice {
		for i := range min(p.nchunks, len(p.r.slots)) {
			errs = append(errs, p.r.events[i].Synchronize())
		}
	}
	return errors.Join(errs...)
}

// streamsUsed returns the ring's streams that carried this copy's DMAs.
func (p *pipeline) streamsUsed() []driver.Stream {
	return p.streams[:min(p.nchunks, len(p.streams))]
}

// fail keeps err and stops the workers.
func (p *pipeline) fail(err error) {
	p.errMu.Lock()
	p.errs = append(p.errs, err)
	p.errMu.Unlock()
	p.stopOnce.Do(func() { close(p.stop) })
}

func (p *pipeline) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// err returns the copy's errors, once its workers and traceDone's
// goroutines have returned.
func (p *pipeline) err() error {
	p.traced.Wait()
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return errors.Join(p.errs...)
}
