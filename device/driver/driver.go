// Package driver defines the interfaces a cuarray device backend implements
// (the emulated device in device/sim, the CUDA backend in device/cuda) and
// the errors they share. Users reach the same types through package device,
// which re-exports them; this package exists so that backends can implement
// them without an import cycle, as database/sql/driver does for SQL drivers.
package driver

import (
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// Device is one GPU (or the emulation of one). Every allocation, free,
// memset and copy it performs is recorded in its Ledger. It satisfies
// devarray.Backend, so arrays can be made on it directly. A Device is safe
// for use by many goroutines.
//
// The copy contract: a method not named Async (CopyHtoD, CopyDtoH,
// CopyDtoD, Memcpy2D, Memcpy3D, CopyPeer, Memset, Malloc, Free, ...)
// returns only when its work is complete on the device and its result is
// visible to the caller and to every stream: on a GPU, where
// cuMemcpyDtoD, cuMemsetD8 and a copy from pageable memory return once
// the work is queued, the backend waits for it. The ledger's seconds of a
// synchronous copy are those of the completed work. Async work (a
// Stream's methods, kernel launches) returns when queued; a stream's
// Synchronize, or an event recorded after the work, says when it is done.
// The sim backend holds itself to the same rule with Config.Latency, so a
// missing wait shows up in tests as it does on a GPU.
type Device interface {
	devarray.Backend

	// Info describes the device.
	Info() Info
	// Ledger returns the ledger that counts this device's memory and copies.
	Ledger() *accounting.Ledger
	// MemInfo returns the device's free and total memory in bytes.
	MemInfo() (free, total int64, err error)
	// CopyDtoD copies n bytes within the device.
	CopyDtoD(dst, src devarray.Ptr, n int64) error
	// Memcpy3D copies a box of bytes between pitched regions of host or
	// device memory (cuMemcpy3D).
	Memcpy3D(p devarray.Memcpy3D) error
	// CopyPeer copies n bytes from this device's memory at src to the
	// memory of another device of the same backend at dst.
	CopyPeer(dst devarray.Ptr, dstDev Device, src devarray.Ptr, n int64) error
	// HostAlloc allocates page-locked host memory with the given flags.
	HostAlloc(n int64, flags HostFlags) (*HostMem, error)
	// HostFree frees memory returned by HostAlloc. A second free is an error.
	HostFree(h *HostMem) error
	// Register page-locks host memory the program already has
	// (cuMemHostRegister); Portable and Mapped are the flags that apply.
	// Memory that overlaps a live page-locked range is refused.
	Register(b []byte, flags HostFlags) (*HostMem, error)
	// Unregister undoes Register (cuMemHostUnregister).
	Unregister(h *HostMem) error
	// NewStream returns a stream whose work runs in order, asynchronously
	// to the caller and to other streams.
	NewStream() (Stream, error)
	// NewEvent returns an event, complete until first recorded.
	NewEvent() (Event, error)
	// ExternalStream wraps a stream of this device known by its handle, as
	// another library hands it over (the CUDA Array Interface's and DLPack's
	// stream): a Stream's Handle, a CUstream, or 1 and 2 for CUDA's legacy
	// and per-thread default streams. Close releases only the wrapper. A
	// handle the device does not know is an error wrapping ErrInvalidValue.
	// On CUDA, 2 (CU_STREAM_PER_THREAD) names a different stream on each OS
	// thread, resolved by each call on the thread that makes it: use such a
	// wrapper only from a goroutine locked to the thread whose stream it
	// means (runtime.LockOSThread; a C caller's thread, through libcuarray),
	// as a goroutine's successive calls may otherwise run on different
	// threads' streams. sim runs 2's work on its default stream; its
	// stream race checker (check=streams) holds each OS thread's handle-2
	// work to CUDA's rule, a stream of its own per thread.
	ExternalStream(handle uintptr) (Stream, error)
	// IPCExport returns the handle by which another process opens the
	// allocation that holds p (cuIpcGetMemHandle), with that allocation's
	// base address and size.
	IPCExport(p devarray.Ptr) (h IPCHandle, base devarray.Ptr, size int64, err error)
	// IPCOpen maps another process's allocation into this one
	// (cuIpcOpenMemHandle) and returns its address here and its size,
	// counted in the ledger as kind ipc until IPCClose. Opening the same
	// handle again returns the same address and counts one more open; the
	// memory is unmapped at the last IPCClose. A handle of this process
	// is an error wrapping ErrOwnIPCHandle, a stale one (its allocation
	// was freed, its process ended) ErrStaleIPCHandle, a foreign one
	// ErrInvalidValue.
	IPCOpen(h IPCHandle) (devarray.Ptr, int64, error)
	// IPCClose unmaps memory IPCOpen mapped (cuIpcCloseMemHandle).
	IPCClose(p devarray.Ptr) error
	// DefaultMemPool returns the device's default stream-ordered memory
	// pool (cuDeviceGetDefaultMemPool), the one Stream.MallocAsync uses.
	DefaultMemPool() (MemPool, error)
	// NewMemPool makes a stream-ordered memory pool of the device's memory
	// (cuMemPoolCreate), for Stream.MallocFromPoolAsync. Destroy it when
	// done; Close destroys what is left.
	NewMemPool() (MemPool, error)
	// VirtualMemory reserves device addresses and maps physical memory
	// into them (cuMemAddressReserve, cuMemCreate, cuMemMap, ...).
	VirtualMemory
	// ManagedAllocator allocates managed memory and advises on it.
	ManagedAllocator
	// PageableMemory lets kernels use the program's pageable host memory
	// in place, where the device can.
	PageableMemory
	// Synchronize waits for all work on every stream of the device.
	Synchronize() error
	// Close releases the device. Memory still allocated is freed and its
	// arrays return errors from then on.
	Close() error
}

// Info describes a device.
//
// Its JSON form (`cuarray info -json`) has snake_case keys; the ID is in
// the name.
type Info struct {
	Name         string            `json:"name"`          // device spec, "sim:0" or "cuda:0"
	ID           devarray.DeviceID `json:"-"`             // kind and ordinal
	Backend      string            `json:"backend"`       // "sim" or "cuda"
	Model        string            `json:"model"`         // "cuarray simulated device", "NVIDIA H200", ...
	TotalMemory  int64             `json:"total_memory"`  // bytes
	Alignment    int64             `json:"alignment"`     // allocation alignment in bytes
	CanMapHost   bool              `json:"can_map_host"`  // mapped host memory (Mapped flag) is available
	ContextFlags string            `json:"context_flags"` // the context's flags, "sched_auto|map_host"
	Driver       string            `json:"driver"`        // driver version, where there is a driver
	// MemoryBandwidth is the device memory's peak bandwidth in bytes per
	// second, one direction (memory clock × bus width × 2 for DDR), or 0
	// when the backend cannot tell. A device-to-device copy reads and
	// writes every byte, so it moves at most half of it.
	MemoryBandwidth float64 `json:"memory_bandwidth"`
	// HostLinkBandwidth is the host link's peak in bytes per second, one
	// direction (PCIe generation × lanes), or 0 when unknown.
	HostLinkBandwidth float64 `json:"host_link_bandwidth"`
}

// EmulatedModel starts the Model of a device that runs on cuarray's
// emulated CUDA driver (a build with -tags cuda,cudaemu): the cuda backend
// on the CPU, not a GPU.
const EmulatedModel = "cuarray emulated GPU"

// Emulated reports whether the device runs on the emulated CUDA driver:
// results from it say nothing of a GPU's speed.
func (i Info) Emulated() bool { return strings.HasPrefix(i.Model, EmulatedModel) }

// HostFlags select what kind of page-locked host memory HostAlloc returns,
// as cuMemHostAlloc's flags do.
type HostFlags uint32

// The host allocation flags.
const (
	Portable      HostFlags = 1 << iota // usable from every context (CU_MEMHOSTALLOC_PORTABLE)
	Mapped                              // mapped into the device's address space (CU_MEMHOSTALLOC_DEVICEMAP)
	WriteCombined                       // write-combined: fast for the device to read, slow for the CPU to read (CU_MEMHOSTALLOC_WRITECOMBINED)
	// Staging is cuarray's own flag, not the driver's: the memory is a
	// staging chunk of the staged copy path, so copies through it are
	// recorded as PathStaged rather than PathPinned.
	Staging
)

// AllocFlags are the flags HostAlloc accepts.
const AllocFlags = Portable | Mapped | WriteCombined | Staging

// String lists the flags, "portable|mapped", or "none".
func (f HostFlags) String() string {
	s := ""
	for i, name := range []string{"portable", "mapped", "write-combined", "staging"} {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += name
		}
	}
	if rest := f &^ AllocFlags; rest != 0 || s == "" {
		if s != "" {
			s += "|"
		}
		if rest != 0 {
			return s + "unknown"
		}
		return "none"
	}
	return s
}

