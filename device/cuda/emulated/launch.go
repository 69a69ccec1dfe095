//go:build cuda && cudaemu && linux

package emulated

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx"
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
	ptx     *ptx.Module // the image's PTX, interpreted; nil for machine code alone
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
	img, ierr := parseImage(image)
	if ierr != nil {
		return 0, ierr.log, ierr.result
	}
	m := &module{ctx: c, kernels: img.kernels, ptx: img.ptx, funcs: make(map[string]*function)}
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
// parameters by the kernel's layout, and queues the kernel on the stream:
// its PTX through the interpreter (launchPTX), or, for an image of machine
// code alone or with kernels=go, the kernel's Go reference. An access
// outside live memory or a misaligned one faults the context when the
// kernel runs, as on a GPU.
func launch(fh uintptr, grid, block [3]uint32, shared uint32, sh uintptr, params unsafe.Pointer, extra unsafe.Pointer) cuResult {
	decl := takeDeclaration()
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
	case extra != nil && params != nil:
		// "The error CUDA_ERROR_INVALID_VALUE will be returned if kernel
		// parameters are specified with both kernelParams and extra."
		return errInvalidValue
	case params == nil && extra == nil && len(f.info.params) > 0:
		return errInvalidValue
	}
	var buf []byte
	if extra != nil {
		buf, r = extraParams(f.info.params, extra)
	} else {
		buf, r = gatherParams(f.info.params, params)
	}
	if r != success {
		return r
	}
	if f.info.prog != nil {
		return launchPTX(c, dev, s, f, grid, block, shared, buf, decl)
	}
	em, err := kernels.Emulate(f.name, buf)
	if err != nil {
		return errNotSupported
	}
	if decl != nil {
		decl.Ledger.RecordLaunch(f.name, -1, -1) // a Go reference: the bytes are not counted
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
// one buffer, at its offset in the kernel's parameter layout. The Driver
// API's cuLaunchKernel says: "If f has N parameters, then kernelParams
// needs to be an array of N pointers. Each of kernelParams[0] through
// kernelParams[N-1] must point to a region of memory from which the
// actual kernel parameter will be copied." An array that does not is
// CUDA_ERROR_INVALID_VALUE wherever the emulated driver can tell: a null
// array, a null entry, and an array or an entry that reaches memory not
// mapped (guardedRead), as an array shorter than N that ends at the end
// of its mapping does. An array shorter than N whose next words point
// into readable memory cannot be told from a whole one: the kernel reads
// what they point to, as a GPU's would.
func gatherParams(ps []param, kernelParams unsafe.Pointer) ([]byte, cuResult) {
	end := 0
	for _, p := range ps {
		end = max(end, p.offset+p.size)
	}
	buf := make([]byte, end)
	if len(ps) == 0 {
		return buf, success
	}
	if kernelParams == nil {
		return nil, errInvalidValue
	}
	r := guardedRead(func() cuResult {
		for i, p := range ps {
			arg := *(*unsafe.Pointer)(unsafe.Add(kernelParams, i*int(unsafe.Sizeof(kernelParams))))
			if arg == nil {
				return errInvalidValue
			}
			copy(buf[p.offset:p.offset+p.size], unsafe.Slice((*byte)(arg), p.size))
		}
		return success
	})
	if r != success {
		return nil, r
	}
	return buf, success
}

// guardedRead runs read, which reads memory a caller of the driver
// handed it (kernelParams, extra, what they point to), and answers
// CUDA_ERROR_INVALID_VALUE where that memory is not mapped: the fault
// panics on this goroutine (debug.SetPanicOnFault; a null or small
// address panics anyway) and is recovered, where it would otherwise end
// the process from inside a driver call.
func guardedRead(read func() cuResult) (r cuResult) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			r = errInvalidValue
		}
	}()
	return read()
}

// The markers of cuLaunchKernel's extra array (cuda.h).
const (
	launchParamEnd           = 0x00
	launchParamBufferPointer = 0x01
	launchParamBufferSize    = 0x02
)

// maxExtraEntries bounds the walk of an extra array that lacks its end
// marker: more pairs than any launch has are a malformed array.
const maxExtraEntries = 64

// extraParams reads the parameter buffer of cuLaunchKernel's extra array:
// pairs of a marker and a pointer, CU_LAUNCH_PARAM_BUFFER_POINTER (the
// buffer, laid out as the kernel's parameters are) and
// CU_LAUNCH_PARAM_BUFFER_SIZE (a pointer to its size_t size), ended by
// CU_LAUNCH_PARAM_END. The copy is taken now: "the kernelParams or extra
// array, as well as the argument values it points to, are copied during
// this call". A buffer shorter than the kernel's parameters, an unknown
// marker or a missing buffer is CUDA_ERROR_INVALID_VALUE: the
// documentation says only that the pointer without the size "will have
// no effect", so refusing what a kernel would read past is a guess, the
// strict one. An array, a size or a buffer in memory not mapped is
// CUDA_ERROR_INVALID_VALUE too (guardedRead).
func extraParams(ps []param, extra unsafe.Pointer) (buf []byte, r cuResult) {
	r = guardedRead(func() cuResult {
		buf, r = readExtra(ps, extra)
		return r
	})
	if r != success {
		return nil, r
	}
	return buf, success
}

// readExtra is extraParams, unguarded.
func readExtra(ps []param, extra unsafe.Pointer) ([]byte, cuResult) {
	want := 0
	for _, p := range ps {
		want = max(want, p.offset+p.size)
	}
	entry := func(i int) unsafe.Pointer { // read one at a time: the array's length is its end marker
		return *(*unsafe.Pointer)(unsafe.Add(extra, i*int(unsafe.Sizeof(extra))))
	}
	var ptr unsafe.Pointer
	size, haveSize := 0, false
	for i := 0; ; i += 2 {
		if i >= 2*maxExtraEntries {
			return nil, errInvalidValue
		}
		switch uintptr(entry(i)) {
		case launchParamEnd:
			if !haveSize || ptr == nil || size < want {
				if want == 0 && ptr == nil {
					return make([]byte, 0), success
				}
				return nil, errInvalidValue
			}
			buf := make([]byte, want)
			copy(buf, unsafe.Slice((*byte)(ptr), want))
			return buf, success
		case launchParamBufferPointer:
			ptr = entry(i + 1)
		case launchParamBufferSize:
			p := entry(i + 1)
			if p == nil {
				return nil, errInvalidValue
			}
			size, haveSize = int(*(*uintptr)(p)), true
		default:
			return nil, errInvalidValue
		}
	}
}
