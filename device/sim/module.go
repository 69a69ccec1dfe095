package sim

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/fatbin"
	"github.com/cuarray/cuarray/device/ptx"
)

// LoadModule loads a module image, PTX text or a fatbin, whose PTX (of
// its highest architecture, decompressed) is used as a GPU's driver JIT-
// compiles a fatbin's PTX for a GPU it has no machine code for. Its
// kernels run through the PTX interpreter (device/ptx), every access
// checked against live memory as compute-sanitizer checks: an access
// outside it faults the device (driver.ErrContextFailed, sticky), as an
// illegal address faults a GPU's context. PTX the interpreter cannot run
// is refused here, naming the instruction and its line.
func (d *Device) LoadModule(image string) (driver.Module, error) {
	if err := d.checkFault("load module"); err != nil {
		return nil, err
	}
	text := image
	if b := []byte(image); fatbin.Is(b) {
		t, _, err := fatbin.PTX(b)
		if err != nil {
			return nil, fmt.Errorf("sim: load module: %w: %w", err, driver.ErrInvalidValue)
		}
		text = t
	}
	m, err := ptx.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("sim: load module: %w: %w", err, driver.ErrInvalidValue)
	}
	return &module{d: d, ptx: m}, nil
}

// PrefersReferences reports whether package kernels runs its Go references
// on d (the default) rather than its PTX (Config.PTXKernels, kernels=ptx).
func (d *Device) PrefersReferences() bool { return !d.cfg.PTXKernels }

// module is a loaded PTX module.
type module struct {
	d      *Device
	ptx    *ptx.Module
	mu     sync.Mutex
	closed bool
}

// Function returns the kernel called name.
func (m *module) Function(name string) (driver.Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("sim: function %s: the module is unloaded: %w", name, driver.ErrInvalidValue)
	}
	k, ok := m.ptx.Kernel(name)
	if !ok {
		return nil, fmt.Errorf("sim: no kernel %q in the module (it has %v): %w", name, m.ptx.Kernels(), driver.ErrInvalidValue)
	}
	return &function{m: m, k: k}, nil
}

// Close unloads the module; its functions can no longer be launched.
func (m *module) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// function is a kernel of a loaded module.
type function struct {
	m *module
	k *ptx.Kernel
}

var _ driver.DeclaredLauncher = (*function)(nil)

// Launch queues the kernel on stream s (nil: the default stream) and
// returns at once, as cuLaunchKernel does: LaunchDeclared with no arrays.
func (f *function) Launch(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs) error {
	return f.LaunchDeclared(grid, block, sharedBytes, s, args, nil)
}

// LaunchDeclared queues the kernel on stream s (nil: the default stream)
// and returns at once, as cuLaunchKernel does. The arguments must fill the
// kernel's parameters as the CUDA ABI lays them out (driver.KernelArgs
// does). arrays are the memory the array arguments point into: the stream
// race checker (check=streams) judges the launch by them, and the kernel
// is held to them (DeclaredArrays, ReadOnlyWatches): a write into a
// ReadOnly one, a read of a WriteFirst one's bytes before the launch
// writes them, an access outside them in their allocations, stops the
// kernel with an error naming its PTX line and the array (the stream's
// error, not sticky: a GPU would let the access pass). A
// race the checker finds is reported with the PTX line that first touches
// the bytes, found by running the kernel on zeroed scratch memory. A fault
// when the kernel runs is the stream's error and sticky. The launch is
// counted in the ledger with the bytes the kernel read and wrote.
func (f *function) LaunchDeclared(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs, arrays []driver.Range) error {
	f.m.mu.Lock()
	closed := f.m.closed
	f.m.mu.Unlock()
	name := f.k.Name
	if closed {
		return fmt.Errorf("sim: launch %s: the module is unloaded: %w", name, driver.ErrInvalidValue)
	}
	var buf []byte
	if args != nil {
		buf, _ = args.Bytes()
	}
	if len(buf) < f.k.ParamBytes {
		return fmt.Errorf("sim: launch %s: %d bytes of arguments, its parameters take %d: %w", name, len(buf), f.k.ParamBytes, driver.ErrInvalidValue)
	}
	l := ptx.Launch{Grid: grid, Block: block, DynamicShared: sharedBytes, Params: buf, Watches: ReadOnlyWatches(arrays), Arrays: DeclaredArrays(arrays)}
	d := f.m.d
	err := d.LaunchInterpreted(s, name, arrays, func(mem *KernelMemory) error {
		l.Global = mem
		st, err := f.k.Run(l)
		d.ledger.RecordLaunch(name, total(st.Read), total(st.Written))
		return kernelError(err)
	})
	var race *StreamRaceError
	if errors.As(err, &race) {
		return fmt.Errorf("%w\n  %s", err, f.locate(l, race))
	}
	return err
}

