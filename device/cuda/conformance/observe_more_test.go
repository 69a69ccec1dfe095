//go:build cuda

package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// More observations, for what the emulated driver guesses from the Driver
// API's and the Programming Guide's sentences: what a sticky error leaves
// of the process, whether work on a fresh non-blocking stream and peer
// copies wait for a held stream, whether an allocation or a memset between
// two streams' work serializes them (implicit synchronization), and how
// mapped host memory is addressed.

// childFaultThenHostFn names the child row of observeFaultThenHostFn.
const childFaultThenHostFn = "observe-fault-then-hostfn"

// observeMore adds the rows that run in this process.
func observeMore(t *testing.T, add func(name, got string)) {
	observeFreshStreamWhileHeld(t, add)
	observePeerWhileHeld(t, add)
	observeImplicitSync(t, add)
	observeMappedAddresses(t, add)
	observeAllocationSizes(t, add)
	observeRegisteredPieces(t, add)
	observeVirtualMemory(t, add)
	observeManaged(t, add)
	observePageable(t, add) // observe_pageable_test.go
	observePools(t, add)    // observe_pools_test.go
}

// faultThenHostFnChild queues, on a stream held by a gate, a kernel that
// writes freed memory and a host function behind it, lets the gate go and
// says whether the host function ran ("the function will not be called in
// the event of an error in the CUDA context", cuLaunchHostFunc), then what
// cuStreamDestroy, cuEventDestroy and cuPointerGetAttributes answer after
// the fault, and cuDevicePrimaryCtxReset, retain and cuMemAlloc: whether a
// reset gives the process the device back ("To continue using CUDA, the
// process must be terminated and relaunched", cuda.h).
func faultThenHostFnChild(t *testing.T) string {
	f := loadFill(t)
	live, c := MemAlloc(1 << 12)
	ok(t, c, "cuMemAlloc")
	freed, c := MemAlloc(1 << 12)
	ok(t, c, "cuMemAlloc")
	ok(t, MemFree(freed), "cuMemFree")
	other, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	ev, c := EventCreate(0)
	ok(t, c, "cuEventCreate")
	s, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	gate, c := NewGate(s)
	ok(t, c, "cuLaunchHostFunc")
	entered(t, gate)
	args, offs := fillF32Args(freed, 256, 1)
	ok(t, Launch(f, 1, 256, s, args, offs), "cuLaunchKernel")
	m, c := NewMarker(s)
	ok(t, c, "cuLaunchHostFunc")
	gate.Release()
	var out []string
	sync := StreamSynchronize(s)
	out = append(out, "cuStreamSynchronize "+ErrorName(sync))
	deadline := time.Now().Add(observeTime)
	for !m.Ran() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if m.Ran() {
		out = append(out, "the host function ran")
	} else {
		out = append(out, "the host function did not run")
	}
	out = append(out, "cuStreamDestroy "+ErrorName(StreamDestroy(other)))
	out = append(out, "cuEventDestroy "+ErrorName(EventDestroy(ev)))
	_, c = PointerGetAttributes(live)
	out = append(out, "cuPointerGetAttributes "+ErrorName(c))
	out = append(out, "cuDevicePrimaryCtxReset "+ErrorName(PrimaryReset(0)))
	ctx, c := PrimaryRetain(0)
	out = append(out, "cuDevicePrimaryCtxRetain "+ErrorName(c))
	if c == Success {
		if c := CtxSetCurrent(ctx); c != Success {
			out = append(out, "cuCtxSetCurrent "+ErrorName(c))
		}
		p, c := MemAlloc(256)
		out = append(out, "cuMemAlloc "+ErrorName(c))
		if c == Success {
			MemFree(p)
		}
	}
	return strings.Join(out, "; ")
}

