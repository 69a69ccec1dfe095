//go:build cuda && cudaemu && linux

package emulated

// A context's limits (cuCtxGetLimit, cuCtxSetLimit), its preferred cache
// configuration (cuCtxGetCacheConfig, cuCtxSetCacheConfig,
// cuFuncSetCacheConfig) and its shared memory bank size
// (cuCtxGetSharedMemConfig, cuCtxSetSharedMemConfig,
// cuFuncSetSharedMemConfig), for primary and made contexts alike.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/device/sim"
)

// errUnsupportedLimit is CUDA_ERROR_UNSUPPORTED_LIMIT.
const errUnsupportedLimit = cuResult(C.CUDA_ERROR_UNSUPPORTED_LIMIT)

func init() {
	resultText[errUnsupportedLimit] = [2]string{"CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture"}
}

// The limits (CUlimit).
const (
	limitStackSize            = 0
	limitPrintfFIFOSize       = 1
	limitMallocHeapSize       = 2
	limitDevRuntimeSyncDepth  = 3
	limitDevRuntimePending    = 4
	limitMaxL2FetchGranular   = 5
	limitPersistingL2Cache    = 6
	limitCount                = 7
	maxDevRuntimeSyncDepth    = 24
	maxL2FetchGranularity     = 128
	maxPersistingL2CacheBytes = l2CacheBytes * 3 / 4 // MAX_PERSISTING_L2_CACHE_SIZE (device.go's attributes): three quarters of L2, a guess
)

// defaultLimits are a new context's limits: what an H100 reports (stack
// 1 KiB, printf FIFO 1 MiB, malloc heap 8 MiB, the documented "two levels
// of grids" and "default (2048 launches)"; the L2 fetch granularity of 32
// bytes and no persisting L2 are guesses).
var defaultLimits = [limitCount]uint64{1024, 1 << 20, 8 << 20, 2, 2048, 32, 0}

// Cache and shared memory configurations (CUfunc_cache, CUsharedconfig).
const (
	cachePreferNone  = 0
	cachePreferEqual = 3
	bankDefault      = 0
	bankFourByte     = 1
	bankEightByte    = 2
)

// ctxSettings are a context's limits and configurations in one activation.
type ctxSettings struct {
	activation *sim.Device // the activation they belong to: a reset context starts again from the defaults
	limits     [limitCount]uint64
	cache      int
}

// settings holds each context's settings, and funcCache each function's
// cache configuration (cuFuncSetCacheConfig).
var settings = struct {
	sync.Mutex
	ctx       map[*context]*ctxSettings
	funcCache map[*function]int
}{ctx: make(map[*context]*ctxSettings), funcCache: make(map[*function]int)}

// settingsOf returns the settings of c in its activation dev, made with the
// defaults the first time. The caller holds settings.
func settingsOf(c *context, dev *sim.Device) *ctxSettings {
	s := settings.ctx[c]
	if s == nil || s.activation != dev {
		s = &ctxSettings{activation: dev, limits: defaultLimits, cache: cachePreferNone}
		settings.ctx[c] = s
	}
	return s
}

// forgetSettings drops the settings of a destroyed context.
func forgetSettings(c *context) {
	settings.Lock()
	defer settings.Unlock()
	delete(settings.ctx, c)
}

// ctxGetLimit is cuCtxGetLimit of the current context. A limit cuda.h does
// not name is CUDA_ERROR_UNSUPPORTED_LIMIT ("the CUlimit passed to the API
// call is not supported by the active device").
func ctxGetLimit(limit int) (uint64, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	if limit < 0 || limit >= limitCount {
		return 0, errUnsupportedLimit
	}
	settings.Lock()
	defer settings.Unlock()
	return settingsOf(c, dev).limits[limit], success
}

