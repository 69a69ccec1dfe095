// Package sim is an emulated CUDA device in host memory, like Numba's CUDA
// simulator: tests, CI and machines without a GPU run every cuarray package
// on it. It behaves as a device does where a program can tell — a fixed
// capacity, 256-byte aligned allocations, MemInfo, copies that check that
// device addresses lie inside live allocations, streams that run their work
// in order on their own goroutine, events with timestamps, page-locked and
// mapped host memory — and it records every operation in its ledger.
// Fault injection fails the Nth allocation or copy on purpose, so error
// paths can be tested. The stream race checker (Config.CheckStreams,
// "sim:0?check=streams") judges every operation by CUDA's ordering rules
// when it is queued and fails one that races with another
// (StreamRaceError), or that uses stream-ordered memory (MallocAsync,
// FreeAsync) outside its life: on another stream before the allocation
// is ordered before it, after its free on any stream, or freed while a
// use is not ordered before the free (StreamRaceError.Rule).
//
// Device memory is one shared mapping of a memory file (memfd), outside
// the Go heap, so device pointers are real addresses that stay valid until
// Free, other code in the process (NumPy through the array interface) can
// read them, and other processes can map an allocation through an IPC
// handle, as CUDA IPC lets them.
//
// Managed memory (MallocManaged) keeps where each 4 KiB page
// (ManagedPageSize) would live on a GPU. Work that touches pages resident
// elsewhere moves them when it has run: one fault and one page of copy per
// page touched per kernel, copy, memset or host access (a GPU groups
// faults its own way; the ledger's counts are sim's). On a device with
// concurrent managed access, as since Pascal on Linux, managed memory may
// exceed the device's memory: its bytes lie in a mapping of their own,
// filled only where touched, and when pages moving to the device would
// pass its free memory, the least recently moved there go back to the
// host, each a page of DtoH on the path "migrated" and one eviction in
// the ledger (managed_evict.go says which of this a GPU documents).
//
//	dev, err := sim.New(sim.Config{Memory: 256 << 20})
//	if err != nil { ... }
//	defer dev.Close()
//	a, err := devarray.FromHost(dev, []float32{1, 2, 3})
package sim

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Alignment is the alignment, in bytes, of every device allocation.
const Alignment = 256

// DefaultMemory is the capacity of a sim device when none is given: 4 GiB.
const DefaultMemory = 4 << 30

// CheckEnv names the environment variable that, set to "streams", turns
// the stream race checker (Config.CheckStreams) on for every sim device
// the process makes, the ones a program or test makes with its own spec
// or Config too: make test-latency sets it.
const CheckEnv = "CUARRAY_SIM_CHECK"

