//go:build cuda

package cuda

/*
#include <cuda.h>
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cuarray/cuarray/device/driver"
)

// modules is what a device loaded into its context: each module image is
// loaded once (cuModuleLoadDataEx) and stays loaded until the device
// closes, however many times it is loaded and closed through LoadModule
// (every kernels.New, so every Copier and transfer.Copy that packs, loads
// the same embedded image).
type modules struct {
	// mu is held for reading while a kernel launches or a function is
	// looked up, and for writing while an image loads or all unload.
	mu     sync.RWMutex
	byKey  map[imageKey]*image
	loaded []*image
	closed bool
}

// imageKey names an image by where its bytes are: an embedded image is
// found without reading its bytes; another string with the same bytes is
// found by comparing them, once.
type imageKey struct {
	data *byte
	n    int
}

// image is one loaded module.
type image struct {
	src   string
	m     C.CUmodule
	refs  int // LoadModule handles not yet closed
	fmu   sync.Mutex
	funcs map[string]C.CUfunction
}

// module is the handle LoadModule returns: Close ends this handle, not
// the loaded module.
type module struct {
	d      *Device
	img    *image
	closed atomic.Bool
}

// function is one kernel of a module.
type function struct {
	mod  *module
	f    C.CUfunction
	name string
}

var _ driver.DeclaredLauncher = (*function)(nil)

// LoadModule loads a module image into the device's context: a fatbin
// (kernels' embedded one: sm_90 machine code, which H100 and H200 run
// without JIT, and compute_70 PTX, which the driver compiles for any
// other GPU from Volta on), a cubin or PTX text. The image is loaded once
// per device: a second LoadModule of it returns a new handle on the same
// module, which stays loaded until the device closes. When loading fails,
// the error carries the JIT's error and info logs.
func (d *Device) LoadModule(image string) (driver.Module, error) {
	if err := d.closedErr("load module"); err != nil {
		return nil, err
	}
	img, err := d.mods.load(d, image)
	if err != nil {
		return nil, fmt.Errorf("cuda: load module (%d-byte %s): %w", len(image), imageKind(image), err)
	}
	return &module{d: d, img: img}, nil
}

// load returns the loaded module of image, loading it the first time.
func (ms *modules) load(d *Device, src string) (*image, error) {
	if len(src) == 0 {
		return nil, fmt.Errorf("empty image: %w", driver.ErrInvalidValue)
	}
	key := imageKey{unsafe.StringData(src), len(src)}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.closed {
		return nil, driver.ErrClosed
	}
	if img, ok := ms.byKey[key]; ok {
		img.refs++
		return img, nil
	}
	if ms.byKey == nil {
		ms.byKey = make(map[imageKey]*image)
	}
	for _, img := range ms.loaded {
		if img.src == src {
			ms.byKey[key] = img
			img.refs++
			return img, nil
		}
	}
	img := &image{src: src, refs: 1, funcs: make(map[string]C.CUfunction)}
	var errLog, infoLog string
	err := d.call(func() error {
		var c int
		img.m, errLog, infoLog, c = moduleLoad(src)
		return check(c)
	})
	if err != nil {
		return nil, withJITLog(err, errLog, infoLog)
	}
	ms.byKey[key] = img
	ms.loaded = append(ms.loaded, img)
	return img, nil
}

// withJITLog adds the JIT's logs to a load error.
func withJITLog(err error, errLog, infoLog string) error {
	var logs []string
	if s := strings.TrimSpace(errLog); s != "" {
		logs = append(logs, "JIT error log:\n"+s)
	}
	if s := strings.TrimSpace(infoLog); s != "" {
		logs = append(logs, "JIT info log:\n"+s)
	}
	if len(logs) == 0 {
		return fmt.Errorf("%w (the JIT wrote no log)", err)
	}
	return fmt.Errorf("%w\n%s", err, strings.Join(logs, "\n"))
}

// imageKind names what an image holds, for errors.
func imageKind(src string) string {
	switch {
	case len(src) >= 4 && binary.LittleEndian.Uint32([]byte(src[:4])) == fatbinMagic:
		return "fatbin"
	case strings.HasPrefix(src, "\x7fELF"):
		return "cubin"
	}
	return "PTX"
}

// fatbinMagic starts a fatbin file (nvcc -fatbin).
const fatbinMagic = 0xBA55ED50

// unloadAll unloads every module (the device is closing): handles still
// open fail from then on with driver.ErrClosed.
func (ms *modules) unloadAll(d *Device) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.closed = true
	var first error
	for _, img := range ms.loaded {
		if err := d.callAlways(func() error { return check(moduleUnload(img.m)) }); err != nil && first == nil {
			first = fmt.Errorf("unload module: %w", err)
		}
	}
	ms.loaded, ms.byKey = nil, nil
	return first
}

// refs returns how many open handles the image of src has (for tests).
func (ms *modules) refs(src string) int {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	for _, img := range ms.loaded {
		if img.src == src {
			return img.refs
		}
	}
	return 0
}

// Function returns the kernel named name.
func (m *module) Function(name string) (driver.Function, error) {
	if m.closed.Load() {
		return nil, fmt.Errorf("cuda: function %q: %w", name, driver.ErrClosed)
	}
	ms := &m.d.mods
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	if ms.closed {
		return nil, fmt.Errorf("cuda: function %q: module unloaded: %w", name, driver.ErrClosed)
	}
	img := m.img
	img.fmu.Lock()
	defer img.fmu.Unlock()
	if f, ok := img.funcs[name]; ok {
		return &function{mod: m, f: f, name: name}, nil
	}
	var f C.CUfunction
	err := m.d.call(func() error {
		var c int
		f, c = moduleGetFunction(img.m, name)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: function %q: %w", name, err)
	}
	img.funcs[name] = f
	return &function{mod: m, f: f, name: name}, nil
}

// Close ends this handle: its functions must not be launched afterwards.
// The module stays loaded for the device's other users until the device
// closes. Closing twice is harmless.
func (m *module) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	ms := &m.d.mods
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m.img.refs--
	return nil
}

// Launch queues the kernel on s (nil: the legacy default stream).
func (fn *function) Launch(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs) error {
	return fn.launch(grid, block, sharedBytes, s, args, nil)
}

// LaunchDeclared queues the kernel on s (nil: the legacy default stream)
// and counts it in the device's ledger. On a GPU the arrays are not seen
// by the driver, and the ledger counts the launch without bytes; on the
// emulated driver they go with the launch (declareLaunch), which checks
// them and counts the bytes the interpreted kernel read and wrote. Inside
// a stream's Batch (a batch view as s) the launch shares the batch's
// context switch.
func (fn *function) LaunchDeclared(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs, arrays []driver.Range) error {
	if arrays == nil {
		arrays = []driver.Range{}
	}
	return fn.launch(grid, block, sharedBytes, s, args, arrays)
}

// launch queues the kernel; arrays non-nil is a declared launch.
func (fn *function) launch(grid, block [3]uint32, sharedBytes uint32, s driver.Stream, args *driver.KernelArgs, arrays []driver.Range) error {
	var cs C.CUstream
	call := fn.mod.d.call
	if s != nil {
		st, ok := streamOf(s)
		if !ok || st.d != fn.mod.d {
			return fmt.Errorf("cuda: launch %s: the stream is not from this device: %w", fn.name, driver.ErrInvalidValue)
		}
		cs = cstream(st.s)
		if b, ok := s.(*batchStream); ok {
			call = b.call
		}
	}
	var params []byte
	var offsets []int
	if args != nil {
		params, offsets = args.Bytes()
	}
	if fn.mod.closed.Load() {
		return fmt.Errorf("cuda: launch %s: module closed: %w", fn.name, driver.ErrClosed)
	}
	ms := &fn.mod.d.mods
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	if ms.closed {
		return fmt.Errorf("cuda: launch %s: module unloaded: %w", fn.name, driver.ErrClosed)
	}
	led := fn.mod.d.Ledger()
	counted := false
	err := call(func() error {
		if arrays != nil {
			counted = declareLaunch(arrays, led)
		}
		return check(launch(fn.f, grid, block, sharedBytes, cs, params, offsets))
	})
	if err != nil {
		return fmt.Errorf("cuda: launch %s grid %v block %v: %w", fn.name, grid, block, err)
	}
	if arrays != nil && !counted {
		led.RecordLaunch(fn.name, -1, -1)
	}
	return nil
}
