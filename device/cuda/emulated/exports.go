//go:build cuda && cudaemu && linux

package emulated

// The driver's entry points, exported to C with the signatures cuda.h
// declares (table.c maps each symbol name to its function). Each runs on
// the OS thread of its caller, which is what makes the current context
// per thread.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <string.h>
void cuemu_call_host(CUhostFn fn, void *data);
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

func sh(s C.CUstream) uintptr { return uintptr(unsafe.Pointer(s)) }

//export cuemu_cuInit
func cuemu_cuInit(flags C.uint) C.CUresult {
	if flags != 0 {
		return result("cuInit", errInvalidValue)
	}
	return result("cuInit", drv.start())
}

//export cuemu_cuDriverGetVersion
func cuemu_cuDriverGetVersion(v *C.int) C.CUresult {
	if v == nil {
		return result("cuDriverGetVersion", errInvalidValue)
	}
	cfg, _ := loadConfig()
	*v = C.int(cfg.version)
	return result("cuDriverGetVersion", success)
}

//export cuemu_cuGetErrorName
func cuemu_cuGetErrorName(r C.CUresult, s **C.char) C.CUresult {
	name, _, ok := resultCStrings(cuResult(r))
	if s == nil || !ok {
		if s != nil {
			*s = nil
		}
		return C.CUresult(errInvalidValue)
	}
	*s = name
	return C.CUresult(success)
}

//export cuemu_cuGetErrorString
func cuemu_cuGetErrorString(r C.CUresult, s **C.char) C.CUresult {
	_, desc, ok := resultCStrings(cuResult(r))
	if s == nil || !ok {
		if s != nil {
			*s = nil
		}
		return C.CUresult(errInvalidValue)
	}
	*s = desc
	return C.CUresult(success)
}

//export cuemu_cuDeviceGetCount
func cuemu_cuDeviceGetCount(n *C.int) C.CUresult {
	c, r := deviceCount()
	if r == success && n == nil {
		r = errInvalidValue
	}
	if r == success {
		*n = C.int(c)
	}
	return result("cuDeviceGetCount", r)
}

//export cuemu_cuDeviceGet
func cuemu_cuDeviceGet(d *C.CUdevice, ordinal C.int) C.CUresult {
	_, r := deviceOf(int(ordinal))
	if r == success && d == nil {
		r = errInvalidValue
	}
	if r == success {
		*d = C.CUdevice(ordinal)
	}
	return result("cuDeviceGet", r)
}

//export cuemu_cuDeviceGetName
func cuemu_cuDeviceGetName(name *C.char, n C.int, dev C.CUdevice) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success && (name == nil || n <= 0) {
		r = errInvalidValue
	}
	if r == success {
		b := unsafe.Slice((*byte)(unsafe.Pointer(name)), int(n))
		b[copy(b[:len(b)-1], deviceName(d))] = 0
	}
	return result("cuDeviceGetName", r)
}

//export cuemu_cuDeviceTotalMem_v2
func cuemu_cuDeviceTotalMem_v2(bytes *C.size_t, dev C.CUdevice) C.CUresult {
	_, r := deviceOf(int(dev))
	if r == success && bytes == nil {
		r = errInvalidValue
	}
	if r == success {
		*bytes = C.size_t(drv.cfg.memory)
	}
	return result("cuDeviceTotalMem_v2", r)
}

//export cuemu_cuDeviceGetAttribute
func cuemu_cuDeviceGetAttribute(v *C.int, attr C.CUdevice_attribute, dev C.CUdevice) C.CUresult {
	a, r := deviceAttribute(int(attr), int(dev))
	if r == success && v == nil {
		r = errInvalidValue
	}
	if r == success {
		*v = C.int(a)
	}
	return result("cuDeviceGetAttribute", r)
}

//export cuemu_cuDeviceCanAccessPeer
func cuemu_cuDeviceCanAccessPeer(can *C.int, dev, peer C.CUdevice) C.CUresult {
	_, r := deviceOf(int(dev))
	if r == success {
		_, r = deviceOf(int(peer))
	}
	if r == success && can == nil {
		r = errInvalidValue
	}
	if r == success {
		*can = 0
		if dev != peer {
			*can = 1
		}
	}
	return result("cuDeviceCanAccessPeer", r)
}

