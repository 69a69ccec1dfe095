//go:build cuda

package conformance

import (
	"encoding/binary"
	"fmt"
	"math"
	"syscall"
	"testing"
)

// Managed memory's rows, for what the emulated driver keeps of it from
// the Driver API's sentences and guesses (device/sim/managed*.go): a
// kernel's first touch of memory no processor has touched, a prefetch's
// completion in its stream's order, the host's access while the device
// works, and the attachments. A GPU's page faults and migrations reach no
// call here (CUPTI's counters would tell them): the rows observe what the
// program sees.

const managedRowBytes = 64 << 10

func observeManaged(t *testing.T, add func(name, got string)) {
	_, c := MemAllocManaged(0, AttachGlobal)
	add("cuMemAllocManaged of 0 bytes", ErrorName(c))
	add("cuMemAllocManaged of a page more than the host's memory and swap", managedBeyondHost(t))
	observeManagedFirstTouch(t, add)
	observeManagedPrefetchOrder(t, add)
	observeManagedHostWhileHeld(t, add)
	observeManagedAttach(t, add)
}

// managedBeyondHost: cuMemAllocManaged of a page more than the host's
// memory and swap together (sysinfo(2)), freed at once if it succeeds.
// The Programming Guide promises that managed memory may oversubscribe the
// device; what it says of the host is not known here.
func managedBeyondHost(t *testing.T) string {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		t.Fatalf("sysinfo: %v", err)
	}
	host := (int64(si.Totalram) + int64(si.Totalswap)) * int64(si.Unit)
	p, c := MemAllocManaged(int(host+4096), AttachGlobal)
	if c == Success {
		ok(t, MemFree(p), "cuMemFree")
	}
	return ErrorName(c)
}

// attachOdd: cuStreamAttachMemAsync on s of a 1000-byte managed
// allocation with length n, and what the stream's synchronize answers
// after it. The Driver API says "length must be either zero or the entire
// allocation's size"; whether the size rounded up to the allocation unit
// counts as entire is not said.
func attachOdd(t *testing.T, s uintptr, n int) string {
	p, c := MemAllocManaged(1000, AttachGlobal)
	ok(t, c, "cuMemAllocManaged")
	defer MemFree(p)
	got := ErrorName(StreamAttachMemAsync(s, p, n, AttachGlobal))
	return got + ", then " + ErrorName(StreamSynchronize(s))
}

// kernelValues says whether the host reads n float32s of v at p.
func kernelValues(p uintptr, n int, v float32) string {
	b := ManagedBytes(p, 4*n)
	for i := range n {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != v {
			return fmt.Sprintf("element %d is %v, not the kernel's %v", i, got, v)
		}
	}
	return "the host reads the kernel's values"
}

// observeManagedFirstTouch: a kernel fills managed memory no processor
// has touched ("managed memory may not be populated when this API returns
// and instead may be populated on access", cuMemAllocManaged), then the
// host reads it after cuCtxSynchronize; and the attribute of memory never
// prefetched.
func observeManagedFirstTouch(t *testing.T, add func(name, got string)) {
	f := loadFill(t)
	p, c := MemAllocManaged(managedRowBytes, AttachGlobal)
	ok(t, c, "cuMemAllocManaged")
	defer MemFree(p)
	loc, c := LastPrefetchLocation(p, managedRowBytes)
	got := ErrorName(c)
	if c == Success {
		got = fmt.Sprint(loc)
	}
	add("cuMemRangeGetAttribute LAST_PREFETCH_LOCATION of memory never prefetched", got)
	args, offs := fillF32Args(p, managedRowBytes/4, 2.5)
	ok(t, Launch(f, managedRowBytes/4/256, 256, 0, args, offs), "cuLaunchKernel")
	ok(t, CtxSynchronize(), "cuCtxSynchronize")
	add("a kernel's first touch of managed memory, then the host's read after cuCtxSynchronize", kernelValues(p, managedRowBytes/4, 2.5))
}

