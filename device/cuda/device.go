//go:build cuda

// Package cuda is cuarray's real GPU backend, on gorgonia.org/cu and a few
// cgo bindings of its own. It is built only with -tags cuda. Upstream
// gorgonia.org/cu calls cuInit in its package init and exits the process when
// no GPU answers, and links libcuda; cuarray builds against a copy that loads
// libcuda.so.1 and calls cuInit on first use (go.mod's replace,
// third_party/gorgonia-cu/PATCH.md), so a program built with the tag starts
// anywhere, driver or not: Init (from the first NumDevices or Open) starts the
// driver, and no GPU or no driver is an *InitError wrapping driver.ErrNoDevice.
//
// A Device uses the GPU's primary context (the one the runtime API,
// PyTorch and CuPy use, so pointers pass between them in one process); it
// maps host memory (drivers before CUDA 11.0: with CU_CTX_MAP_HOST set
// before the context first becomes active). The
// driver's current context belongs to an OS thread and goroutines move
// between threads, so every driver call runs through Device.call: it locks
// the goroutine to its thread, makes the context current there (a cheap
// thread-local store in the driver) and unlocks afterwards. Any goroutine
// may therefore call any method, and many may call at once; the cost per
// call is measured by BenchmarkCallOverhead.
package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Alignment is the alignment the driver gives every device allocation; the
// ledger counts allocations rounded up to it, as the sim backend does.
const Alignment = 256

// Device is one GPU. It implements driver.Device and driver.KernelRunner.
type Device struct {
	ordinal int
	dev     cu.Device
	ctx     cu.CUContext
	info    driver.Info
	ledger  *accounting.Ledger

	mu       sync.Mutex
	*live    // device allocations and page-locked host memory; mu guards them
	streams  map[*stream]struct{}
	closed   bool
	isClosed atomic.Bool // closed, for Closed without the lock

	ipc   ipcTable  // other processes' allocations opened here
	mods  modules   // the module images loaded into the context
	peeks peekState // what Peek reads through
}

// live is what a device has allocated: thousands of allocations, and
// page-locked host memory as byte slices. It sits behind a pointer so that
// fmt, which prints a pointer inside a value as an address, never walks it,
// even when a Device is printed with a verb its String does not serve (%d)
// or as the unexported field of another value.
type live struct {
	allocs map[devarray.Ptr]int64 // live device allocations and their counted sizes
	async  map[devarray.Ptr]int64 // live stream-ordered allocations and their counted sizes
	// managed are the allocations of allocs that are managed memory
	// (MallocManaged), each with the bytes it was asked for.
	managed map[devarray.Ptr]int64
	pools   []*memPool        // the pools NewMemPool made and the default one, once asked for
	host    driver.HostRanges // live page-locked host memory
	vmm     vmmLive           // reservations, physical memory and mappings (vmm.go)
}

var (
	_ driver.Device       = (*Device)(nil)
	_ driver.KernelRunner = (*Device)(nil)
)

// NumDevices initializes the driver (Init) and returns how many GPUs it sees.
func NumDevices() (int, error) {
	if err := Init(); err != nil {
		return 0, err
	}
	n, err := cu.NumDevices()
	return n, fromCu(err)
}

// Open retains GPU ordinal's primary context, which can map host memory
// (see retainPrimary): with a driver of CUDA 11.0 or newer every context
// can, whatever flags it reports. With an older driver, if another library
// made the context active first without CU_CTX_MAP_HOST, Open still
// succeeds, Info().CanMapHost is false, and a Mapped host allocation fails
// with driver.ErrNotMapped.
//
// A sticky error (an illegal address, a misaligned address or a failed
// launch in a kernel: CUDA_ERROR_ILLEGAL_ADDRESS, MISALIGNED_ADDRESS,
// LAUNCH_FAILED) ends the process's use of the GPU: "To continue using
// CUDA, the process must be terminated and relaunched" (cuda.h). Closing
// the Device and opening it again does not give it back: Open of a GPU
// that failed so in this process returns an error wrapping
// driver.ErrContextFailed that says the process must be restarted. A
// program that must outlive such a fault runs its GPU work in a child
// process.
func Open(ordinal int) (*Device, error) {
	n, err := NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda:%d: the driver sees %d GPU(s): %w", ordinal, n, driver.ErrNoDevice)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, fromCu(err))
	}
	ctx, err := retainPrimary(dev)
	if err != nil {
		return nil, openErr(ordinal, err)
	}
	d := &Device{
		ordinal: ordinal,
		dev:     dev,
		ctx:     ctx,
		ledger:  accounting.NewLedger(fmt.Sprintf("cuda:%d", ordinal)),
		live:    &live{allocs: make(map[devarray.Ptr]int64), async: make(map[devarray.Ptr]int64), managed: make(map[devarray.Ptr]int64)},
		streams: make(map[*stream]struct{}),
	}
	if err := d.describe(); err != nil {
		dev.ReleasePrimaryCtx()
		if errors.Is(err, driver.ErrContextFailed) {
			return nil, openErr(ordinal, err)
		}
		return nil, err
	}
	d.ledger.SetMemInfo(d.MemInfo)
	d.ledger.SetPools(d.poolStats)
	return d, nil
}