// ctxSetLimit is cuCtxSetLimit: "The driver is free to modify the requested
// value to meet h/w requirements (this could be clamping to minimum or
// maximum values, rounding up to nearest element size, etc)" (cuda.h). The
// emulated driver keeps the value but for these:
//
//   - CU_LIMIT_STACK_SIZE: "Setting this value will take effect immediately,
//     and if necessary, the device will block until all preceding requested
//     tasks are complete": the call waits for the context's work.
//   - CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: "can be set smaller than the default
//     or up the maximum launch depth of 24"; above 24 is
//     CUDA_ERROR_INVALID_VALUE (a guess).
//   - CU_LIMIT_MAX_L2_FETCH_GRANULARITY: "Values can range from 0B to 128B":
//     clamped to 128, as a hint that "can be ignored or clamped" may be.
//   - CU_LIMIT_PERSISTING_L2_CACHE_SIZE: clamped to the device's
//     CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE.
//
// The printf FIFO and the malloc heap must be set "before launching any
// kernel that uses the printf() device system call" (malloc(), free()),
// "otherwise CUDA_ERROR_INVALID_VALUE will be returned": the emulated
// driver does not know which kernels make those calls, and refuses neither.
func ctxSetLimit(limit int, value uint64) cuResult {
	c, dev, r := current()
	if r != success {
		return r
	}
	switch {
	case limit < 0 || limit >= limitCount:
		return errUnsupportedLimit
	case limit == limitDevRuntimeSyncDepth && value > maxDevRuntimeSyncDepth:
		return errInvalidValue
	case limit == limitMaxL2FetchGranular:
		value = min(value, maxL2FetchGranularity)
	case limit == limitPersistingL2Cache:
		value = min(value, maxPersistingL2CacheBytes)
	case limit == limitStackSize:
		if r := c.synchronize(dev); r != success {
			return r
		}
	}
	settings.Lock()
	defer settings.Unlock()
	settingsOf(c, dev).limits[limit] = value
	return success
}

// ctxGetCacheConfig is cuCtxGetCacheConfig: CU_FUNC_CACHE_PREFER_NONE
// ("(default)", cuda.h) until cuCtxSetCacheConfig.
func ctxGetCacheConfig() (int, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	settings.Lock()
	defer settings.Unlock()
	return settingsOf(c, dev).cache, success
}

// ctxSetCacheConfig is cuCtxSetCacheConfig. The H100's L1 and shared
// memory share their hardware, so the preference is kept ("This is only a
// preference", cuda.h); a value cuda.h does not name is
// CUDA_ERROR_INVALID_VALUE.
func ctxSetCacheConfig(config int) cuResult {
	c, dev, r := current()
	if r != success {
		return r
	}
	if config < cachePreferNone || config > cachePreferEqual {
		return errInvalidValue
	}
	settings.Lock()
	defer settings.Unlock()
	settingsOf(c, dev).cache = config
	return success
}

// ctxGetSharedMemConfig is cuCtxGetSharedMemConfig: four-byte banks, the
// only bank size of devices of compute capability 5.0 and later (the CUDA
// C++ Programming Guide: "Shared memory has 32 banks ... Successive 32-bit
// words map to successive banks").
func ctxGetSharedMemConfig() (int, cuResult) {
	if _, _, r := current(); r != success {
		return 0, r
	}
	return bankFourByte, success
}

// ctxSetSharedMemConfig is cuCtxSetSharedMemConfig: "This function will do
// nothing on devices with fixed shared memory bank size" (cuda.h), as the
// emulated H100's is. A value cuda.h does not name is
// CUDA_ERROR_INVALID_VALUE.
func ctxSetSharedMemConfig(config int) cuResult {
	if _, _, r := current(); r != success {
		return r
	}
	if config < bankDefault || config > bankEightByte {
		return errInvalidValue
	}
	return success
}

