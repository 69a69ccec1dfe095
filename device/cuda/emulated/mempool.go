//go:build cuda && cudaemu && linux

package emulated

// The stream-ordered allocator (cuMemAllocAsync, cuMemFreeAsync, the
// cuMemPool functions) on sim's pools (device/sim/mempool.go, which
// quotes the rules it keeps). A CUmemoryPool is a handle of the context
// whose sim device holds the pool; the legacy default stream's order with
// blocking streams, which the emulated driver makes with events, is a
// dependency the pools follow ("CUDA events and null stream interactions
// can create the required stream ordered dependencies").

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// memPool is a CUmemoryPool.
type memPool struct {
	ctx *context
	p   driver.MemPool
}

// defaultPools holds the handle of each sim device's default pool, so
// that cuDeviceGetDefaultMemPool returns the same one each time.
var defaultPools struct {
	sync.Mutex
	m map[*sim.Device]uintptr
}

// poolOf returns the pool of handle h, usable: its context active.
func poolOf(h uintptr) (*memPool, cuResult) {
	if !drv.ready() {
		return nil, errNotInitialized
	}
	p, ok := lookup[*memPool](h)
	if !ok {
		return nil, errInvalidValue
	}
	if r := p.ctx.usable(); r != success {
		return nil, r
	}
	return p, success
}

// primaryOf returns device ordinal's primary context and its sim device,
// which must be active (a guess: the driver's pools outlive a context;
// cuarray asks with the context retained).
func primaryOf(ordinal int) (*context, *sim.Device, cuResult) {
	d, r := deviceOf(ordinal)
	if r != success {
		return nil, nil, r
	}
	c := d.primary
	dev := c.active()
	if dev == nil {
		return nil, nil, errInvalidContext
	}
	if r := c.faulted(dev); r != success {
		return nil, nil, r
	}
	return c, dev, success
}

//export cuemu_cuDeviceGetDefaultMemPool
func cuemu_cuDeviceGetDefaultMemPool(pool *C.CUmemoryPool, dev C.CUdevice) C.CUresult {
	if pool == nil {
		return result("cuDeviceGetDefaultMemPool", errInvalidValue)
	}
	c, sd, r := primaryOf(int(dev))
	if r != success {
		return result("cuDeviceGetDefaultMemPool", r)
	}
	defaultPools.Lock()
	defer defaultPools.Unlock()
	h, ok := defaultPools.m[sd]
	if !ok {
		mp, err := sd.DefaultMemPool()
		if err != nil {
			return result("cuDeviceGetDefaultMemPool", c.codeOf(err))
		}
		h = drv.newHandle(&memPool{ctx: c, p: mp})
		c.own(h)
		if defaultPools.m == nil {
			defaultPools.m = make(map[*sim.Device]uintptr)
		}
		defaultPools.m[sd] = h
	}
	*pool = C.CUmemoryPool(cPointer(h))
	return result("cuDeviceGetDefaultMemPool", success)
}

//export cuemu_cuMemPoolCreate
func cuemu_cuMemPoolCreate(pool *C.CUmemoryPool, props *C.CUmemPoolProps) C.CUresult {
	if pool == nil || props == nil || props.allocType != C.CU_MEM_ALLOCATION_TYPE_PINNED ||
		props.location._type != C.CU_MEM_LOCATION_TYPE_DEVICE {
		return result("cuMemPoolCreate", errInvalidValue)
	}
	c, sd, r := primaryOf(int(props.location.id))
	if r != success {
		return result("cuMemPoolCreate", r)
	}
	var mp driver.MemPool
	if props.handleTypes != C.CU_MEM_HANDLE_TYPE_NONE {
		mp, r = createSharedPool(c, sd, props.handleTypes) // mempool_ipc.go
	} else {
		var err error
		mp, err = sd.NewMemPool()
		r = c.codeOf(err)
	}
	if r != success {
		return result("cuMemPoolCreate", r)
	}
	h := drv.newHandle(&memPool{ctx: c, p: mp})
	c.own(h)
	*pool = C.CUmemoryPool(cPointer(h))
	return result("cuMemPoolCreate", success)
}

//export cuemu_cuMemPoolDestroy
func cuemu_cuMemPoolDestroy(pool C.CUmemoryPool) C.CUresult {
	h := uintptr(unsafe.Pointer(pool))
	if r, imported := destroyImported(h); imported {
		return result("cuMemPoolDestroy", r)
	}
	p, r := poolOf(h)
	if r != success {
		return result("cuMemPoolDestroy", r)
	}
	if err := p.p.Destroy(); err != nil {
		return result("cuMemPoolDestroy", p.ctx.codeOf(err))
	}
	drv.forget(h)
	return result("cuMemPoolDestroy", success)
}

//export cuemu_cuMemPoolTrimTo
func cuemu_cuMemPoolTrimTo(pool C.CUmemoryPool, keep C.size_t) C.CUresult {
	p, r := poolOf(uintptr(unsafe.Pointer(pool)))
	if r != success {
		return result("cuMemPoolTrimTo", r)
	}
	if uint64(keep) > 1<<62 {
		keep = 1 << 62
	}
	return result("cuMemPoolTrimTo", p.ctx.codeOf(p.p.TrimTo(int64(keep))))
}

// reusePolicy returns the policy of a reuse attribute.
func reusePolicy(attr C.CUmemPool_attribute) (driver.ReusePolicy, bool) {
	switch attr {
	case C.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		return driver.ReuseFollowEventDependencies, true
	case C.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		return driver.ReuseAllowOpportunistic, true
	case C.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		return driver.ReuseAllowInternalDependencies, true
	}
	return 0, false
}