// Config configures a sim device.
type Config struct {
	Ordinal int   // the N of "sim:N"
	Memory  int64 // capacity in bytes; 0 means DefaultMemory
	// NoMapHost emulates a context without CU_CTX_MAP_HOST: a Mapped host
	// allocation then fails with driver.ErrNotMapped.
	NoMapHost bool
	// FailAlloc and FailCopy, when positive, make the Nth allocation or
	// copy (counting from 1) fail with driver.ErrInjected.
	FailAlloc, FailCopy int64
	// FailFault, when positive, makes the Nth copy, memset or kernel fault
	// as one that corrupts the context does on a GPU: every later call
	// fails with driver.ErrContextFailed until Close (see FailFault).
	FailFault int64
	// Latency, when positive, makes every operation on a stream (copy,
	// memset, kernel, event record) complete Latency after it is queued,
	// on the stream's own goroutine, as device work completes on a GPU
	// after the call that queued it has returned. Synchronous calls queue
	// their work on the default stream and wait for it, as they must on a
	// GPU, so a missing wait shows up as wrong data: "sim:0?latency=2ms".
	Latency time.Duration
	// Link, when set, models the host link's bandwidth (see Link).
	Link *Link
	// CheckStreams turns on the stream race checker ("check=streams"):
	// every copy, memset, kernel, free and host access is judged, when it
	// is queued, by CUDA's ordering rules, and one that races with an
	// earlier operation (overlapping bytes, at least one write, neither
	// ordered before the other) fails with a *StreamRaceError wrapping
	// driver.ErrStreamRace; so does a use of stream-ordered memory outside
	// its life (before its allocation, after its free, or a free while in
	// use). Off, it costs one nil check per call.
	CheckStreams bool
	// OpenStaleIPC opens an IPC handle whose allocation its exporter has
	// freed: IPCOpen maps the bytes at that place of the exporter's memory,
	// whatever they hold now, as the H100 did (driver 580.159.04,
	// 2026-11-27: cuIpcOpenMemHandle of a stale handle in another process
	// returned CUDA_SUCCESS). Off, such a handle is refused with
	// driver.ErrStaleIPCHandle. The emulated CUDA driver turns it on.
	OpenStaleIPC bool
	// PageableAsync lets a stream's copies with pageable host memory
	// return at once, as they did before sim followed the driver's rules
	// (pageable.go). The emulated CUDA driver sets it: it applies those
	// rules itself, and its pageable=early option turns them off.
	PageableAsync bool
	// PTXKernels makes package kernels run the project's kernels from
	// their PTX on this device, through the PTX interpreter, as the
	// emulated CUDA driver does ("kernels=ptx"). Off, the default, they
	// run as their Go references, 27 times faster: package kernels' tests
	// took 2.47 s on sim:0 and 66.6 s with kernels=ptx (CUARRAY_TEST_DEVICE=
	// 'sim:0?mem=256MiB&kernels=ptx' go test -count=1 ./kernels/, at
	// 8c8d95e, the machine busy), and sim runs every package's tests; the
	// emulated driver's run interprets them. A module a program loads
	// itself (LoadModule) is interpreted either way.
	PTXKernels bool
	// NoConcurrentManagedAccess makes the device one whose
	// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0, as GPUs before
	// Pascal and every GPU on Windows ("managed=exclusive"): the host may
	// not touch managed memory while the device runs work, and prefetches
	// to the device are refused. Off, the default, the device is as the
	// H100 and H200 on Linux: the host and device may touch it at once.
	NoConcurrentManagedAccess bool
	// PageableAccess is how the device reaches the program's pageable
	// host memory ("pageable-access=none|hmm|ats"): PageableNone, the
	// default, as most GPUs (those without HMM or ATS); with PageableHMM or
	// PageableATS its kernels read and write memory declared through
	// UsePageable (devarray.FromPageable) in place (pageable_access.go).
	PageableAccess driver.PageableAccess
}

// Device is an emulated device. It implements driver.Device.
type Device struct {
	cfg    Config
	ledger *accounting.Ledger
	memfd  int // the memory file behind mem, which other processes open through IPC handles
	base   uintptr
	ipc    *ipcState

	staleIPCOpens atomic.Int64 // stale handles IPCOpen opened (Config.OpenStaleIPC)

	*memory // the device memory and the page-locked host ranges; mu guards them

	mu       sync.RWMutex // Lock for allocator changes and Close; RLock while memory is touched
	arena    *arena
	closed   bool
	isClosed atomic.Bool // closed, for Closed without the lock

	legacy     *stream // the default stream: synchronous calls and kernels launched without a stream
	streamsMu  sync.Mutex
	streams    map[*stream]struct{}
	lastHandle uintptr // of the last stream made; handles start above the default streams'

	allocCountdown, copyCountdown atomic.Int64
	fault                         faultState

	check *streamChecker // the stream race checker, nil when off

	aliases aliases // the device addresses of registered and write-combined memory

	pools poolState // the stream-ordered pools (mempool.go)

	vmm     vmmState     // reservations and physical memory (vmm.go)
	managed managedState // the managed allocations (managed.go)
}

var _ driver.Device = (*Device)(nil)

// memory holds the bytes of a device: its memory (gigabytes) and its
// page-locked host ranges. They sit behind a pointer so that fmt, which
// prints a pointer inside a value as an address, never walks them, even
// when a Device is printed with a verb its String does not serve (%d) or
// as the unexported field of another value. d.mu guards them.
type memory struct {
	mem       []byte            // the device memory
	host      driver.HostRanges // page-locked host allocations
	requested map[int64]int64   // each live allocation's size as asked for, by its offset in mem
	inPlace   []pageableRange   // pageable host memory declared for kernels (UsePageable)
}