// ReadOnlyWatches are the interpreter's watches of the arrays a launch
// declared read-only: their bytes that no array the kernel may write
// declares too. A declaration is an array's extent, so a strided view
// the kernel writes may interleave with one it reads (a[::2] from
// a[1::2]); a write there is the written array's, not a violation.
func ReadOnlyWatches(arrays []driver.Range) []ptx.Watch {
	var w []ptx.Watch
	for _, r := range arrays {
		if !r.ReadOnly || r.N <= 0 {
			continue
		}
		spans := [][2]uint64{{uint64(r.Ptr), uint64(r.Ptr) + uint64(r.N)}}
		for _, x := range arrays {
			if x.ReadOnly || x.N <= 0 {
				continue
			}
			spans = subtract(spans, uint64(x.Ptr), uint64(x.Ptr)+uint64(x.N))
		}
		for _, s := range spans {
			w = append(w, ptx.Watch{Addr: s[0], N: s[1] - s[0], Kind: ptx.ReadOnlyWrite, Name: r.Name})
		}
	}
	return w
}

// DeclaredArrays are the interpreter's declarations of the arrays a
// launch declares: the kernel is held to each array's extent within its
// allocation, and to writing an Out array's bytes (WriteFirst) before it
// reads them; a Memory argument's (Raw) allocation is open to it.
func DeclaredArrays(arrays []driver.Range) []ptx.Array {
	if len(arrays) == 0 {
		return nil
	}
	out := make([]ptx.Array, 0, len(arrays))
	for _, r := range arrays {
		if r.N <= 0 {
			continue
		}
		a := ptx.Array{Addr: uint64(r.Ptr), N: uint64(r.N), Access: ptx.ReadWriteArray, Name: r.Name}
		switch {
		case r.Raw:
			a.Access = ptx.RawMemory
		case r.ReadOnly:
			a.Access = ptx.ReadArray
		case r.WriteFirst:
			a.Access = ptx.WriteArray
		}
		out = append(out, a)
	}
	return out
}

// subtract removes [lo, hi) from the spans.
func subtract(spans [][2]uint64, lo, hi uint64) [][2]uint64 {
	var out [][2]uint64
	for _, s := range spans {
		if hi <= s[0] || lo >= s[1] {
			out = append(out, s)
			continue
		}
		if s[0] < lo {
			out = append(out, [2]uint64{s[0], lo})
		}
		if hi < s[1] {
			out = append(out, [2]uint64{hi, s[1]})
		}
	}
	return out
}

// total sums a run's bytes per allocation.
func total(m map[uint64]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// locateRaceInstructions bounds the dry run that looks for a race's PTX line.
const locateRaceInstructions = 1 << 24

// locate names the PTX line and thread that first touch the bytes of a
// race the stream checker found at launch, by running the kernel on
// zeroed scratch copies of the memory it reaches (the racing work may be
// writing the real bytes): addresses that depend on the data may differ.
func (f *function) locate(l ptx.Launch, race *StreamRaceError) string {
	l.Global = &scratchMemory{d: f.m.d, bufs: map[uint64][]byte{}}
	l.Watches = []ptx.Watch{{Addr: uint64(race.Lo), N: uint64(race.Hi - race.Lo), Reads: race.Prev.Write, Kind: ptx.Watched, Name: "the racing bytes"}}
	l.Arrays = nil
	l.MaxInstructions = locateRaceInstructions
	_, err := f.k.Run(l)
	var fault *ptx.Fault
	if errors.As(err, &fault) && fault.Kind == ptx.Watched {
		op := "reads"
		if fault.Write {
			op = "writes"
		}
		return fmt.Sprintf("kernel %s first %s them at PTX line %d, %v (address %#x)", f.k.Name, op, fault.Line, fault.Thread, fault.Addr)
	}
	return fmt.Sprintf("kernel %s: a dry run on zeroed memory did not reach them (its addresses depend on its data), so no PTX line is named", f.k.Name)
}

// scratchMemory is zeroed memory shaped as the device's live allocations,
// for a dry run of a kernel that must not touch the real bytes.
type scratchMemory struct {
	d    *Device
	bufs map[uint64][]byte
}

func (m *scratchMemory) Lookup(addr uint64) (uint64, []byte, bool) {
	m.d.mu.RLock()
	base, mem, ok := m.d.resolve(addr)
	m.d.mu.RUnlock()
	if !ok {
		return 0, nil, false
	}
	b, ok := m.bufs[base]
	if !ok || len(b) != len(mem) {
		b = make([]byte, len(mem))
		m.bufs[base] = b
	}
	return base, b, true
}

// kernelError turns an interpreted kernel's error into sim's: a fault
// (an illegal or misaligned address, a trap, a barrier only part of a
// block reaches, which would never finish on a GPU) wraps
// driver.ErrContextFailed and is sticky, the device's fault, which
// LaunchKernel reports with its "sim: kernel" prefix; a shared-memory
// race, a bad launch configuration, a launch's declarations broken (a
// write into an In array, an access outside a declared array, a read of
// an Out array's bytes before the launch writes them) wraps
// driver.ErrInvalidValue and is the stream's alone.
func kernelError(err error) error {
	var f *ptx.Fault
	if err == nil || !errors.As(err, &f) {
		return err
	}
	switch f.Kind {
	case ptx.SharedRace, ptx.InvalidValue, ptx.LaunchOutOfResources, ptx.ReadOnlyWrite, ptx.OutsideExtent, ptx.UnwrittenRead:
		return fmt.Errorf("sim: kernel: %w: %w", err, driver.ErrInvalidValue)
	}
	return fmt.Errorf("%w: %w", err, driver.ErrContextFailed)
}
