//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// memPool is a CUmemoryPool of a device: its default pool
// (cuDeviceGetDefaultMemPool) or one NewMemPool made (cuMemPoolCreate).
// The device's mu guards destroyed.
type memPool struct {
	d         *Device
	name      string
	handle    uintptr
	isDefault bool
	destroyed bool
	shared    bool // made by NewSharedMemPool: it exports (mempool_ipc.go)
}

var _ driver.MemPool = (*memPool)(nil)

// DefaultMemPool returns the device's default stream-ordered pool
// (cuDeviceGetDefaultMemPool), the one MallocAsync allocates from.
func (d *Device) DefaultMemPool() (driver.MemPool, error) {
	d.mu.Lock()
	for _, p := range d.pools {
		if p.isDefault {
			d.mu.Unlock()
			return p, nil
		}
	}
	d.mu.Unlock()
	var h uintptr
	err := d.call(func() error {
		var c int
		h, c = deviceGetDefaultMemPool(d.ordinal)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: default mem pool: %w", err)
	}
	return d.addPool(&memPool{d: d, name: "default", handle: h, isDefault: true})
}

// NewMemPool makes a stream-ordered pool of the device's memory
// (cuMemPoolCreate: pinned device memory, no IPC handle types), named
// "pool-N".
func (d *Device) NewMemPool() (driver.MemPool, error) {
	var h uintptr
	err := d.call(func() error {
		var c int
		h, c = memPoolCreate(d.ordinal)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: new mem pool: %w", err)
	}
	return d.addPool(&memPool{d: d, handle: h})
}

// addPool lists p (naming a made pool) or, when the device closed or
// another caller listed the default pool first, lets it go.
func (d *Device) addPool(p *memPool) (driver.MemPool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		if !p.isDefault {
			d.callAlways(func() error { return check(memPoolDestroy(p.handle)) })
		}
		return nil, fmt.Errorf("cuda: mem pool: %w", driver.ErrClosed)
	}
	n := 1
	for _, q := range d.pools {
		if p.isDefault && q.isDefault {
			return q, nil
		}
		if !q.isDefault {
			n++
		}
	}
	if !p.isDefault {
		p.name = fmt.Sprintf("pool-%d", n)
	}
	d.pools = append(d.pools, p)
	return p, nil
}

// MallocAsync allocates nbytes from the device's default pool in the
// stream's order (cuMemAllocAsync). The ledger counts the bytes rounded up
// to 256 under accounting.StreamOrdered.
func (s *stream) MallocAsync(nbytes int64) (devarray.Ptr, error) {
	return s.mallocAsync(nbytes, nil, "malloc async")
}

// MallocFromPoolAsync is MallocAsync from pool mp (cuMemAllocFromPoolAsync).
func (s *stream) MallocFromPoolAsync(nbytes int64, mp driver.MemPool) (devarray.Ptr, error) {
	p, ok := mp.(*memPool)
	if !ok || p.d != s.d {
		return 0, fmt.Errorf("cuda: malloc from pool async: the pool is not from this device: %w", driver.ErrInvalidValue)
	}
	return s.mallocAsync(nbytes, p, "malloc from pool async")
}

func (s *stream) mallocAsync(nbytes int64, p *memPool, op string) (devarray.Ptr, error) {
	d := s.d
	if nbytes < 0 {
		return 0, fmt.Errorf("cuda: %s %d bytes: %w", op, nbytes, driver.ErrInvalidValue)
	}
	if p != nil {
		if err := p.usable(op); err != nil {
			return 0, err
		}
	}
	size := alignUp(max(nbytes, 1))
	if err := d.ledger.Reserve(accounting.StreamOrdered, size); err != nil {
		return 0, fmt.Errorf("cuda: %s: %w", op, err)
	}
	var addr uintptr
	err := s.enqueue(op, func() error {
		var c int
		if p == nil {
			addr, c = memAllocAsync(size, cstream(s.s))
		} else {
			addr, c = memAllocFromPoolAsync(size, p.handle, cstream(s.s))
		}
		return check(c)
	})
	if err != nil {
		d.ledger.Cancel(accounting.StreamOrdered, size)
		if errors.Is(err, driver.ErrOutOfMemory) {
			return 0, fmt.Errorf("cuda: %s: %w", op, d.ledger.OutOfMemory(accounting.StreamOrdered, size, d.ledger.Current(accounting.StreamOrdered), false))
		}
		return 0, fmt.Errorf("cuda: %s %d bytes: %w", op, nbytes, err)
	}
	if !d.keepLive(func() { d.async[devarray.Ptr(addr)] = size }) {
		// Close ran meanwhile: give the memory back on the stream Close has let go of.
		d.ledger.Cancel(accounting.StreamOrdered, size)
		d.callAlways(func() error { return check(memFreeAsync(addr, cstream(s.s))) })
		return 0, fmt.Errorf("cuda: %s: %w", op, driver.ErrClosed)
	}
	d.ledger.Commit(accounting.StreamOrdered, addr, size)
	return devarray.Ptr(addr), nil
}

// FreeAsync frees memory MallocAsync or MallocFromPoolAsync returned, in
// the stream's order (cuMemFreeAsync). A pointer that is not a live
// stream-ordered allocation of this device is an error wrapping
// driver.ErrInvalidValue, and is not passed to the driver.
func (s *stream) FreeAsync(p devarray.Ptr) error {
	d := s.d
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("cuda: free async %v: %w", p, driver.ErrClosed)
	}
	size, ok := d.async[p]
	delete(d.async, p)
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("cuda: free async %v: not a live stream-ordered allocation: %w", p, driver.ErrInvalidValue)
	}
	err := s.enqueue("free async", func() error { return check(memFreeAsync(uintptr(p), cstream(s.s))) })
	if err != nil {
		if d.keepLive(func() { d.async[p] = size }) {
			return fmt.Errorf("cuda: free async %v: %w", p, err)
		}
		d.ledger.Free(accounting.StreamOrdered, uintptr(p), size)
		return fmt.Errorf("cuda: free async %v: %w", p, err)
	}
	d.ledger.Free(accounting.StreamOrdered, uintptr(p), size)
	return nil
}