//export cuemu_cuDevicePrimaryCtxGetState
func cuemu_cuDevicePrimaryCtxGetState(dev C.CUdevice, flags *C.uint, active *C.int) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success && (flags == nil || active == nil) {
		r = errInvalidValue
	}
	if r == success {
		f, a := primaryState(d)
		*flags, *active = C.uint(f), 0
		if a {
			*active = 1
		}
	}
	return result("cuDevicePrimaryCtxGetState", r)
}

//export cuemu_cuDevicePrimaryCtxRetain
func cuemu_cuDevicePrimaryCtxRetain(ctx *C.CUcontext, dev C.CUdevice) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success && ctx == nil {
		r = errInvalidValue
	}
	if r == success {
		r = d.primary.retain()
	}
	if r == success {
		*ctx = C.CUcontext(cPointer(d.primary.handle))
	}
	return result("cuDevicePrimaryCtxRetain", r)
}

//export cuemu_cuDevicePrimaryCtxRelease_v2
func cuemu_cuDevicePrimaryCtxRelease_v2(dev C.CUdevice) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success {
		r = d.primary.release()
	}
	return result("cuDevicePrimaryCtxRelease_v2", r)
}

//export cuemu_cuDevicePrimaryCtxReset_v2
func cuemu_cuDevicePrimaryCtxReset_v2(dev C.CUdevice) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success {
		d.primary.reset()
	}
	return result("cuDevicePrimaryCtxReset_v2", r)
}

//export cuemu_cuDevicePrimaryCtxSetFlags_v2
func cuemu_cuDevicePrimaryCtxSetFlags_v2(dev C.CUdevice, flags C.uint) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success {
		r = primarySetFlags(d, uint32(flags))
	}
	return result("cuDevicePrimaryCtxSetFlags_v2", r)
}

//export cuemu_cuCtxSetCurrent
func cuemu_cuCtxSetCurrent(ctx C.CUcontext) C.CUresult {
	if inHostFunc() {
		return result("cuCtxSetCurrent", errNotPermitted)
	}
	return result("cuCtxSetCurrent", setCurrent(uintptr(unsafe.Pointer(ctx))))
}

//export cuemu_cuCtxGetCurrent
func cuemu_cuCtxGetCurrent(ctx *C.CUcontext) C.CUresult {
	if !drv.ready() {
		return result("cuCtxGetCurrent", errNotInitialized)
	}
	if ctx == nil {
		return result("cuCtxGetCurrent", errInvalidValue)
	}
	if inHostFunc() {
		return result("cuCtxGetCurrent", errNotPermitted)
	}
	*ctx = nil
	if c := drv.currentContext(); c != nil {
		*ctx = C.CUcontext(cPointer(c.handle))
	}
	return result("cuCtxGetCurrent", success)
}

//export cuemu_cuCtxGetDevice
func cuemu_cuCtxGetDevice(dev *C.CUdevice) C.CUresult {
	c, _, r := current()
	if r == success && dev == nil {
		r = errInvalidValue
	}
	if r == success {
		*dev = C.CUdevice(c.dev.ordinal)
	}
	return result("cuCtxGetDevice", r)
}

//export cuemu_cuCtxGetFlags
func cuemu_cuCtxGetFlags(flags *C.uint) C.CUresult {
	f, r := contextFlags()
	if r == success && flags == nil {
		r = errInvalidValue
	}
	if r == success {
		*flags = C.uint(f)
	}
	return result("cuCtxGetFlags", r)
}

//export cuemu_cuCtxSynchronize
func cuemu_cuCtxSynchronize() C.CUresult {
	c, dev, r := current()
	if r == success {
		r = c.synchronize(dev)
	}
	return result("cuCtxSynchronize", r)
}

//export cuemu_cuMemGetInfo_v2
func cuemu_cuMemGetInfo_v2(free, total *C.size_t) C.CUresult {
	f, t, r := memGetInfo()
	if r == success && (free == nil || total == nil) {
		r = errInvalidValue
	}
	if r == success {
		*free, *total = C.size_t(f), C.size_t(t)
	}
	return result("cuMemGetInfo_v2", r)
}

//export cuemu_cuMemAlloc_v2
func cuemu_cuMemAlloc_v2(p *C.CUdeviceptr, n C.size_t) C.CUresult {
	if p == nil {
		return result("cuMemAlloc_v2", errInvalidValue)
	}
	d, r := memAlloc(uint64(n))
	if r == success {
		*p = C.CUdeviceptr(d)
	}
	return result("cuMemAlloc_v2", r)
}