// openErr wraps the error with which Open of GPU ordinal failed: a sticky
// error says that the process must be restarted to use the GPU again.
func openErr(ordinal int, err error) error {
	if errors.Is(err, driver.ErrContextFailed) {
		return fmt.Errorf("cuda:%d: the GPU failed earlier in this process with a sticky error, which ends the process's use of it: restart the process to use it again: %w", ordinal, err)
	}
	return fmt.Errorf("cuda:%d: %w", ordinal, err)
}

// call runs f on an OS thread where the device's context is current, or
// returns driver.ErrClosed once Close has begun: making the primary context
// current still succeeds after Close while another library holds it, and f
// would then run on memory the device has freed.
func (d *Device) call(f func() error) error {
	if d.isClosed.Load() {
		return fmt.Errorf("device %v: %w", d.DeviceID(), driver.ErrClosed)
	}
	return d.callAlways(f)
}

// callAlways is call for Close and what it calls, and for letting go of
// what the device made (events): it runs f after Close has begun too.
//
// A result f returns is mapped with the context known to be current:
// CUDA_ERROR_INVALID_CONTEXT then means a handle f passed (a stream, an
// event, a peer's context) belongs to another or a destroyed context, an
// invalid argument, not that this device is closed; and a function the
// installed driver lacks is a *MissingFunctionError.
func (d *Device) callAlways(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("make the context current: %w", fromCu(err))
	}
	contextSwitches.Add(1)
	return inContext(f())
}

// describe fills in d.info.
func (d *Device) describe() error {
	return d.call(func() error {
		name, err := d.dev.Name()
		if err != nil {
			return fmt.Errorf("cuda:%d: name: %w", d.ordinal, fromCu(err))
		}
		total, err := d.dev.TotalMem()
		if err != nil {
			return fmt.Errorf("cuda:%d: total memory: %w", d.ordinal, fromCu(err))
		}
		flags, c := ctxFlags()
		if err := check(c); err != nil {
			return fmt.Errorf("cuda:%d: context flags: %w", d.ordinal, err)
		}
		major, minor, _ := d.dev.ComputeCapability()
		v := cu.Version()
		// The memory's peak: clock (kHz) × bus width (bits) × 2 (double
		// data rate) / 8 bits. An attribute the driver does not give
		// leaves it 0, unknown. The host link's generation and width are
		// not driver attributes: HostLinkBandwidth stays 0 and the bench
		// takes it from -pcie or its table of known models.
		var memBandwidth float64
		if clock, err := d.dev.Attribute(cu.MemoryClockRate); err == nil && clock > 0 {
			if width, err := d.dev.Attribute(cu.GlobalMemoryBusWidth); err == nil && width > 0 {
				memBandwidth = float64(clock) * 1e3 * float64(width) * 2 / 8
			}
		}
		d.info = driver.Info{
			Name:         fmt.Sprintf("cuda:%d", d.ordinal),
			ID:           d.DeviceID(),
			Backend:      "cuda",
			Model:        fmt.Sprintf("%s (compute capability %d.%d)", name, major, minor),
			TotalMemory:  total,
			Alignment:    Alignment,
			CanMapHost:   flags&uint32(cu.MapHost) != 0 || mapHostImplicit(),
			ContextFlags: contextFlagsString(flags),
			Driver:       fmt.Sprintf("CUDA %d.%d (driver API %d)", v/1000, v%1000/10, v),
			// MemoryBandwidth: 2619 MHz × 5120 bits × 2 / 8 = 3352 GB/s on an H100 SXM.
			MemoryBandwidth: memBandwidth,
		}
		return nil
	})
}