// LedgerKind returns the memory kind a host allocation with these flags is
// counted under: write-combined, else mapped, else pinned.
func (f HostFlags) LedgerKind() accounting.Kind {
	switch {
	case f&WriteCombined != 0:
		return accounting.WriteCombined
	case f&Mapped != 0:
		return accounting.Mapped
	}
	return accounting.Pinned
}

// HostMem is page-locked host memory from HostAlloc.
type HostMem struct {
	// Bytes is the memory, usable from Go. It is not Go heap memory.
	Bytes []byte
	// DevPtr is the device address of mapped memory, 0 when not mapped.
	DevPtr devarray.Ptr
	// Flags are the flags it was allocated with.
	Flags HostFlags
}

// Stream is an ordered queue of device work. Methods enqueue and return at
// once; errors of the work itself are reported by Synchronize. Host memory
// passed to an async copy must not be changed or reused until the stream
// has passed the copy (Synchronize, or an event recorded after it).
//
// The exception is pageable host memory (a Go slice that is not
// page-locked), which a stream's copies hand to the driver as CUDA does:
// on a GPU, CopyDtoHAsync into it returns only once the copy is complete,
// waiting for the work queued before it, and CopyHtoDAsync from it may
// wait for the stream's earlier work (the Driver API's API
// synchronization page; an H100 waited so). sim and the emulated CUDA
// driver wait so too, and refuse host memory partly page-locked with
// ErrInvalidValue, as the driver does. For a copy that never waits, use page-locked
// memory (package pinned) or transfer's CopyAsync, which stages pageable
// memory through page-locked buffers.
type Stream interface {
	CopyHtoDAsync(dst devarray.Ptr, src []byte) error
	CopyDtoHAsync(dst []byte, src devarray.Ptr) error
	CopyDtoDAsync(dst, src devarray.Ptr, n int64) error
	Memcpy2DAsync(p devarray.Memcpy2D) error
	Memcpy3DAsync(p devarray.Memcpy3D) error
	MemsetAsync(dst devarray.Ptr, value byte, n int64) error
	// AsyncAllocator allocates and frees in the stream's order.
	AsyncAllocator
	// ManagedStream attaches and prefetches managed memory in the stream's order.
	ManagedStream
	// Record records e at this point of the stream.
	Record(e Event) error
	// WaitEvent makes later work on this stream wait until e completes.
	WaitEvent(e Event) error
	// Synchronize waits until all work enqueued so far is done and returns
	// the first error of that work, if any.
	Synchronize() error
	// Handle returns the number other libraries know the stream by (a
	// CUstream on CUDA), never 0: what ExportCAI puts in "stream".
	Handle() uintptr
	// Close waits for the stream's work and releases it.
	Close() error
}