//export cuemu_cuMemFree_v2
func cuemu_cuMemFree_v2(p C.CUdeviceptr) C.CUresult {
	return result("cuMemFree_v2", memFree(uintptr(p)))
}

//export cuemu_cuMemHostAlloc
func cuemu_cuMemHostAlloc(pp *unsafe.Pointer, n C.size_t, flags C.uint) C.CUresult {
	if pp == nil {
		return result("cuMemHostAlloc", errInvalidValue)
	}
	p, r := memHostAlloc(uint64(n), uint32(flags))
	if r == success {
		*pp = p
	}
	return result("cuMemHostAlloc", r)
}

//export cuemu_cuMemFreeHost
func cuemu_cuMemFreeHost(p unsafe.Pointer) C.CUresult {
	return result("cuMemFreeHost", memFreeHost(uintptr(p)))
}

//export cuemu_cuMemHostGetDevicePointer_v2
func cuemu_cuMemHostGetDevicePointer_v2(d *C.CUdeviceptr, p unsafe.Pointer, flags C.uint) C.CUresult {
	if d == nil {
		return result("cuMemHostGetDevicePointer_v2", errInvalidValue)
	}
	dp, r := memHostGetDevicePointer(uintptr(p), uint32(flags))
	if r == success {
		*d = C.CUdeviceptr(dp)
	}
	return result("cuMemHostGetDevicePointer_v2", r)
}

//export cuemu_cuMemHostRegister_v2
func cuemu_cuMemHostRegister_v2(p unsafe.Pointer, n C.size_t, flags C.uint) C.CUresult {
	return result("cuMemHostRegister_v2", memHostRegister(p, uint64(n), uint32(flags)))
}

//export cuemu_cuMemHostUnregister
func cuemu_cuMemHostUnregister(p unsafe.Pointer) C.CUresult {
	return result("cuMemHostUnregister", memHostUnregister(uintptr(p)))
}

//export cuemu_cuPointerGetAttributes
func cuemu_cuPointerGetAttributes(n C.uint, attrs *C.CUpointer_attribute, data *unsafe.Pointer, p C.CUdeviceptr) C.CUresult {
	if !drv.ready() {
		return result("cuPointerGetAttributes", errNotInitialized)
	}
	if n == 0 || attrs == nil || data == nil {
		return result("cuPointerGetAttributes", errInvalidValue)
	}
	info := pointerOf(uintptr(p))
	if r := spoiledFor(info.ctx); r != success {
		return result("cuPointerGetAttributes", r)
	}
	as := unsafe.Slice(attrs, int(n))
	ds := unsafe.Slice(data, int(n))
	for i, a := range as {
		if ds[i] == nil {
			continue
		}
		switch a {
		case C.CU_POINTER_ATTRIBUTE_CONTEXT:
			var h uintptr
			if info.ctx != nil {
				h = info.ctx.handle
			}
			*(*C.CUcontext)(ds[i]) = C.CUcontext(cPointer(h))
		case C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
			*(*C.uint)(ds[i]) = C.uint(info.memType)
		case C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
			*(*C.CUdeviceptr)(ds[i]) = C.CUdeviceptr(info.devPtr)
		case C.CU_POINTER_ATTRIBUTE_HOST_POINTER:
			*(*unsafe.Pointer)(ds[i]) = cPointer(info.hostPtr)
		case C.CU_POINTER_ATTRIBUTE_IS_MANAGED:
			*(*C.uint)(ds[i]) = C.uint(isManaged(info))
		case C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			ord := C.int(-2)
			if info.memType != 0 {
				ord = C.int(info.ordinal)
			}
			*(*C.int)(ds[i]) = ord
		case C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
			*(*C.CUdeviceptr)(ds[i]) = C.CUdeviceptr(info.start)
		case C.CU_POINTER_ATTRIBUTE_RANGE_SIZE:
			*(*C.size_t)(ds[i]) = C.size_t(info.size)
		default:
			return result("cuPointerGetAttributes", errInvalidValue)
		}
	}
	return result("cuPointerGetAttributes", success)
}

//export cuemu_cuMemcpyHtoD_v2
func cuemu_cuMemcpyHtoD_v2(dst C.CUdeviceptr, src unsafe.Pointer, n C.size_t) C.CUresult {
	return result("cuMemcpyHtoD_v2", copyHtoD(uintptr(dst), src, uint64(n), 0, false))
}

