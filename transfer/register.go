package transfer

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
)

// DefaultRegisterBytes is the default bound on the bytes a Copier keeps
// registered (WithRegisterCache): page-locked memory is taken from the
// whole system, so the default is modest.
const DefaultRegisterBytes = 1 << 30

// pageSize is the granularity at which the driver page-locks memory.
var pageSize = uintptr(os.Getpagesize())

// regCache is a Copier's registrations of its callers' Go memory: the
// registered path registers a buffer once and keeps it registered for
// later copies of the same memory, up to max bytes, evicting the least
// recently used registration (unregistering it) to make room.
//
// The lifetime rule: a registered Go buffer is pinned (runtime.Pinner,
// through pinned.Register) until it is evicted, released by
// Copier.Unregister, or the Copier is closed; until then the garbage
// collector cannot free it even if the program drops every reference.
//
// A registration the bound has no room for is loose: it lives only while
// copies use it, and a copy of memory inside it that starts meanwhile
// shares it, since the driver refuses to register bytes twice.
type regCache struct {
	mu      sync.Mutex
	max     int64
	bytes   int64
	entries []*regEntry // least recently used first
	loose   []*regEntry // registrations past the bound, in use by copies
	closed  bool        // the Copier's Close began: no registration is made or kept
}

// regEntry is one registration: the bytes handed to the driver, the
// cache's key.
type regEntry struct {
	buf       *pinned.Buffer
	addr, end uintptr // the registered bytes [addr, end)
}

func (e *regEntry) size() int64 { return int64(e.end - e.addr) }

// span returns the byte range of b.
func span(b []byte) (addr, end uintptr) {
	addr = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return addr, addr + uintptr(len(b))
}

// holds reports whether all of mem is registered in the cache.
func (r *regCache) holds(mem []byte) bool {
	if r == nil || len(mem) == 0 {
		return false
	}
	addr, end := span(mem)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.find(addr, end) >= 0
}

// find returns the index of the entry whose registered bytes hold
// [addr, end), or -1. r.mu is held.
func (r *regCache) find(addr, end uintptr) int { return findIn(r.entries, addr, end) }

// findIn returns the index of the entry of list whose registered bytes
// hold [addr, end), or -1.
func findIn(list []*regEntry, addr, end uintptr) int {
	for i, e := range list {
		if e.addr <= addr && end <= e.end {
			return i
		}
	}
	return -1
}

// acquire returns a registration that holds mem, guarded by p (it cannot
// be unregistered until p is done): the cached one, else a loose one a
// running copy uses, else a new one, registered on the copier's device
// after unregistering the registrations that share a byte with mem (the
// driver refuses bytes registered twice) and, if the new one would pass
// the bound, the least recently used ones that are not busy. fresh reports
// a new registration, took the time the registering and unregistering
// took. A registration larger than the bound, or one room cannot be made
// for, is not cached: release unregisters it after the copy.
//
// The driver registers bytes, not pages: a registration that shares a page
// but no byte with another is its own (on the H100, driver 580.159.04,
// 2026-11-27, conformance TestHostMemory: "a page registered twice, no
// byte twice" succeeded), so pieces of one buffer cut inside a page, in
// flight at once on several streams, each register. Only memory that
// shares bytes with a registration a copy is using, without being wholly
// inside it, cannot be registered until that copy is done (pinned.ErrBusy).
func (c *Copier) acquire(mem []byte, p pinned.Pending) (e *regEntry, cached, fresh bool, took time.Duration, err error) {
	r := c.reg
	addr, end := span(mem)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false, false, 0, ErrClosed
	}
	if i := r.find(addr, end); i >= 0 {
		e = r.entries[i]
		_, _ = e.buf.Busy() // forget the copies done with it (each reports its own error), so its guards do not pile up
		if err := e.buf.Guard(p); err != nil {
			return nil, false, false, 0, err
		}
		r.touch(i)
		return e, true, false, 0, nil
	}
	if i := findIn(r.loose, addr, end); i >= 0 { // registered for a copy running now: share it
		e = r.loose[i]
		if err := e.buf.Guard(p); err != nil {
			return nil, false, false, 0, err
		}
		return e, false, false, 0, nil
	}
	start := time.Now()
	if _, busy := r.releaseLocked(addr, end); len(busy) > 0 {
		return nil, false, false, 0, fmt.Errorf("memory shares bytes with a registration in use: %w", errors.Join(busy...))
	}
	n := int64(end - addr)
	for i := 0; n <= r.max && r.bytes+n > r.max && i < len(r.entries); {
		if errors.Is(r.drop(i), pinned.ErrBusy) { // try the next
			i++
		}
	}
	buf, err := pinned.Register(c.dev, mem, 0)
	if err != nil {
		return nil, false, false, 0, err
	}
	e = &regEntry{buf: buf, addr: addr, end: end}
	if err := buf.Guard(p); err != nil {
		return nil, false, false, 0, errors.Join(err, buf.Unregister())
	}
	cached = r.bytes+n <= r.max
	if cached {
		r.entries = append(r.entries, e)
		r.bytes += n
	} else {
		r.loose = append(r.loose, e)
	}
	return e, cached, true, time.Since(start), nil
}