// cuMemPoolSetAttribute: the reuse policies take an int, the release
// threshold a cuuint64_t; RESERVED_MEM_HIGH and USED_MEM_HIGH reset their
// high figure: "It is illegal to set this attribute to a non-zero value."
// The current figures cannot be set (CUDA_ERROR_INVALID_VALUE, a guess:
// the page lists only the settable ones).
//
//export cuemu_cuMemPoolSetAttribute
func cuemu_cuMemPoolSetAttribute(pool C.CUmemoryPool, attr C.CUmemPool_attribute, value unsafe.Pointer) C.CUresult {
	p, r := poolOf(uintptr(unsafe.Pointer(pool)))
	if r == success && value == nil {
		r = errInvalidValue
	}
	if r != success {
		return result("cuMemPoolSetAttribute", r)
	}
	var err error
	if policy, ok := reusePolicy(attr); ok {
		err = p.p.SetReuse(policy, *(*C.int)(value) != 0)
		return result("cuMemPoolSetAttribute", p.ctx.codeOf(err))
	}
	v := uint64(*(*C.cuuint64_t)(value))
	switch attr {
	case C.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		err = p.p.SetReleaseThreshold(int64(min(v, 1<<62)))
	case C.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, C.CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if v != 0 {
			return result("cuMemPoolSetAttribute", errInvalidValue)
		}
		err = sim.ResetPoolHigh(p.p, attr == C.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, attr == C.CU_MEMPOOL_ATTR_USED_MEM_HIGH)
	default:
		return result("cuMemPoolSetAttribute", errInvalidValue)
	}
	return result("cuMemPoolSetAttribute", p.ctx.codeOf(err))
}

//export cuemu_cuMemPoolGetAttribute
func cuemu_cuMemPoolGetAttribute(pool C.CUmemoryPool, attr C.CUmemPool_attribute, value unsafe.Pointer) C.CUresult {
	p, r := poolOf(uintptr(unsafe.Pointer(pool)))
	if r == success && value == nil {
		r = errInvalidValue
	}
	if r != success {
		return result("cuMemPoolGetAttribute", r)
	}
	if policy, ok := reusePolicy(attr); ok {
		allow, err := p.p.Reuse(policy)
		if err == nil {
			*(*C.int)(value) = 0
			if allow {
				*(*C.int)(value) = 1
			}
		}
		return result("cuMemPoolGetAttribute", p.ctx.codeOf(err))
	}
	var v int64
	var err error
	if attr == C.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD {
		v, err = p.p.ReleaseThreshold()
	} else {
		var u driver.PoolUsage
		u, err = p.p.Usage()
		switch attr {
		case C.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
			v = u.Reserved
		case C.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
			v = u.ReservedHigh
		case C.CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
			v = u.Used
		case C.CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			v = u.UsedHigh
		default:
			return result("cuMemPoolGetAttribute", errInvalidValue)
		}
	}
	if err == nil {
		*(*C.cuuint64_t)(value) = C.cuuint64_t(v)
	}
	return result("cuMemPoolGetAttribute", p.ctx.codeOf(err))
}

// memAllocAsync queues an allocation from pool h (0: the stream's
// device's default pool) on stream sh. "A pointer to the allocated memory
// is returned immediately" (cuMemAllocAsync). A size of 0 is
// CUDA_ERROR_INVALID_VALUE, as for cuMemAlloc (a guess).
func memAllocAsync(n uint64, pool, sh uintptr) (uintptr, cuResult) {
	c, _, s, r := currentStream(sh)
	if r != success {
		return 0, r
	}
	if n == 0 {
		return 0, errInvalidValue
	}
	if n > uint64(drv.cfg.memory) {
		return 0, errOutOfMemory
	}
	var mp driver.MemPool
	if pool != 0 {
		p, r := poolOf(pool)
		if r != success {
			return 0, r
		}
		if p.ctx != c {
			return 0, errInvalidValue
		}
		mp = p.p
	}
	var addr devarray.Ptr
	r = s.run(func(st driver.Stream) error {
		var err error
		if mp == nil {
			addr, err = st.MallocAsync(int64(n))
		} else {
			addr, err = st.MallocFromPoolAsync(int64(n), mp)
		}
		return err
	})
	return uintptr(addr), r
}

//export cuemu_cuMemAllocAsync
func cuemu_cuMemAllocAsync(p *C.CUdeviceptr, n C.size_t, s C.CUstream) C.CUresult {
	if p == nil {
		return result("cuMemAllocAsync", errInvalidValue)
	}
	d, r := memAllocAsync(uint64(n), 0, sh(s))
	if r == success {
		*p = C.CUdeviceptr(d)
	}
	return result("cuMemAllocAsync", r)
}

//export cuemu_cuMemAllocFromPoolAsync
func cuemu_cuMemAllocFromPoolAsync(p *C.CUdeviceptr, n C.size_t, pool C.CUmemoryPool, s C.CUstream) C.CUresult {
	if p == nil || pool == nil {
		return result("cuMemAllocFromPoolAsync", errInvalidValue)
	}
	d, r := memAllocAsync(uint64(n), uintptr(unsafe.Pointer(pool)), sh(s))
	if r == success {
		*p = C.CUdeviceptr(d)
	}
	return result("cuMemAllocFromPoolAsync", r)
}

// cuMemFreeAsync: "Inserts a free operation into hStream."
//
//export cuemu_cuMemFreeAsync
func cuemu_cuMemFreeAsync(p C.CUdeviceptr, s C.CUstream) C.CUresult {
	_, _, st, r := currentStream(sh(s))
	if r != success {
		return result("cuMemFreeAsync", r)
	}
	return result("cuMemFreeAsync", st.run(func(x driver.Stream) error { return x.FreeAsync(devarray.Ptr(p)) }))
}
