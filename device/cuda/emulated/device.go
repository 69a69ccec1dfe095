//go:build cuda && cudaemu && linux

package emulated

import (
	"fmt"
	"os"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// deviceOf returns device ordinal once the driver is initialized.
func deviceOf(ordinal int) (*device, cuResult) {
	if !drv.ready() {
		return nil, errNotInitialized
	}
	d := drv.device(ordinal)
	if d == nil {
		return nil, errInvalidDevice
	}
	return d, success
}

func deviceCount() (int, cuResult) {
	if !drv.ready() {
		return 0, errNotInitialized
	}
	return drv.cfg.devices, success
}

func deviceName(d *device) string {
	// driver.Info.Emulated knows the device by this name: what `cuarray
	// info` shows as the model, so nothing run on it passes for a GPU.
	return fmt.Sprintf("%s %d (the CPU: no GPU)", driver.EmulatedModel, d.ordinal)
}

// The device attributes the emulated driver reports (CUdevice_attribute);
// any other attribute of cuda.h's range is 0, as for a feature the device
// lacks. PAGEABLE_MEMORY_ACCESS (88) and ..._USES_HOST_PAGE_TABLES (100)
// are the option pageable-access's answer (pageable_access.go).
var attributes = map[int]int{
	1:   maxThreadsPerBlock,        // MAX_THREADS_PER_BLOCK
	2:   maxThreadsPerBlock,        // MAX_BLOCK_DIM_X
	3:   maxThreadsPerBlock,        // MAX_BLOCK_DIM_Y
	4:   maxBlockDimZ,              // MAX_BLOCK_DIM_Z
	5:   1<<31 - 1,                 // MAX_GRID_DIM_X
	6:   maxGridDimYZ,              // MAX_GRID_DIM_Y
	7:   maxGridDimYZ,              // MAX_GRID_DIM_Z
	8:   maxSharedPerBlock,         // MAX_SHARED_MEMORY_PER_BLOCK
	10:  32,                        // WARP_SIZE
	11:  maxPitch,                  // MAX_PITCH
	12:  65536,                     // MAX_REGISTERS_PER_BLOCK
	13:  1980000,                   // CLOCK_RATE, kHz: an H100 SXM's boost clock
	14:  512,                       // TEXTURE_ALIGNMENT
	16:  2,                         // MULTIPROCESSOR_COUNT
	19:  1,                         // CAN_MAP_HOST_MEMORY
	21:  maxArrayWidth,             // MAXIMUM_TEXTURE1D_WIDTH (array.go)
	22:  maxArrayWidth,             // MAXIMUM_TEXTURE2D_WIDTH
	23:  maxArrayHeight,            // MAXIMUM_TEXTURE2D_HEIGHT
	24:  maxArray3D,                // MAXIMUM_TEXTURE3D_WIDTH
	25:  maxArray3D,                // MAXIMUM_TEXTURE3D_HEIGHT
	26:  maxArray3D,                // MAXIMUM_TEXTURE3D_DEPTH
	38:  l2CacheBytes,              // L2_CACHE_SIZE
	41:  1,                         // UNIFIED_ADDRESSING
	51:  32,                        // TEXTURE_PITCH_ALIGNMENT
	75:  9,                         // COMPUTE_CAPABILITY_MAJOR
	76:  0,                         // COMPUTE_CAPABILITY_MINOR
	83:  1,                         // MANAGED_MEMORY (managed.go)
	89:  1,                         // CONCURRENT_MANAGED_ACCESS, as an H100 on Linux; 0 with managed=exclusive
	108: maxPersistingL2CacheBytes, // MAX_PERSISTING_L2_CACHE_SIZE (ctx_config.go)
}

// l2CacheBytes is the emulated H100's L2 cache: 50 MiB.
const l2CacheBytes = 50 << 20

// maxAttribute bounds cuda.h's CUdevice_attribute values.
const maxAttribute = 200

func deviceAttribute(attr, ordinal int) (int, cuResult) {
	if _, r := deviceOf(ordinal); r != success {
		return 0, r
	}
	if attr < 1 || attr >= maxAttribute {
		return 0, errInvalidValue
	}
	if attr == attrConcurrentManagedAccess && drv.cfg.exclusiveManaged {
		return 0, success
	}
	if v, ok := pageableAttribute(attr); ok {
		return v, success
	}
	return attributes[attr], success
}

// primaryState is cuDevicePrimaryCtxGetState: the flags set through
// cuDevicePrimaryCtxSetFlags and whether the context is active.
func primaryState(d *device) (flags uint32, active bool) {
	c := d.primary
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flags, c.refs > 0
}

// primarySetFlags is cuDevicePrimaryCtxSetFlags. Flags that name
// CU_CTX_MAP_HOST fail with CUDA_ERROR_INVALID_VALUE on an active context
// (driver 580 on an H100, 2026-11-23). Other flags: a driver of CUDA 11.0
// or newer sets them on an active context too (the H100, driver
// 580.159.04, 2026-11-27, conformance TestContexts: CUDA_SUCCESS), an
// older one fails with CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, as CUDA 10's
// reference page says.
func primarySetFlags(d *device, flags uint32) cuResult {
	if flags&^ctxFlagsMask != 0 || flags&ctxSchedMask > ctxBlockingSync || flags&ctxSchedMask == 3 {
		return errInvalidValue
	}
	c := d.primary
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs > 0 {
		if flags&ctxMapHost != 0 {
			return errInvalidValue
		}
		if drv.cfg.version < 11000 {
			return errPrimaryContextActive
		}
	}
	c.flags = flags
	return success
}

// contextFlags is cuCtxGetFlags. A primary context always reports
// CU_CTX_MAP_HOST, as the H100 did (driver 580.159.04, 2026-11-27) and as
// "all contexts behave as though the flag is enabled" since CUDA 11,
// unless configured with map-host=false: then only the flags set through
// cuDevicePrimaryCtxSetFlags. A context made by cuCtxCreate reports the
// flags it was made with: no GPU run has shown what a made context
// reports, and a program that checks for the flag it did not set must not
// pass here and fail there (a guess, the strict one; gorgonia.org/cu's
// own TestCUContext expects it).
func contextFlags() (uint32, cuResult) {
	c, _, r := current()
	if r != success {
		return 0, r
	}
	made.Lock()
	_, isMade := made.contexts[c]
	made.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if drv.cfg.mapHost && !isMade {
		return c.flags | ctxMapHost, success
	}
	return c.flags, success
}

// setCurrent is cuCtxSetCurrent: "If there exists a CUDA context stack on
// the calling CPU thread, this will replace the top of that stack with ctx.
// If ctx is NULL then this will be equivalent to popping the top of the
// calling CPU thread's CUDA context stack (or a no-op if the calling CPU
// thread's CUDA context stack is empty)" (cuda.h).
func setCurrent(h uintptr) cuResult {
	if !drv.ready() {
		return errNotInitialized
	}
	if h == 0 {
		popCurrent()
		return success
	}
	c, ok := lookup[*context](h)
	if !ok {
		return errInvalidContext
	}
	drv.setCurrent(c)
	return success
}

func ipcGetMemHandle(p uintptr) (driver.IPCHandle, cuResult) {
	c, dev, r := current()
	if r != success {
		return driver.IPCHandle{}, r
	}
	if hostAt(p, 1) != nil {
		return driver.IPCHandle{}, errInvalidValue
	}
	h, _, _, err := dev.IPCExport(devarray.Ptr(p))
	return h, c.codeOf(err)
}

// ipcOpenMemHandle maps another process's allocation: a handle of this
// process is CUDA_ERROR_INVALID_CONTEXT. A stale one (its exporter freed
// the allocation) maps whatever that memory holds now: the H100 opened one
// (driver 580.159.04, 2026-11-27, conformance TestIPC), so a program cannot
// rely on the driver to refuse it. Once the exporter has allocated the
// freed address again, the open maps the new allocation's bytes (sim's
// memory file holds them at the handle's offset): a guess, which
// conformance's TestObservations logs for a GPU run to confirm.
func ipcOpenMemHandle(h driver.IPCHandle, flags uint32) (uintptr, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	if flags&^1 != 0 {
		return 0, errInvalidValue
	}
	stale := dev.StaleIPCOpens()
	p, _, err := dev.IPCOpen(h)
	if dev.StaleIPCOpens() > stale {
		fmt.Fprintf(os.Stderr, "cuarray emulated driver: cuIpcOpenMemHandle opened a stale handle: its exporter freed the allocation, and what it maps is undefined (an H100 opened one too)\n")
	}
	return uintptr(p), c.codeOf(err)
}

func ipcCloseMemHandle(p uintptr) cuResult {
	c, dev, r := current()
	if r != success {
		return r
	}
	return c.codeOf(dev.IPCClose(devarray.Ptr(p)))
}