// New creates a sim device. Its memory is reserved, not committed: pages
// are only backed when written.
func New(cfg Config) (*Device, error) {
	if cfg.Memory == 0 {
		cfg.Memory = DefaultMemory
	}
	if cfg.Memory < Alignment || cfg.Ordinal < 0 || cfg.Latency < 0 {
		return nil, fmt.Errorf("sim: memory %d bytes, ordinal %d, latency %v: want at least %d bytes, a non-negative ordinal and latency: %w",
			cfg.Memory, cfg.Ordinal, cfg.Latency, Alignment, driver.ErrInvalidValue)
	}
	if err := cfg.Link.check(); err != nil {
		return nil, err
	}
	cfg.Memory = cfg.Memory / Alignment * Alignment
	mem, memfd, err := sharedMemory(fmt.Sprintf("cuarray-sim:%d", cfg.Ordinal), cfg.Memory)
	if err != nil {
		return nil, fmt.Errorf("sim: reserve %s of device memory: %w", accounting.FormatBytes(cfg.Memory), err)
	}
	d := &Device{
		cfg:     cfg,
		ledger:  accounting.NewLedger(fmt.Sprintf("sim:%d", cfg.Ordinal)),
		memory:  &memory{mem: mem, requested: make(map[int64]int64)},
		memfd:   memfd,
		ipc:     newIPCState(),
		base:    uintptr(unsafe.Pointer(unsafe.SliceData(mem))),
		arena:   newArena(cfg.Memory),
		streams: make(map[*stream]struct{}),
		// handles start above the default streams'
		lastHandle: 0xff,
	}
	if cfg.CheckStreams || os.Getenv(CheckEnv) == "streams" {
		d.check = newStreamChecker()
		d.check.aliases = &d.aliases
	}
	d.legacy = d.startStream(driver.LegacyDefaultStream, true)
	d.allocCountdown.Store(cfg.FailAlloc)
	d.copyCountdown.Store(cfg.FailCopy)
	d.fault.countdown.Store(cfg.FailFault)
	d.ledger.SetMemInfo(d.MemInfo)
	d.ledger.SetPools(d.poolStats)
	return d, nil
}

// DeviceID returns sim:N.
func (d *Device) DeviceID() devarray.DeviceID {
	return devarray.DeviceID{Kind: devarray.Sim, Ordinal: d.cfg.Ordinal}
}

// Info describes the device.
func (d *Device) Info() driver.Info {
	return driver.Info{
		Name:         d.DeviceID().String(),
		ID:           d.DeviceID(),
		Backend:      "sim",
		Model:        "cuarray simulated device (host memory)",
		TotalMemory:  d.cfg.Memory,
		Alignment:    Alignment,
		CanMapHost:   !d.cfg.NoMapHost,
		ContextFlags: d.contextFlags(),
		// HostLinkBandwidth is the modelled link's, if any.
		HostLinkBandwidth: d.cfg.Link.bandwidth(),
	}
}

// Ledger returns the device's ledger.
func (d *Device) Ledger() *accounting.Ledger { return d.ledger }

// MemInfo returns free and total device memory. Free is capacity less what
// is allocated and less the managed pages resident on the device (which an
// allocation may take: they are evicted at the next migration);
// fragmentation may keep a single allocation of that size from fitting.
func (d *Device) MemInfo() (free, total int64, err error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, 0, fmt.Errorf("sim: mem info: %w", driver.ErrClosed)
	}
	if err := d.checkFault("mem info"); err != nil {
		return 0, 0, err
	}
	free = d.managedRoom()
	return free - min(free, d.managed.residentBytes()), d.arena.size, nil
}

// FailAlloc makes the nth allocation from now (1 = the next) fail with
// driver.ErrInjected; 0 cancels.
func (d *Device) FailAlloc(n int64) { d.allocCountdown.Store(n) }

// FailCopy makes the nth copy or memset from now fail with driver.ErrInjected; 0 cancels.
func (d *Device) FailCopy(n int64) { d.copyCountdown.Store(n) }

// injected counts one operation down and reports whether it must fail.
func injected(c *atomic.Int64) bool {
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return n == 1
		}
	}
}

