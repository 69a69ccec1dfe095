//go:build cuda && cudaemu && linux

package emulated

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// Launch limits of the emulated GPU (an H100's).
const (
	maxThreadsPerBlock = 1024
	maxBlockDimZ       = 64
	maxGridDimYZ       = 65535
	maxSharedPerBlock  = 48 << 10
)

// module is a CUmodule: the kernels of a loaded image.
type module struct {
	handle  uintptr
	ctx     *context
	kernels map[string]*kernelInfo
	funcs   map[string]*function
}

// function is a CUfunction.
type function struct {
	handle uintptr
	mod    *module
	name   string
	info   *kernelInfo
}

// moduleLoad loads an image into the current context. A refused image
// returns its JIT log.
func moduleLoad(image []byte) (uintptr, string, cuResult) {
	c, _, r := current()
	if r != success {
		return 0, "", r
	}
	ks, ierr := parseImage(image)
	if ierr != nil {
		return 0, ierr.log, ierr.result
	}
	m := &module{ctx: c, kernels: ks, funcs: make(map[string]*function)}
	m.handle = drv.newHandle(m)
	c.own(m.handle)
	return m.handle, "", success
}

func moduleUnload(h uintptr) cuResult {
	if _, _, r := current(); r != success {
		return r
	}
	m, ok := lookup[*module](h)
	if !ok {
		return errInvalidHandle
	}
	drv.mu.Lock()
	delete(drv.handles, h)
	for _, f := range m.funcs {
		delete(drv.handles, f.handle)
	}
	drv.mu.Unlock()
	return success
}

func moduleGetFunction(h uintptr, name string) (uintptr, cuResult) {
	if _, _, r := current(); r != success {
		return 0, r
	}
	m, ok := lookup[*module](h)
	if !ok {
		return 0, errInvalidHandle
	}
	info, ok := m.kernels[name]
	if !ok {
		return 0, errNotFound
	}
	drv.mu.Lock()
	defer drv.mu.Unlock()
	if f, ok := m.funcs[name]; ok {
		return f.handle, success
	}
	f := &function{mod: m, name: name, info: info}
	f.handle = drv.newHandleLocked(f)
	m.funcs[name] = f
	m.ctx.mu.Lock()
	if m.ctx.owned != nil {
		m.ctx.owned[f.handle] = struct{}{}
	}
	m.ctx.mu.Unlock()
	return f.handle, success
}

// launch is cuLaunchKernel: it checks the configuration, gathers the
// parameters by the kernel's layout, and queues the kernel's Go reference
// on the stream. An access outside live memory or a misaligned one faults
// the context when the kernel runs, as on a GPU.
func launch(fh uintptr, grid, block [3]uint32, shared uint32, sh uintptr, params unsafe.Pointer, extra unsafe.Pointer) cuResult {
	c, dev, r := current()
	if r != success {
		return r
	}
	f, ok := lookup[*function](fh)
	if !ok || f.mod.ctx != c {
		return errInvalidHandle
	}
	s, r := c.stream(sh)
	if r != success {
		return r
	}
	threads := uint64(block[0]) * uint64(block[1]) * uint64(block[2])
	switch {
	case grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || threads == 0,
		grid[1] > maxGridDimYZ || grid[2] > maxGridDimYZ || block[2] > maxBlockDimZ:
		return errInvalidValue
	case threads > maxThreadsPerBlock || shared > maxSharedPerBlock:
		return errInvalidValue
	case extra != nil:
		return errNotSupported
	case params == nil && len(f.info.params) > 0:
		return errInvalidValue
	}
	buf := gatherParams(f.info.params, params)
	var em kernels.Emulation
	var err error
	if f.info.ptx {
		em, err = emulatePTX(f.name, f.info.body)
	} else {
		em, err = kernels.Emulate(f.name, buf)
	}
	if err != nil {
		return errNotSupported
	}
	return s.run(func(st driver.Stream) error {
		err := dev.LaunchFaulting(st, em.Ranges, func(mem [][]byte) error {
			if em.Misaligned != "" {
				c.fault(errMisalignedAddress)
				return fmt.Errorf("kernel %s: misaligned address: %s: %w", f.name, em.Misaligned, driver.ErrContextFailed)
			}
			return em.Run(mem)
		})
		if errors.Is(err, driver.ErrContextFailed) {
			// sim ran the kernel at once (nothing was queued before it),
			// but on a GPU the launch has returned before the kernel
			// faults: the fault shows from the next call on.
			return nil
		}
		return err
	})
}

// gatherParams copies each parameter from where kernelParams points into
// one buffer, at its offset in the kernel's parameter layout.
func gatherParams(ps []param, kernelParams unsafe.Pointer) []byte {
	end := 0
	for _, p := range ps {
		end = max(end, p.offset+p.size)
	}
	buf := make([]byte, end)
	if len(ps) == 0 {
		return buf
	}
	argv := unsafe.Slice((*unsafe.Pointer)(kernelParams), len(ps))
	for i, p := range ps {
		if argv[i] != nil {
			copy(buf[p.offset:p.offset+p.size], unsafe.Slice((*byte)(argv[i]), p.size))
		}
	}
	return buf
}