//export cuemu_cuMemcpyHtoDAsync_v2
func cuemu_cuMemcpyHtoDAsync_v2(dst C.CUdeviceptr, src unsafe.Pointer, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemcpyHtoDAsync_v2", copyHtoD(uintptr(dst), src, uint64(n), sh(s), true))
}

//export cuemu_cuMemcpyDtoH_v2
func cuemu_cuMemcpyDtoH_v2(dst unsafe.Pointer, src C.CUdeviceptr, n C.size_t) C.CUresult {
	return result("cuMemcpyDtoH_v2", copyDtoH(dst, uintptr(src), uint64(n), 0, false))
}

//export cuemu_cuMemcpyDtoHAsync_v2
func cuemu_cuMemcpyDtoHAsync_v2(dst unsafe.Pointer, src C.CUdeviceptr, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemcpyDtoHAsync_v2", copyDtoH(dst, uintptr(src), uint64(n), sh(s), true))
}

//export cuemu_cuMemcpyDtoD_v2
func cuemu_cuMemcpyDtoD_v2(dst, src C.CUdeviceptr, n C.size_t) C.CUresult {
	return result("cuMemcpyDtoD_v2", copyDtoD(uintptr(dst), uintptr(src), uint64(n), 0))
}

//export cuemu_cuMemcpyDtoDAsync_v2
func cuemu_cuMemcpyDtoDAsync_v2(dst, src C.CUdeviceptr, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemcpyDtoDAsync_v2", copyDtoD(uintptr(dst), uintptr(src), uint64(n), sh(s)))
}

//export cuemu_cuMemcpyPeerAsync
func cuemu_cuMemcpyPeerAsync(dst C.CUdeviceptr, dctx C.CUcontext, src C.CUdeviceptr, sctx C.CUcontext, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemcpyPeerAsync", copyPeerAsync(uintptr(dst), uintptr(unsafe.Pointer(dctx)), uintptr(src), uintptr(unsafe.Pointer(sctx)), uint64(n), sh(s)))
}

//export cuemu_cuMemcpyPeer
func cuemu_cuMemcpyPeer(dst C.CUdeviceptr, dctx C.CUcontext, src C.CUdeviceptr, sctx C.CUcontext, n C.size_t) C.CUresult {
	return result("cuMemcpyPeer", copyPeer(uintptr(dst), uintptr(unsafe.Pointer(dctx)), uintptr(src), uintptr(unsafe.Pointer(sctx)), uint64(n)))
}

//export cuemu_cuMemsetD8_v2
func cuemu_cuMemsetD8_v2(p C.CUdeviceptr, v C.uchar, n C.size_t) C.CUresult {
	return result("cuMemsetD8_v2", memset(memsetOp{p: uintptr(p), width: uint64(n), size: 1, value: uint32(v)}, 0, false))
}

//export cuemu_cuMemsetD8Async
func cuemu_cuMemsetD8Async(p C.CUdeviceptr, v C.uchar, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemsetD8Async", memset(memsetOp{p: uintptr(p), width: uint64(n), size: 1, value: uint32(v)}, sh(s), true))
}

func side2D(t C.CUmemorytype, host unsafe.Pointer, dev C.CUdeviceptr, arr C.CUarray, x, y, pitch C.size_t) side {
	return side{memType: int(t), host: host, dev: uintptr(dev), hasArr: arr != nil, x: uint64(x), y: uint64(y), pitch: uint64(pitch)}
}

// pitched2D decodes a CUDA_MEMCPY2D. cuMemcpy2D and cuMemcpy2DAsync "may
// fail for pitches not computed by cuMemAllocPitch"; on the H100 (driver
// 580.159.04, 2026-11-27, conformance TestPitchedCopies) both copied device
// to device at pitch 36, so the emulated driver takes any pitch there, as
// cuMemcpy2DUnaligned does.
func pitched2D(p *C.CUDA_MEMCPY2D) pitched {
	return pitched{
		src:   side2D(p.srcMemoryType, unsafe.Pointer(p.srcHost), p.srcDevice, p.srcArray, p.srcXInBytes, p.srcY, p.srcPitch),
		dst:   side2D(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstXInBytes, p.dstY, p.dstPitch),
		width: uint64(p.WidthInBytes), height: uint64(p.Height), depth: 1,
	}
}