// complete runs f, the work of a synchronous call, as a GPU runs it: on
// the default stream, after the work queued there before it, and returns
// once it is done, with its error. With no latency and nothing queued on
// the default stream, f runs at once on the caller's goroutine.
func (d *Device) complete(f func() error) error {
	return d.completeChecked("", nil, f)
}

// completeChecked is complete for a synchronous call that the stream race
// checker judges as kind with accesses (kind "": not judged).
func (d *Device) completeChecked(kind string, accesses []access, f func() error) error {
	if err := d.checkFault("synchronous call"); err != nil {
		return err
	}
	if d.check != nil && kind != "" {
		if err := d.check.check(opSpec{kind: kind, l: d.check.legacy, accesses: accesses, hostWaitsAfter: true}); err != nil {
			return err
		}
	}
	if d.cfg.Latency <= 0 && d.legacy.pending.Load() == 0 {
		return safely(f)
	}
	result := make(chan error, 1)
	if err := d.legacy.enqueue(func() error { result <- safely(f); return nil }); err != nil {
		return err
	}
	upTo := d.legacy.logical.mark()
	err := <-result
	d.legacy.logical.synchronized(upTo) // the caller waited for the default stream's work up to its own
	return err
}

// Closed reports whether Close has been called: a cheap check for the
// memory of the device's arrays, buffers and pools.
func (d *Device) Closed() bool { return d.isClosed.Load() }

// ClosedFlag returns the flag Closed reads, to read in place (package pool
// checks it at every allocation).
func (d *Device) ClosedFlag() driver.ClosedFlag { return driver.NewClosedFlag(&d.isClosed) }

// Latency returns the time each stream operation takes to complete after
// it is queued (Config.Latency).
func (d *Device) Latency() time.Duration { return d.cfg.Latency }

// Synchronize waits for the work of every stream; after a fault it
// returns the fault, once the work running when it hit has stopped.
func (d *Device) Synchronize() error {
	if d.Closed() {
		return fmt.Errorf("sim: synchronize: %w", driver.ErrClosed)
	}
	if d.check != nil {
		defer d.check.hostWaitsForAll()
	}
	var first error
	for _, s := range d.streamList() {
		// A stream closed since the list was taken has no work left to wait for.
		if err := s.Synchronize(); err != nil && first == nil && !errors.Is(err, driver.ErrClosed) {
			first = err
		}
	}
	d.pools.synchronized(nil, nil)
	d.managed.orphaned.Store(false) // the context is synchronized: closed streams' work too
	if err := d.checkFault("synchronize"); err != nil {
		return err
	}
	return first
}

func (d *Device) streamList() []*stream {
	d.streamsMu.Lock()
	defer d.streamsMu.Unlock()
	out := make([]*stream, 0, len(d.streams))
	for s := range d.streams {
		out = append(out, s)
	}
	return out
}

// Close closes every stream, frees what is still allocated (recording the
// frees) and releases the device memory. Later calls return driver.ErrClosed.
func (d *Device) Close() error {
	for _, s := range d.streamList() {
		s.Close()
	}
	if !d.Closed() {
		d.closePools() // its blocks leave the arena before the arena's allocations are counted freed
		d.closeImportedPools()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.isClosed.Store(true)
	d.closeVMM() // its physical memory leaves the arena before the arena's allocations are counted freed
	d.freeAllMapped()
	for _, s := range d.arena.live {
		d.ledger.Free(d.forgetManaged(d.base+uintptr(s.off)), d.base+uintptr(s.off), s.size)
	}
	d.arena.live, d.arena.used = nil, 0
	for _, h := range d.host.TakeAll() {
		d.ledger.Free(h.Kind(), h.Addr, int64(len(h.Mem)))
		d.aliases.remove(h.DevAddr)
		if !h.Registered {
			syscall.Munmap(h.Mem)
		}
	}
	d.ipc.close(d)
	d.inPlace = nil // the program's memory: nothing to free
	err := syscall.Munmap(d.mem)
	syscall.Close(d.memfd)
	if err != nil {
		return fmt.Errorf("sim: release device memory: %w", err)
	}
	d.mem = nil
	return nil
}

// contextFlags emulates the flags of a CUDA primary context.
func (d *Device) contextFlags() string {
	if d.cfg.NoMapHost {
		return "sched_auto"
	}
	return "sched_auto|map_host"
}
