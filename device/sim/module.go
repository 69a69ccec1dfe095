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

// Launch queues the kernel on stream s (nil: the default stream) and
// returns at once, as cuLaunchKernel does. The arguments must fill the
// kernel's parameters as the CUDA ABI lays them out (driver.KernelArgs
// does). A fault when the kernel runs is the stream's error and sticky.
func (f *function) Launch(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs) error {
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
	l := ptx.Launch{Grid: grid, Block: block, DynamicShared: sharedBytes, Params: buf}
	return f.m.d.LaunchResolving(s, nil, func(resolve Resolver) error {
		l.Global = resolverMemory(resolve)
		_, err := f.k.Run(l)
		return kernelError(err)
	})
}

// resolverMemory is the memory an interpreted kernel reads and writes.
type resolverMemory Resolver

func (r resolverMemory) Lookup(addr uint64) (uint64, []byte, bool) { return r(addr) }

// kernelError turns an interpreted kernel's error into sim's: a fault
// (an illegal or misaligned address, a trap, a barrier only part of a
// block reaches, which would never finish on a GPU) wraps
// driver.ErrContextFailed and is sticky; a shared-memory race, a bad
// launch configuration, wraps driver.ErrInvalidValue and is the stream's
// alone.
func kernelError(err error) error {
	var f *ptx.Fault
	if err == nil || !errors.As(err, &f) {
		return err
	}
	switch f.Kind {
	case ptx.SharedRace, ptx.InvalidValue, ptx.LaunchOutOfResources:
		return fmt.Errorf("sim: kernel: %w: %w", err, driver.ErrInvalidValue)
	}
	return fmt.Errorf("sim: kernel: %w: %w", err, driver.ErrContextFailed)
}