// contextFlagsString names a context's flags, "sched_auto|map_host".
func contextFlagsString(f uint32) string {
	var names []string
	switch cu.ContextFlags(f) & cu.SchedMask {
	case cu.SchedAuto:
		names = append(names, "sched_auto")
	case cu.SchedSpin:
		names = append(names, "sched_spin")
	case cu.SchedYield:
		names = append(names, "sched_yield")
	case cu.SchedBlockingSync:
		names = append(names, "sched_blocking_sync")
	}
	if f&uint32(cu.MapHost) != 0 {
		names = append(names, "map_host")
	}
	if f&uint32(cu.LMemResizeToMax) != 0 {
		names = append(names, "lmem_resize_to_max")
	}
	return strings.Join(names, "|")
}

// DeviceID returns cuda:N.
func (d *Device) DeviceID() devarray.DeviceID {
	return devarray.DeviceID{Kind: devarray.CUDA, Ordinal: d.ordinal}
}

// Info describes the GPU, its driver and its context's flags.
func (d *Device) Info() driver.Info { return d.info }

// Ledger returns the device's ledger.
func (d *Device) Ledger() *accounting.Ledger { return d.ledger }

// MemInfo returns the driver's free and total device memory.
func (d *Device) MemInfo() (free, total int64, err error) {
	err = d.call(func() error {
		var e error
		free, total, e = cu.MemInfo()
		return fromCu(e)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: mem info: %w", err)
	}
	return free, total, nil
}

// Synchronize waits for all work on the device.
func (d *Device) Synchronize() error {
	if err := d.call(func() error { return fromCu(cu.Synchronize()) }); err != nil {
		return fmt.Errorf("cuda: synchronize: %w", err)
	}
	flushManaged(d.ledger) // on a GPU, CUPTI's count of managed memory migrated, now complete
	return nil
}

// Close waits for the device's work, closes its streams, frees what is still
// allocated (recording the frees) and releases the primary context. Later
// calls return driver.ErrClosed.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.isClosed.Store(true)
	streams := d.streams
	d.streams = nil
	allocs, managed := d.allocs, d.managed
	d.allocs, d.managed = nil, nil
	async, pools := d.async, d.pools
	d.async, d.pools = nil, nil
	vmm := d.vmm
	d.vmm = vmmLive{}
	host := d.host.TakeAll()
	d.mu.Unlock()

	first := d.callAlways(func() error { return fromCu(cu.Synchronize()) })
	if first != nil {
		first = fmt.Errorf("synchronize: %w", first)
	}
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for s := range streams {
		keep(s.destroy())
	}
	keep(d.closePools(async, pools))
	keep(d.closeVMM(vmm))
	keep(d.mods.unloadAll(d))
	keep(d.ipc.closeAll(d))
	keep(d.callAlways(func() error {
		var err error
		for p, size := range allocs {
			if e := fromCu(cu.MemFree(cu.DevicePtr(p))); e != nil && err == nil {
				err = e
			}
			d.ledger.Free(kindIn(managed, p), uintptr(p), size)
		}
		for _, h := range host {
			release, kind := memFreeHost, h.Kind()
			if h.Registered {
				release = memHostUnregister
			}
			if e := check(release(ptrOf(h.Mem))); e != nil && err == nil {
				err = e
			}
			d.ledger.Free(kind, h.Addr, int64(len(h.Mem)))
		}
		return err
	}))
	keep(d.callAlways(d.peeks.release))
	keep(fromCu(d.dev.ReleasePrimaryCtx()))
	if first != nil {
		return fmt.Errorf("cuda: close %v: %w", d.DeviceID(), first)
	}
	return nil
}

// Closed reports whether Close has been called.
func (d *Device) Closed() bool { return d.isClosed.Load() }

// ClosedFlag returns the flag Closed reads, to read in place (package pool
// checks it at every allocation).
func (d *Device) ClosedFlag() driver.ClosedFlag { return driver.NewClosedFlag(&d.isClosed) }

// closedErr returns driver.ErrClosed, wrapped with op, once the device is closed.
func (d *Device) closedErr(op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("cuda: %s: %w", op, driver.ErrClosed)
	}
	return nil
}