func pitched3D(p *C.CUDA_MEMCPY3D) pitched {
	src := side2D(p.srcMemoryType, unsafe.Pointer(p.srcHost), p.srcDevice, p.srcArray, p.srcXInBytes, p.srcY, p.srcPitch)
	src.z, src.height, src.reserved = uint64(p.srcZ), uint64(p.srcHeight), p.reserved0 != nil || p.srcLOD != 0
	dst := side2D(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstXInBytes, p.dstY, p.dstPitch)
	dst.z, dst.height, dst.reserved = uint64(p.dstZ), uint64(p.dstHeight), p.reserved1 != nil || p.dstLOD != 0
	return pitched{src: src, dst: dst, width: uint64(p.WidthInBytes), height: uint64(p.Height), depth: uint64(p.Depth)}
}

//export cuemu_cuMemcpy2D_v2
func cuemu_cuMemcpy2D_v2(p *C.CUDA_MEMCPY2D) C.CUresult {
	if p == nil {
		return result("cuMemcpy2D_v2", errInvalidValue)
	}
	return result("cuMemcpy2D_v2", memcpy3D(pitched2D(p), 0, false))
}

//export cuemu_cuMemcpy2DUnaligned_v2
func cuemu_cuMemcpy2DUnaligned_v2(p *C.CUDA_MEMCPY2D) C.CUresult {
	if p == nil {
		return result("cuMemcpy2DUnaligned_v2", errInvalidValue)
	}
	return result("cuMemcpy2DUnaligned_v2", memcpy3D(pitched2D(p), 0, false))
}

//export cuemu_cuMemcpy2DAsync_v2
func cuemu_cuMemcpy2DAsync_v2(p *C.CUDA_MEMCPY2D, s C.CUstream) C.CUresult {
	if p == nil {
		return result("cuMemcpy2DAsync_v2", errInvalidValue)
	}
	return result("cuMemcpy2DAsync_v2", memcpy3D(pitched2D(p), sh(s), true))
}

//export cuemu_cuMemcpy3D_v2
func cuemu_cuMemcpy3D_v2(p *C.CUDA_MEMCPY3D) C.CUresult {
	if p == nil {
		return result("cuMemcpy3D_v2", errInvalidValue)
	}
	return result("cuMemcpy3D_v2", memcpy3D(pitched3D(p), 0, false))
}

//export cuemu_cuMemcpy3DAsync_v2
func cuemu_cuMemcpy3DAsync_v2(p *C.CUDA_MEMCPY3D, s C.CUstream) C.CUresult {
	if p == nil {
		return result("cuMemcpy3DAsync_v2", errInvalidValue)
	}
	return result("cuMemcpy3DAsync_v2", memcpy3D(pitched3D(p), sh(s), true))
}

//export cuemu_cuStreamCreate
func cuemu_cuStreamCreate(s *C.CUstream, flags C.uint) C.CUresult {
	if s == nil {
		return result("cuStreamCreate", errInvalidValue)
	}
	h, r := streamCreate(uint32(flags))
	if r == success {
		*s = C.CUstream(cPointer(h))
	}
	return result("cuStreamCreate", r)
}

//export cuemu_cuStreamDestroy_v2
func cuemu_cuStreamDestroy_v2(s C.CUstream) C.CUresult {
	return result("cuStreamDestroy_v2", streamDestroy(sh(s)))
}

//export cuemu_cuStreamSynchronize
func cuemu_cuStreamSynchronize(s C.CUstream) C.CUresult {
	return result("cuStreamSynchronize", streamSynchronize(sh(s)))
}

//export cuemu_cuStreamQuery
func cuemu_cuStreamQuery(s C.CUstream) C.CUresult {
	return result("cuStreamQuery", streamQuery(sh(s)))
}

//export cuemu_cuStreamWaitEvent
func cuemu_cuStreamWaitEvent(s C.CUstream, e C.CUevent, flags C.uint) C.CUresult {
	return result("cuStreamWaitEvent", streamWaitEvent(sh(s), uintptr(unsafe.Pointer(e)), uint32(flags)))
}

//export cuemu_cuEventCreate
func cuemu_cuEventCreate(e *C.CUevent, flags C.uint) C.CUresult {
	if e == nil {
		return result("cuEventCreate", errInvalidValue)
	}
	h, r := eventCreate(uint32(flags))
	if r == success {
		*e = C.CUevent(cPointer(h))
	}
	return result("cuEventCreate", r)
}