// observeFreshStreamWhileHeld: while a host function holds a blocking
// stream, a page-locked cuMemcpyDtoHAsync and then cuStreamSynchronize, and
// a kernel and then cuEventSynchronize, on a fresh non-blocking stream.
func observeFreshStreamWhileHeld(t *testing.T, add func(name, got string)) {
	const n = 1 << 12
	f := loadFill(t)
	b := newBuffers(t, n)
	for _, c := range []struct {
		name string
		call func(s, ev uintptr) int
	}{
		{"a page-locked cuMemcpyDtoHAsync, then cuStreamSynchronize,", func(s, _ uintptr) int {
			if c := MemcpyDtoHAsync(b.pinned, b.d, s); c != Success {
				return c
			}
			return StreamSynchronize(s)
		}},
		{"a kernel, then cuEventSynchronize,", func(s, ev uintptr) int {
			args, offs := fillF32Args(b.d, n/4, 2)
			if c := Launch(f, 1, 256, s, args, offs); c != Success {
				return c
			}
			if c := EventRecord(ev, s); c != Success {
				return c
			}
			return EventSynchronize(ev)
		}},
	} {
		held, code := StreamCreate(0)
		ok(t, code, "cuStreamCreate")
		gate, code := NewGate(held)
		ok(t, code, "cuLaunchHostFunc")
		entered(t, gate)
		fresh, code := StreamCreate(StreamNonBlocking)
		ok(t, code, "cuStreamCreate")
		ev, code := EventCreate(0)
		ok(t, code, "cuEventCreate")
		add(c.name+" on a new non-blocking stream while a host function holds a blocking stream",
			outcome(func() int { return c.call(fresh, ev) }, gate.Release))
		gate.Release()
		ok(t, StreamSynchronize(fresh), "cuStreamSynchronize")
		ok(t, EventDestroy(ev), "cuEventDestroy")
		ok(t, StreamDestroy(fresh), "cuStreamDestroy")
		ok(t, CtxSynchronize(), "cuCtxSynchronize")
		ok(t, StreamDestroy(held), "cuStreamDestroy")
	}
}

// observePeerWhileHeld: cuMemcpyPeer within device 0, then a synchronize
// of the legacy stream it runs on, while a host function holds a
// non-blocking stream. cuMemcpyPeer is "serialized with respect to all
// pending and future asynchronous work in to the current context,
// srcContext, and dstContext".
func observePeerWhileHeld(t *testing.T, add func(name, got string)) {
	const n = 1 << 12
	b := newBuffers(t, n)
	held, code := StreamCreate(StreamNonBlocking)
	ok(t, code, "cuStreamCreate")
	gate, code := NewGate(held)
	ok(t, code, "cuLaunchHostFunc")
	entered(t, gate)
	add("cuMemcpyPeer within one device, then cuStreamSynchronize of the legacy stream, while a host function holds a non-blocking stream",
		outcome(func() int {
			if c := MemcpyPeer(b.d2, ctx0, b.d, ctx0, n); c != Success {
				return c
			}
			return StreamSynchronize(StreamLegacy)
		}, gate.Release))
	gate.Release()
	ok(t, CtxSynchronize(), "cuCtxSynchronize")
	ok(t, StreamDestroy(held), "cuStreamDestroy")
}

// observeImplicitSync: while a host function holds non-blocking stream A,
// a memset queued on non-blocking stream B (made before) after each of
// cuMemAlloc, cuMemHostAlloc and cuMemsetD8, and then cuStreamSynchronize
// of B: "Two commands from different streams cannot run concurrently if
// any one of the following operations is issued in-between them by the
// host thread: a page-locked host memory allocation, a device memory
// allocation, a device memory set" (Programming Guide).
func observeImplicitSync(t *testing.T, add func(name, got string)) {
	const n = 1 << 12
	b := newBuffers(t, n)
	for _, c := range []struct {
		name string
		op   func(cleanup *[]func()) int
	}{
		{"cuMemAlloc", func(cl *[]func()) int {
			p, c := MemAlloc(n)
			if c == Success {
				*cl = append(*cl, func() { MemFree(p) })
			}
			return c
		}},
		{"cuMemHostAlloc", func(cl *[]func()) int {
			h, c := MemHostAlloc(n, 0)
			if c == Success {
				*cl = append(*cl, func() { MemFreeHost(h) })
			}
			return c
		}},
		{"cuMemsetD8", func(*[]func()) int { return MemsetD8(b.d2, 3, n) }},
	} {
		a, code := StreamCreate(StreamNonBlocking)
		ok(t, code, "cuStreamCreate")
		s, code := StreamCreate(StreamNonBlocking)
		ok(t, code, "cuStreamCreate")
		gate, code := NewGate(a)
		ok(t, code, "cuLaunchHostFunc")
		entered(t, gate)
		var cleanup []func()
		ok(t, c.op(&cleanup), c.name)
		ok(t, MemsetD8Async(b.d, 7, n, s), "cuMemsetD8Async")
		add(fmt.Sprintf("cuStreamSynchronize of non-blocking stream B, after %s and a memset on B, while a host function holds non-blocking stream A", c.name),
			outcome(func() int { return StreamSynchronize(s) }, gate.Release))
		gate.Release()
		ok(t, CtxSynchronize(), "cuCtxSynchronize")
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		ok(t, StreamDestroy(s), "cuStreamDestroy")
		ok(t, StreamDestroy(a), "cuStreamDestroy")
	}
}

