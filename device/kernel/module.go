package kernel

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx/entry"
)

// Module is GPU code loaded on one device: PTX text or a fatbin. It is
// safe for concurrent use.
type Module struct {
	dev   driver.Device
	id    devarray.DeviceID
	mod   driver.Module
	deflt driver.Stream // the legacy default stream, which nil means
	// params are the parameters of each kernel, read from the image's
	// PTX; nil where it has none.
	params map[string][]entry.Param

	mu      sync.Mutex
	kernels map[string]*Kernel
	pending map[driver.Stream]*streamOps // async launches not yet let go, per stream
	events  driver.EventPool             // recorded and let go: reused by the next Op
	closed  bool
}

// Load loads a module image on dev: PTX text (what `nvcc -ptx` writes) or
// a fatbin (`nvcc -fatbin`). On a GPU the driver JIT-compiles the PTX for
// the GPU at hand, or runs the fatbin's machine code for it; on sim and
// the emulated driver the PTX is interpreted. PTX that does not load fails
// here with the JIT's log, or, interpreted, naming the instruction and
// line the interpreter cannot run. Close the module when done.
func Load(dev driver.Device, image string) (*Module, error) {
	if dev == nil {
		return nil, fmt.Errorf("kernel: load: no device: %w", driver.ErrInvalidValue)
	}
	r, ok := dev.(driver.KernelRunner)
	if !ok {
		return nil, fmt.Errorf("kernel: load: device %v cannot load modules: %w", dev.DeviceID(), driver.ErrInvalidValue)
	}
	if len(image) == 0 {
		return nil, fmt.Errorf("kernel: load: empty module image: %w", driver.ErrInvalidValue)
	}
	deflt, err := dev.ExternalStream(driver.LegacyDefaultStream)
	if err != nil {
		return nil, fmt.Errorf("kernel: load: the default stream of %v: %w", dev.DeviceID(), err)
	}
	mod, err := r.LoadModule(image)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("kernel: load on %v: %w", dev.DeviceID(), err), deflt.Close())
	}
	return &Module{dev: dev, id: dev.DeviceID(), mod: mod, deflt: deflt, params: kernelParams(image),
		kernels: make(map[string]*Kernel), pending: make(map[driver.Stream]*streamOps)}, nil
}

// LoadFile loads the module image in the file at path (PTX or a fatbin).
func LoadFile(dev driver.Device, path string) (*Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kernel: load: %w", err)
	}
	m, err := Load(dev, string(b))
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, path)
	}
	return m, nil
}

// Device returns the device the module is loaded on.
func (m *Module) Device() driver.Device { return m.dev }

// Kernel returns the kernel called name (its extern "C" name, or the
// mangled name a C++ kernel has in the PTX).
func (m *Module) Kernel(name string) (*Kernel, error) {
	if m == nil {
		return nil, fmt.Errorf("kernel: nil Module: %w", driver.ErrInvalidValue)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("kernel: %s: the module is closed: %w", name, driver.ErrClosed)
	}
	if k, ok := m.kernels[name]; ok {
		return k, nil
	}
	fn, err := m.mod.Function(name)
	if err != nil {
		return nil, fmt.Errorf("kernel: %s: %w", name, err)
	}
	k := &Kernel{m: m, name: name, fn: fn}
	k.params, k.checked = m.params[name]
	k.declared, _ = fn.(driver.DeclaredLauncher)
	m.kernels[name] = k
	return k, nil
}

// Close waits for the module's async launches, lets their arrays go and
// unloads the module; its kernels can no longer be launched. The errors of
// those launches are their streams' (Op.Wait, the stream's Synchronize),
// not Close's. Closing twice is harmless.
func (m *Module) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var ops []*Op
	for _, so := range m.pending {
		ops = append(ops, so.ops...)
	}
	m.pending = nil
	m.mu.Unlock()
	var errs []error
	for _, op := range ops {
		errs = append(errs, op.settle())
	}
	errs = append(errs, m.events.Close(), m.mod.Close(), m.deflt.Close())
	return errors.Join(errs...)
}

// stream returns the stream work for s runs on: s, or the default stream.
func (m *Module) stream(s driver.Stream) driver.Stream {
	if s == nil {
		return m.deflt
	}
	return s
}