// functionOf returns the function of handle h, which must be of the
// current context: one of another context is CUDA_ERROR_INVALID_HANDLE (a
// guess: cuda.h lists it and CUDA_ERROR_INVALID_CONTEXT).
func functionOf(h uintptr) (*function, cuResult) {
	c, _, r := current()
	if r != success {
		return nil, r
	}
	f, ok := lookup[*function](h)
	if !ok || f.mod.ctx != c {
		return nil, errInvalidHandle
	}
	return f, success
}

// funcSetCacheConfig is cuFuncSetCacheConfig: a function's preference,
// which "will be preferred over" the context's (cuCtxSetCacheConfig, cuda.h).
func funcSetCacheConfig(h uintptr, config int) cuResult {
	f, r := functionOf(h)
	if r != success {
		return r
	}
	if config < cachePreferNone || config > cachePreferEqual {
		return errInvalidValue
	}
	settings.Lock()
	defer settings.Unlock()
	settings.funcCache[f] = config
	return success
}

// funcSetSharedMemConfig is cuFuncSetSharedMemConfig: nothing to do on the
// emulated H100's fixed banks, as for cuCtxSetSharedMemConfig.
func funcSetSharedMemConfig(h uintptr, config int) cuResult {
	if _, r := functionOf(h); r != success {
		return r
	}
	if config < bankDefault || config > bankEightByte {
		return errInvalidValue
	}
	return success
}

//export cuemu_cuCtxGetLimit
func cuemu_cuCtxGetLimit(v *C.size_t, limit C.CUlimit) C.CUresult {
	if v == nil {
		return result("cuCtxGetLimit", errInvalidValue)
	}
	n, r := ctxGetLimit(int(limit))
	if r == success {
		*v = C.size_t(n)
	}
	return result("cuCtxGetLimit", r)
}

//export cuemu_cuCtxSetLimit
func cuemu_cuCtxSetLimit(limit C.CUlimit, v C.size_t) C.CUresult {
	return result("cuCtxSetLimit", ctxSetLimit(int(limit), uint64(v)))
}

//export cuemu_cuCtxGetCacheConfig
func cuemu_cuCtxGetCacheConfig(config *C.CUfunc_cache) C.CUresult {
	if config == nil {
		return result("cuCtxGetCacheConfig", errInvalidValue)
	}
	v, r := ctxGetCacheConfig()
	if r == success {
		*config = C.CUfunc_cache(v)
	}
	return result("cuCtxGetCacheConfig", r)
}

//export cuemu_cuCtxSetCacheConfig
func cuemu_cuCtxSetCacheConfig(config C.CUfunc_cache) C.CUresult {
	return result("cuCtxSetCacheConfig", ctxSetCacheConfig(int(config)))
}

//export cuemu_cuCtxGetSharedMemConfig
func cuemu_cuCtxGetSharedMemConfig(config *C.CUsharedconfig) C.CUresult {
	if config == nil {
		return result("cuCtxGetSharedMemConfig", errInvalidValue)
	}
	v, r := ctxGetSharedMemConfig()
	if r == success {
		*config = C.CUsharedconfig(v)
	}
	return result("cuCtxGetSharedMemConfig", r)
}

//export cuemu_cuCtxSetSharedMemConfig
func cuemu_cuCtxSetSharedMemConfig(config C.CUsharedconfig) C.CUresult {
	return result("cuCtxSetSharedMemConfig", ctxSetSharedMemConfig(int(config)))
}

//export cuemu_cuFuncSetCacheConfig
func cuemu_cuFuncSetCacheConfig(f C.CUfunction, config C.CUfunc_cache) C.CUresult {
	return result("cuFuncSetCacheConfig", funcSetCacheConfig(uintptr(unsafe.Pointer(f)), int(config)))
}

//export cuemu_cuFuncSetSharedMemConfig
func cuemu_cuFuncSetSharedMemConfig(f C.CUfunction, config C.CUsharedconfig) C.CUresult {
	return result("cuFuncSetSharedMemConfig", funcSetSharedMemConfig(uintptr(unsafe.Pointer(f)), int(config)))
}