// closePools frees the stream-ordered allocations still live and destroys
// the pools NewMemPool made, at Close: the streams are destroyed and the
// context synchronized, so the legacy default stream frees them.
func (d *Device) closePools(async map[devarray.Ptr]int64, pools []*memPool) error {
	if len(async) == 0 && len(pools) == 0 {
		return nil
	}
	return d.callAlways(func() error {
		var first error
		keep := func(c int) {
			if err := check(c); err != nil && first == nil {
				first = err
			}
		}
		for p, size := range async {
			keep(memFreeAsync(uintptr(p), nil))
			d.ledger.Free(accounting.StreamOrdered, uintptr(p), size)
		}
		if len(async) > 0 {
			if err := settle(); err != nil && first == nil {
				first = err
			}
		}
		for _, p := range pools {
			if !p.isDefault && !p.destroyed {
				keep(memPoolDestroy(p.handle))
			}
			p.destroyed = true
		}
		return first
	})
}

// poolStats are the pools' figures for the ledger's snapshots; a pool
// whose attributes cannot be read is left out.
func (d *Device) poolStats() []accounting.PoolStats {
	d.mu.Lock()
	pools := append([]*memPool(nil), d.pools...)
	d.mu.Unlock()
	var out []accounting.PoolStats
	for _, p := range pools {
		u, err := p.Usage()
		if err != nil {
			continue
		}
		t, err := p.ReleaseThreshold()
		if err != nil {
			continue
		}
		out = append(out, accounting.PoolStats{Name: p.name, Reserved: u.Reserved, ReservedHigh: u.ReservedHigh,
			Used: u.Used, UsedHigh: u.UsedHigh, ReleaseThreshold: t})
	}
	return out
}

// Name returns "default" or "pool-N".
func (p *memPool) Name() string { return p.name }

// Handle returns the CUmemoryPool.
func (p *memPool) Handle() uintptr { return p.handle }

// usable returns an error once the pool is destroyed or its device closed.
func (p *memPool) usable(op string) error {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	switch {
	case p.d.closed:
		return fmt.Errorf("cuda: mem pool %s: %w", op, driver.ErrClosed)
	case p.destroyed:
		return fmt.Errorf("cuda: mem pool %s: the pool was destroyed: %w", op, driver.ErrInvalidValue)
	}
	return nil
}