// addressOf says how device address d relates to host address h.
func addressOf(d uintptr, c int, h Host) string {
	switch {
	case c != Success:
		return ErrorName(c)
	case d == uintptr(h.P):
		return "the host address"
	}
	return "another address"
}

// observeMappedAddresses: the device address of registered memory and of
// write-combined mapped memory, CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
// and registering the same bytes twice. Unified addressing's exceptions:
// for cuMemHostRegister and WRITECOMBINED memory "there exists a distinct
// host and device address".
func observeMappedAddresses(t *testing.T, add func(name, got string)) {
	const n = 1 << 16
	v, c := DeviceAttribute(AttrCanUseHostPointerForRegisteredMem, 0)
	if c == Success {
		add("CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", fmt.Sprint(v))
	} else {
		add("CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", ErrorName(c))
	}

	h := CMalloc(n)
	defer CFree(h)
	ok(t, HostRegister(h, HostRegisterDeviceMap), "cuMemHostRegister")
	d, c := HostGetDevicePointer(h)
	add("cuMemHostGetDevicePointer of memory registered with DEVICEMAP", addressOf(d, c, h))
	add("cuMemHostRegister of the same bytes again", ErrorName(HostRegister(h, HostRegisterDeviceMap)))
	ok(t, HostUnregister(h), "cuMemHostUnregister")

	wc, c := MemHostAlloc(n, HostAllocWriteCombined|HostAllocDeviceMap)
	ok(t, c, "cuMemHostAlloc")
	d, c = HostGetDevicePointer(wc)
	add("cuMemHostGetDevicePointer of cuMemHostAlloc WRITECOMBINED|DEVICEMAP memory", addressOf(d, c, wc))
	ok(t, MemFreeHost(wc), "cuMemFreeHost")
}

// observeAllocationSizes: the size cuMemGetAddressRange gives of a
// 12,345-byte allocation, cuMemHostAlloc of 0 bytes, and
// cuMemHostUnregister of memory cuMemHostAlloc gave.
func observeAllocationSizes(t *testing.T, add func(name, got string)) {
	p, c := MemAlloc(12345)
	ok(t, c, "cuMemAlloc")
	base, size, c := MemGetAddressRange(p)
	got := ErrorName(c)
	if c == Success {
		got = fmt.Sprintf("%d bytes", size)
		if base != p {
			got += fmt.Sprintf(", base %+d bytes from the allocation", int64(base)-int64(p))
		}
	}
	add("cuMemGetAddressRange of a 12345-byte allocation", got)
	ok(t, MemFree(p), "cuMemFree")

	h, c := MemHostAlloc(0, 0)
	if c == Success && h.P != nil {
		defer MemFreeHost(h)
	}
	got = ErrorName(c)
	if c == Success {
		got += fmt.Sprintf(" (pointer nil: %v)", h.P == unsafe.Pointer(nil))
	}
	add("cuMemHostAlloc of 0 bytes", got)

	h, c = MemHostAlloc(4096, 0)
	ok(t, c, "cuMemHostAlloc")
	add("cuMemHostUnregister of cuMemHostAlloc memory", ErrorName(HostUnregister(h)))
	ok(t, MemFreeHost(h), "cuMemFreeHost")
}