//export cuemu_cuEventDestroy_v2
func cuemu_cuEventDestroy_v2(e C.CUevent) C.CUresult {
	return result("cuEventDestroy_v2", eventDestroy(uintptr(unsafe.Pointer(e))))
}

//export cuemu_cuEventRecord
func cuemu_cuEventRecord(e C.CUevent, s C.CUstream) C.CUresult {
	return result("cuEventRecord", eventRecord(uintptr(unsafe.Pointer(e)), sh(s)))
}

//export cuemu_cuEventQuery
func cuemu_cuEventQuery(e C.CUevent) C.CUresult {
	return result("cuEventQuery", eventQuery(uintptr(unsafe.Pointer(e))))
}

//export cuemu_cuEventSynchronize
func cuemu_cuEventSynchronize(e C.CUevent) C.CUresult {
	return result("cuEventSynchronize", eventSynchronize(uintptr(unsafe.Pointer(e))))
}

//export cuemu_cuEventElapsedTime
func cuemu_cuEventElapsedTime(ms *C.float, start, end C.CUevent) C.CUresult {
	if ms == nil {
		return result("cuEventElapsedTime", errInvalidValue)
	}
	d, r := eventElapsed(uintptr(unsafe.Pointer(start)), uintptr(unsafe.Pointer(end)))
	if r == success {
		*ms = C.float(d.Seconds() * 1e3)
	}
	return result("cuEventElapsedTime", r)
}

// imageBytes returns a module image passed by pointer alone: a fatbin and
// an ELF say their size, PTX ends at its NUL.
func imageBytes(p unsafe.Pointer) []byte {
	head := unsafe.Slice((*byte)(p), 16)
	switch {
	case head[0] == 0x50 && head[1] == 0xed && head[2] == 0x55 && head[3] == 0xba:
		return unsafe.Slice((*byte)(p), fatbinSize(head))
	case head[0] == 0x7f && head[1] == 'E' && head[2] == 'L' && head[3] == 'F':
		h := unsafe.Slice((*byte)(p), 64)
		shoff := *(*uint64)(unsafe.Pointer(&h[0x28]))
		shentsize, shnum := *(*uint16)(unsafe.Pointer(&h[0x3a])), *(*uint16)(unsafe.Pointer(&h[0x3c]))
		return unsafe.Slice((*byte)(p), int(shoff)+int(shentsize)*int(shnum))
	}
	return unsafe.Slice((*byte)(p), int(C.strlen((*C.char)(p))))
}

//export cuemu_cuModuleLoadData
func cuemu_cuModuleLoadData(m *C.CUmodule, image unsafe.Pointer) C.CUresult {
	if m == nil || image == nil {
		return result("cuModuleLoadData", errInvalidValue)
	}
	h, _, r := moduleLoad(imageBytes(image))
	if r == success {
		*m = C.CUmodule(cPointer(h))
	}
	return result("cuModuleLoadData", r)
}

//export cuemu_cuModuleLoadDataEx
func cuemu_cuModuleLoadDataEx(m *C.CUmodule, image unsafe.Pointer, n C.uint, opts *C.CUjit_option, vals *unsafe.Pointer) C.CUresult {
	if m == nil || image == nil || (n > 0 && (opts == nil || vals == nil)) {
		return result("cuModuleLoadDataEx", errInvalidValue)
	}
	h, log, r := moduleLoad(imageBytes(image))
	if n > 0 {
		writeJITLogs(unsafe.Slice(opts, int(n)), unsafe.Slice(vals, int(n)), log)
	}
	if r == success {
		*m = C.CUmodule(cPointer(h))
	}
	return result("cuModuleLoadDataEx", r)
}