// observeManagedPrefetchOrder: cuMemPrefetchAsync to device 0 on a stream
// a host function holds: the last prefetch location right after the call
// ("no indication as to whether the prefetch operation to that location
// has completed or even begun", cuMemRangeGetAttribute), and cuStreamQuery
// before and after the release (the prefetch completes in its stream's
// order).
func observeManagedPrefetchOrder(t *testing.T, add func(name, got string)) {
	if concurrent, c := ConcurrentManagedAccess(); c != Success || !concurrent {
		add("cuMemPrefetchAsync to the device on a held stream", "no concurrent managed access: not tried")
		return
	}
	p, c := MemAllocManaged(managedRowBytes, AttachGlobal)
	ok(t, c, "cuMemAllocManaged")
	defer MemFree(p)
	s, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(s)
	gate, c := NewGate(s)
	ok(t, c, "cuLaunchHostFunc")
	entered(t, gate)
	got := "cuMemPrefetchAsync " + ErrorName(MemPrefetchAsync(p, managedRowBytes, 0, s))
	loc, c := LastPrefetchLocation(p, managedRowBytes)
	got += fmt.Sprintf("; last prefetch location %d (%s)", loc, ErrorName(c))
	got += "; cuStreamQuery " + ErrorName(StreamQuery(s))
	gate.Release()
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	got += ", after the release " + ErrorName(StreamQuery(s))
	add("cuMemPrefetchAsync to the device on a held stream", got)
}

// observeManagedHostWhileHeld: on a device with concurrent managed access
// the host writes and reads managed memory while a host function holds a
// stream whose kernel wrote it: "Memory accesses to this range are always
// coherent" (cuMemPrefetchAsync). Without it the access would fault (the
// emulated driver's sim refuses it): the row is not tried.
func observeManagedHostWhileHeld(t *testing.T, add func(name, got string)) {
	name := "the host's write and read of managed memory while a held stream's kernel is queued"
	if concurrent, c := ConcurrentManagedAccess(); c != Success || !concurrent {
		add(name, "no concurrent managed access: not tried")
		return
	}
	f := loadFill(t)
	p, c := MemAllocManaged(managedRowBytes, AttachGlobal)
	ok(t, c, "cuMemAllocManaged")
	defer MemFree(p)
	s, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(s)
	gate, c := NewGate(s)
	ok(t, c, "cuLaunchHostFunc")
	entered(t, gate)
	args, offs := fillF32Args(p, managedRowBytes/4, 7)
	ok(t, Launch(f, managedRowBytes/4/256, 256, s, args, offs), "cuLaunchKernel")
	b := ManagedBytes(p, 8)
	binary.LittleEndian.PutUint32(b, math.Float32bits(-1))
	host := math.Float32frombits(binary.LittleEndian.Uint32(b))
	gate.Release()
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add(name, fmt.Sprintf("the host read back %v; after the release, %s", host, kernelValues(p, managedRowBytes/4, 7)))
}

// observeManagedAttach: cuStreamAttachMemAsync singly to the NULL stream
// ("It is illegal to attach singly to the NULL stream [...] An error will
// be returned in this case"), of half an allocation ("length must be
// either zero or the entire allocation's size"), and memory allocated
// CU_MEM_ATTACH_HOST that a kernel writes on a stream it is attached to
// singly, read by the host after cuStreamSynchronize.
func observeManagedAttach(t *testing.T, add func(name, got string)) {
	p, c := MemAllocManaged(managedRowBytes, AttachHost)
	ok(t, c, "cuMemAllocManaged")
	defer MemFree(p)
	add("cuStreamAttachMemAsync CU_MEM_ATTACH_SINGLE to the NULL stream", ErrorName(StreamAttachMemAsync(0, p, 0, AttachSingle)))
	s, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(s)
	add("cuStreamAttachMemAsync of half a managed allocation", ErrorName(StreamAttachMemAsync(s, p, managedRowBytes/2, AttachSingle)))
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add("cuStreamAttachMemAsync of a managed allocation with its size asked for (1000 bytes)", attachOdd(t, s, 1000))
	add("cuStreamAttachMemAsync of a managed allocation with its size rounded up (1000 bytes as 1024)", attachOdd(t, s, 1024))
	got := "cuStreamAttachMemAsync " + ErrorName(StreamAttachMemAsync(s, p, 0, AttachSingle))
	f := loadFill(t)
	args, offs := fillF32Args(p, managedRowBytes/4, 3)
	ok(t, Launch(f, managedRowBytes/4/256, 256, s, args, offs), "cuLaunchKernel")
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add("memory allocated CU_MEM_ATTACH_HOST, attached singly to a stream whose kernel writes it, read after cuStreamSynchronize", got+"; "+kernelValues(p, managedRowBytes/4, 3))
}