// attr runs f, a pool attribute call, with the device's context current.
func (p *memPool) attr(op string, f func() int) error {
	if err := p.usable(op); err != nil {
		return err
	}
	if err := p.d.call(func() error { return check(f()) }); err != nil {
		return fmt.Errorf("cuda: mem pool %s: %w", op, err)
	}
	return nil
}

func (p *memPool) SetReleaseThreshold(bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("cuda: mem pool set release threshold %d: %w", bytes, driver.ErrInvalidValue)
	}
	return p.attr("set release threshold", func() int { return memPoolSetUint64(p.handle, poolAttrReleaseThreshold, uint64(bytes)) })
}

func (p *memPool) ReleaseThreshold() (int64, error) {
	var v uint64
	err := p.attr("release threshold", func() int {
		var c int
		v, c = memPoolGetUint64(p.handle, poolAttrReleaseThreshold)
		return c
	})
	return int64(v), err
}

// reuseAttr maps a policy to its attribute.
func reuseAttr(r driver.ReusePolicy) (int, bool) {
	switch r {
	case driver.ReuseFollowEventDependencies:
		return poolAttrReuseFollowEvents, true
	case driver.ReuseAllowOpportunistic:
		return poolAttrReuseOpportunistic, true
	case driver.ReuseAllowInternalDependencies:
		return poolAttrReuseInternalDeps, true
	}
	return 0, false
}

func (p *memPool) SetReuse(r driver.ReusePolicy, allow bool) error {
	a, ok := reuseAttr(r)
	if !ok {
		return fmt.Errorf("cuda: mem pool set reuse %v: %w", r, driver.ErrInvalidValue)
	}
	v := 0
	if allow {
		v = 1
	}
	return p.attr("set reuse", func() int { return memPoolSetInt(p.handle, a, v) })
}

func (p *memPool) Reuse(r driver.ReusePolicy) (bool, error) {
	a, ok := reuseAttr(r)
	if !ok {
		return false, fmt.Errorf("cuda: mem pool reuse %v: %w", r, driver.ErrInvalidValue)
	}
	var v int
	err := p.attr("reuse", func() int {
		var c int
		v, c = memPoolGetInt(p.handle, a)
		return c
	})
	return v != 0, err
}

func (p *memPool) TrimTo(keep int64) error {
	if keep < 0 {
		return fmt.Errorf("cuda: mem pool trim to %d: %w", keep, driver.ErrInvalidValue)
	}
	return p.attr("trim", func() int { return memPoolTrimTo(p.handle, keep) })
}

func (p *memPool) Usage() (driver.PoolUsage, error) {
	var v [4]uint64
	err := p.attr("usage", func() int {
		for i, a := range []int{poolAttrReservedCurrent, poolAttrReservedHigh, poolAttrUsedCurrent, poolAttrUsedHigh} {
			var c int
			if v[i], c = memPoolGetUint64(p.handle, a); c != 0 {
				return c
			}
		}
		return 0
	})
	return driver.PoolUsage{Reserved: int64(v[0]), ReservedHigh: int64(v[1]), Used: int64(v[2]), UsedHigh: int64(v[3])}, err
}

// ResetHigh sets RESERVED_MEM_HIGH and USED_MEM_HIGH to 0, which resets
// them to the current figures.
func (p *memPool) ResetHigh() error {
	return p.attr("reset high", func() int {
		if c := memPoolSetUint64(p.handle, poolAttrReservedHigh, 0); c != 0 {
			return c
		}
		return memPoolSetUint64(p.handle, poolAttrUsedHigh, 0)
	})
}

// Destroy destroys a pool NewMemPool made (cuMemPoolDestroy); the default
// pool is refused with driver.ErrInvalidValue.
func (p *memPool) Destroy() error {
	d := p.d
	d.mu.Lock()
	if p.isDefault {
		d.mu.Unlock()
		return fmt.Errorf("cuda: destroy mem pool: the device's default pool cannot be destroyed: %w", driver.ErrInvalidValue)
	}
	if p.destroyed || d.closed {
		d.mu.Unlock()
		return nil
	}
	p.destroyed = true
	for i, q := range d.pools {
		if q == p {
			d.pools = append(d.pools[:i], d.pools[i+1:]...)
			break
		}
	}
	d.mu.Unlock()
	if err := d.call(func() error { return check(memPoolDestroy(p.handle)) }); err != nil {
		return fmt.Errorf("cuda: destroy mem pool: %w", err)
	}
	return nil
}