// writeJITLogs writes a failed load's log into the error log buffer the
// options name, and empties the info log.
func writeJITLogs(opts []C.CUjit_option, vals []unsafe.Pointer, errLog string) {
	size := func(want C.CUjit_option) int {
		for i, o := range opts {
			if o == want {
				return int(uintptr(vals[i]))
			}
		}
		return 0
	}
	for i, o := range opts {
		var text string
		var n int
		switch o {
		case C.CU_JIT_ERROR_LOG_BUFFER:
			text, n = errLog, size(C.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
		case C.CU_JIT_INFO_LOG_BUFFER:
			n = size(C.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
		default:
			continue
		}
		if vals[i] == nil || n <= 0 {
			continue
		}
		b := unsafe.Slice((*byte)(vals[i]), n)
		b[copy(b[:n-1], text)] = 0
	}
}

//export cuemu_cuModuleUnload
func cuemu_cuModuleUnload(m C.CUmodule) C.CUresult {
	return result("cuModuleUnload", moduleUnload(uintptr(unsafe.Pointer(m))))
}

//export cuemu_cuModuleGetFunction
func cuemu_cuModuleGetFunction(f *C.CUfunction, m C.CUmodule, name *C.char) C.CUresult {
	if f == nil || name == nil {
		return result("cuModuleGetFunction", errInvalidValue)
	}
	h, r := moduleGetFunction(uintptr(unsafe.Pointer(m)), C.GoString(name))
	if r == success {
		*f = C.CUfunction(cPointer(h))
	}
	return result("cuModuleGetFunction", r)
}

//export cuemu_cuLaunchKernel
func cuemu_cuLaunchKernel(f C.CUfunction, gx, gy, gz, bx, by, bz, shared C.uint, s C.CUstream, params *unsafe.Pointer, extra *unsafe.Pointer) C.CUresult {
	r := launch(uintptr(unsafe.Pointer(f)), [3]uint32{uint32(gx), uint32(gy), uint32(gz)}, [3]uint32{uint32(bx), uint32(by), uint32(bz)},
		uint32(shared), sh(s), unsafe.Pointer(params), unsafe.Pointer(extra))
	return result("cuLaunchKernel", r)
}

//export cuemu_cuIpcGetMemHandle
func cuemu_cuIpcGetMemHandle(h *C.CUipcMemHandle, p C.CUdeviceptr) C.CUresult {
	if h == nil {
		return result("cuIpcGetMemHandle", errInvalidValue)
	}
	handle, r := ipcGetMemHandle(uintptr(p))
	if r == success {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&h.reserved[0])), driver.IPCHandleSize), handle[:])
	}
	return result("cuIpcGetMemHandle", r)
}

// cuemu_ipc_open is cuIpcOpenMemHandle_v2 behind table.c's shim, which
// passes the handle, a struct by value in C, by pointer.
//
//export cuemu_ipc_open
func cuemu_ipc_open(p *C.CUdeviceptr, h *C.CUipcMemHandle, flags C.uint) C.CUresult {
	if p == nil {
		return result("cuIpcOpenMemHandle_v2", errInvalidValue)
	}
	var handle driver.IPCHandle
	copy(handle[:], unsafe.Slice((*byte)(unsafe.Pointer(&h.reserved[0])), driver.IPCHandleSize))
	d, r := ipcOpenMemHandle(handle, uint32(flags))
	if r == success {
		*p = C.CUdeviceptr(d)
	}
	return result("cuIpcOpenMemHandle_v2", r)
}

//export cuemu_cuIpcCloseMemHandle
func cuemu_cuIpcCloseMemHandle(p C.CUdeviceptr) C.CUresult {
	return result("cuIpcCloseMemHandle", ipcCloseMemHandle(uintptr(p)))
}

//export cuemu_cuLaunchHostFunc
func cuemu_cuLaunchHostFunc(s C.CUstream, fn C.CUhostFn, data unsafe.Pointer) C.CUresult {
	st, r := streamOf(sh(s))
	if r == success && fn == nil {
		r = errInvalidValue
	}
	if r == success {
		r = st.run(func(q driver.Stream) error {
			return sim.HostFunc(q, func() { st.ctx.runHostFunc(func() { C.cuemu_call_host(fn, data) }) })
		})
	}
	return result("cuLaunchHostFunc", r)
}

//export cuemu_cuMemGetAddressRange_v2
func cuemu_cuMemGetAddressRange_v2(base *C.CUdeviceptr, size *C.size_t, p C.CUdeviceptr) C.CUresult {
	if _, _, r := current(); r != success {
		return result("cuMemGetAddressRange_v2", r)
	}
	info := pointerOf(uintptr(p))
	if info.memType != memTypeDevice {
		return result("cuMemGetAddressRange_v2", errNotFound)
	}
	if base != nil {
		*base = C.CUdeviceptr(info.start)
	}
	if size != nil {
		*size = C.size_t(info.size)
	}
	return result("cuMemGetAddressRange_v2", success)
}