// touch makes entry i the most recently used. r.mu is held.
func (r *regCache) touch(i int) {
	e := r.entries[i]
	copy(r.entries[i:], r.entries[i+1:])
	r.entries[len(r.entries)-1] = e
}

// drop unregisters entry i and removes it. A busy one (pinned.ErrBusy)
// stays; one whose device was closed is gone already (the device's Close
// released it) and is dropped without an error; any other error is
// returned once the entry is dropped (the buffer is unregistered all the
// same, as pinned's Free does). r.mu is held.
func (r *regCache) drop(i int) error {
	e := r.entries[i]
	err := e.buf.Unregister()
	if errors.Is(err, pinned.ErrBusy) {
		return err
	}
	r.entries = append(r.entries[:i], r.entries[i+1:]...)
	r.bytes -= e.size()
	if errors.Is(err, pinned.ErrClosed) {
		return nil
	}
	return err
}

// dropLoose unregisters loose entry i and removes it; a busy one (another
// copy shares it) stays, and the error says so. r.mu is held.
func (r *regCache) dropLoose(i int) error {
	err := r.loose[i].buf.Unregister()
	if errors.Is(err, pinned.ErrBusy) {
		return err
	}
	r.loose = append(r.loose[:i], r.loose[i+1:]...)
	if errors.Is(err, pinned.ErrClosed) {
		return nil
	}
	return err
}

// forget removes e from the cache and unregisters it: a registration made
// for a copy that failed, a loose one once a copy is done with it, or any
// once the Copier's Close began. A registration that another copy still
// uses stays: the last copy to finish with a loose one unregisters it, a
// cached one stays cached (Close releases it once it is free).
func (r *regCache) forget(e *regEntry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, o := range r.entries {
		if o == e {
			if err := r.drop(i); !errors.Is(err, pinned.ErrBusy) {
				return err
			}
			return nil
		}
	}
	for i, o := range r.loose {
		if o == e {
			if err := r.dropLoose(i); !errors.Is(err, pinned.ErrBusy) {
				return err
			}
			return nil
		}
	}
	return e.buf.Unregister() // unregistered already by a copy that shared it: nil
}

// keep keeps cached registration e for later copies once a copy is done
// with it, guarded by pend (the copy's run or Op) when there is one. Once
// the Copier's Close began it keeps nothing (false): the copy unregisters
// e itself.
func (r *regCache) keep(e *regEntry, pend pinned.Pending) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, nil
	}
	if pend != nil {
		return true, e.buf.Guard(pend) // held until the copy (an async one: its Op) is done
	}
	return true, nil
}

// release unregisters every registration that shares a byte with
// [addr, end), joining the errors of the busy ones, which stay.
func (r *regCache) release(addr, end uintptr) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	errs, busy := r.releaseLocked(addr, end)
	return errors.Join(append(errs, busy...)...)
}

// clearPartial readies pageable memory mem for a driver copy: the
// registrations that share bytes with it without holding all of it are
// unregistered, since the driver refuses a range partly page-locked
// (CUDA_ERROR_INVALID_VALUE, every cuMemcpy page says). One that holds all
// of mem stays: the driver copies wholly page-locked memory as such. A
// registration another copy is using cannot go: the error wraps
// pinned.ErrBusy.
func (r *regCache) clearPartial(mem []byte) error {
	if r == nil || len(mem) == 0 {
		return nil
	}
	addr, end := span(mem)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.find(addr, end) >= 0 || findIn(r.loose, addr, end) >= 0 {
		return nil
	}
	errs, busy := r.releaseLocked(addr, end)
	if len(busy) > 0 {
		return fmt.Errorf("memory partly page-locked by a registration a copy is using: %w", errors.Join(busy...))
	}
	return errors.Join(errs...)
}

// releaseLocked unregisters every registration that shares a byte with
// [addr, end): it returns the errors of those it unregistered, and those
// of the busy ones, which stay. r.mu is held.
func (r *regCache) releaseLocked(addr, end uintptr) (errs, busy []error) {
	for _, l := range []struct {
		list *[]*regEntry
		drop func(int) error
	}{{&r.entries, r.drop}, {&r.loose, r.dropLoose}} {
		for i := 0; i < len(*l.list); {
			if o := (*l.list)[i]; o.addr < end && addr < o.end {
				if err := l.drop(i); errors.Is(err, pinned.ErrBusy) {
					busy = append(busy, err)
					i++
				} else if err != nil {
					errs = append(errs, err)
				}
				continue
			}
			i++
		}
	}
	return errs, busy
}