// MaxPitch is the largest row pitch, in bytes, of a pitched 2-D or 3-D
// copy: CUDA's CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2^31-1 on every GPU so far.
// Backends refuse a larger one with ErrInvalidValue; package transfer
// moves such layouts another way.
const MaxPitch = 1<<31 - 1

// IPCHandleSize is the size of an IPC handle, CUDA's CU_IPC_HANDLE_SIZE.
const IPCHandleSize = 64

// IPCHandle names a device allocation for another process: a
// CUipcMemHandle on CUDA, the sim backend's own description on sim.
type IPCHandle [IPCHandleSize]byte

// The CUDA default stream handles of the CUDA Array Interface and DLPack.
const (
	LegacyDefaultStream    uintptr = 1 // CU_STREAM_LEGACY
	PerThreadDefaultStream uintptr = 2 // CU_STREAM_PER_THREAD
)

// Holder is a stream that can be held at a point: work queued on it after
// Hold waits until resume is called, as it would behind a long kernel.
// Tests use it to see whether a call waits for the work queued before it.
// sim's streams implement it, and the cuda backend's with a host function
// (cuLaunchHostFunc). Calling resume more than once is harmless.
type Holder interface {
	Hold() (resume func(), err error)
}

// ReachedHolder is a Holder that also tells when its hold is reached:
// reached closes once the stream's earlier work is done and the hold holds
// it (the cuda backend's host function has started). A test that must
// observe a call while a host function runs, as it ran on a GPU, waits for
// it.
type ReachedHolder interface {
	HoldReached() (reached <-chan struct{}, resume func(), err error)
}

// FailingHolder is a ReachedHolder that also tells when its hold will
// never be reached: on a GPU a host function "will not be called in the
// event of an error in the CUDA context" (cuLaunchHostFunc), so after a
// sticky error the cuda backend's hold never holds. failed receives the
// stream's error (wrapping ErrContextFailed) once the stream is known to
// have failed before the hold; a wait for reached should end then.
type FailingHolder interface {
	HoldFailing() (reached <-chan struct{}, failed <-chan error, resume func(), err error)
}

// Batcher is a stream that can queue several calls under one switch of the
// calling thread's context. Batch runs f on the calling goroutine with a
// view of the stream, which f must use on that goroutine only and not keep:
// the cuda backend makes its device's context current once, on an OS
// thread locked for f, and the view's copies and records then skip the
// cuCtxSetCurrent each call otherwise makes (after any other call of the
// backend that switched a context, a view's call makes its own current
// again). A small copy's cost is its driver calls: a copy and the record
// of an event after it take one switch, not two. Streams without it are
// used as they are.
type Batcher interface {
	Batch(f func(Stream) error) error
}

// Event marks a point in a stream.
type Event interface {
	// Synchronize waits until the event completes.
	Synchronize() error
	// Query reports whether the event has completed.
	Query() (bool, error)
	// Elapsed returns the time from start to this event; both must have
	// completed (ErrNotReady otherwise).
	Elapsed(start Event) (time.Duration, error)
	// Close releases the event.
	Close() error
}
