//go:build cuda

package cuda

/*
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/device/driver"
)

// module is PTX loaded into the device's context.
type module struct {
	d *Device
	m C.CUmodule

	mu     sync.Mutex
	closed bool
}

// function is one kernel of a module.
type function struct {
	mod  *module
	f    C.CUfunction
	name string
}

// LoadModule JIT-compiles PTX for the GPU (cuModuleLoadData). PTX built
// for compute_70 runs on every GPU from Volta on.
func (d *Device) LoadModule(ptx string) (driver.Module, error) {
	m := &module{d: d}
	err := d.call(func() error {
		var c int
		m.m, c = moduleLoadData(ptx)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: load module: %w", err)
	}
	return m, nil
}

// Function returns the kernel named name.
func (m *module) Function(name string) (driver.Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("cuda: function %q: %w", name, driver.ErrClosed)
	}
	fn := &function{mod: m, name: name}
	err := m.d.call(func() error {
		var c int
		fn.f, c = moduleGetFunction(m.m, name)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: function %q: %w", name, err)
	}
	return fn, nil
}

// Close unloads the module; its functions must not be launched afterwards.
func (m *module) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	return m.d.call(func() error { return check(moduleUnload(m.m)) })
}

// Launch queues the kernel on s (nil: the legacy default stream).
func (fn *function) Launch(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs) error {
	var cs C.CUstream
	if s != nil {
		st, ok := s.(*stream)
		if !ok || st.d != fn.mod.d {
			return fmt.Errorf("cuda: launch %s: the stream is not from this device: %w", fn.name, driver.ErrInvalidValue)
		}
		cs = cstream(st.s)
	}
	var params []byte
	var offsets []int
	if args != nil {
		params, offsets = args.Bytes()
	}
	fn.mod.mu.Lock()
	defer fn.mod.mu.Unlock()
	if fn.mod.closed {
		return fmt.Errorf("cuda: launch %s: module unloaded: %w", fn.name, driver.ErrClosed)
	}
	err := fn.mod.d.call(func() error { return check(launch(fn.f, grid, block, sharedBytes, cs, params, offsets)) })
	if err != nil {
		return fmt.Errorf("cuda: launch %s grid %v block %v: %w", fn.name, grid, block, err)
	}
	return nil
}