// close releases every registration and makes no more: the Copier's
// Close. A registration a copy still uses (one that began before Close,
// sync or async) is released when that copy is done with it, which close
// waits for, so that no registration outlives the Copier.
func (r *regCache) close() error {
	if r == nil {
		return nil
	}
	var errs []error
	for wait := 10 * time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		r.mu.Lock()
		r.closed = true
		failed, busy := r.releaseLocked(0, ^uintptr(0))
		r.mu.Unlock()
		errs = append(errs, failed...)
		if len(busy) == 0 {
			return errors.Join(errs...)
		}
		time.Sleep(wait)
	}
}

// Registered returns the bytes the copier keeps registered for the
// registered path, and how many registrations hold them.
func (c *Copier) Registered() (bytes int64, count int) {
	if c == nil || c.reg == nil {
		return 0, 0
	}
	c.reg.mu.Lock()
	defer c.reg.mu.Unlock()
	return c.reg.bytes, len(c.reg.entries)
}

// Unregister releases the registrations the registered path keeps for
// memory that shares a byte with buf, so the garbage collector may free
// it again (a registered Go buffer is pinned until then). A registration
// an async copy still uses stays, and the error says so (pinned.ErrBusy).
// Close releases every registration.
func (c *Copier) Unregister(buf []byte) error {
	if c == nil || len(buf) == 0 {
		return nil
	}
	addr, end := span(buf)
	if err := c.reg.release(addr, end); err != nil {
		return fmt.Errorf("transfer: unregister: %w", err)
	}
	return nil
}

// runRegistered registers the host side's bytes (or finds them
// registered), then copies as the pinned path does: one driver copy.
//
// In the ledger: the backend counts the registered memory under kind
// accounting.Registered (bytes, registrations, current bytes while the
// copier keeps it) and the DMA under accounting.PathPinned, as every copy
// of page-locked memory; this path records each registration it makes as
// a copy of 0 bytes on accounting.PathRegistered in the copy's direction,
// taking the registration's time (registering, and unregistering what had
// to make room), so that path's count is the registrations made and its
// time their cost. A registration made for a copy that fails, or one the
// cache cannot keep, is unregistered before the copy returns.
//
// Pieces of one buffer in flight at once, each on its own stream, register
// each its own bytes, whether or not they share pages (acquire). Memory
// that shares bytes with a registration another copy is using, without
// being inside it, cannot be registered until that copy is done: the copy
// takes the staged path then, asked for this path or not, which copies the
// memory through page-locked buffers of its own and never hands the driver
// a range that another copy's registration partly covers; the ledger
// counts it there. So does a planner's copy whose registration the driver
// refuses for another reason (the bytes registered outside this Copier,
// the ledger's limit on registered memory), while a copy that asked for
// this path fails then; only a closed device, or one whose context has
// failed (driver.ErrContextFailed), fails either.
func (j *job) runRegistered(x *exec) error {
	_, host, toDevice := j.sides()
	dir := accounting.DtoH
	if toDevice {
		dir = accounting.HtoD
	}
	mem := host.hostAt(0)[:j.n]
	use := newRunning() // guards the registration while this copy runs
	e, cached, fresh, took, err := j.c.acquire(mem, use)
	if err != nil {
		use.end()
		// No other path can move bytes on a closed device, or on one whose
		// context has failed (every call fails until it is closed).
		busy := errors.Is(err, pinned.ErrBusy)
		if (j.opt.Path != PathAuto && !busy) || errors.Is(err, pinned.ErrClosed) || errors.Is(err, ErrClosed) || errors.Is(err, driver.ErrContextFailed) {
			return fmt.Errorf("register %s of Go memory: %w", accounting.FormatBytes(int64(len(mem))), err)
		}
		why := "its bytes are registered in part for a copy still running"
		if !busy {
			why = fmt.Sprintf("registering it was refused (%v)", err)
		}
		// The staged ring, never the direct path: the memory may be partly
		// page-locked by the other copy's registration, and a driver copy of
		// a range partly page-locked is CUDA_ERROR_INVALID_VALUE (every
		// cuMemcpy page says so; an H100 answered it here).
		instead := *j
		instead.choice = Choice{Path: PathStaged}
		if err := instead.runPath(x); err != nil {
			return fmt.Errorf("%s, so by the %v path: %w", why, instead.choice.Path, err)
		}
		return nil
	}
	if fresh {
		j.c.dev.Ledger().RecordCopy(dir, accounting.PathRegistered, 0, took)
	}
	h := host
	h.side, h.buf = InPinned, e.buf
	j2 := *j
	if toDevice {
		j2.src = h
	} else {
		j2.dst = h
	}
	err = j2.runDriver(x)
	closing := false // the Copier's Close began: it keeps nothing
	if err == nil && cached {
		kept, err := j.c.reg.keep(e, j.pend)
		if kept {
			use.end()
			return err
		}
		closing = true
	}
	if x.s != nil {
		err = errors.Join(err, x.s.Synchronize()) // the device must be done with the memory first
	}
	use.end()
	if fresh || !cached || closing {
		err = errors.Join(err, j.c.reg.forget(e))
	}
	return err
}
