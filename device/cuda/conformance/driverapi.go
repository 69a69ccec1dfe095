//go:build cuda

// Package conformance holds the CUDA driver conformance tests: what the
// cuda backend relies on the driver to do (when a call returns, how streams
// order, what each bad argument gives), checked by calling the driver API
// itself. The same tests run on the emulated driver in CI (make
// cuda-emu-test) and, built with -tags cuda alone, against the real driver
// on a GPU: where the two disagree, the emulation is wrong.
//
// This file binds the calls (tests cannot use cgo); every wrapper returns
// the CUresult as an int.
package conformance

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#cgo !linux LDFLAGS: -lcuda
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void cuarrayConformanceGate(void *id);

static CUresult conf_gate(CUstream s, uintptr_t id) {
	return cuLaunchHostFunc(s, cuarrayConformanceGate, (void *)id);
}

static CUresult conf_launch(CUfunction f, unsigned gx, unsigned bx, CUstream s, void *buf, const size_t *offs, int n) {
	void *argv[16];
	for (int i = 0; i < n && i < 16; i++) argv[i] = (char *)buf + offs[i];
	return cuLaunchKernel(f, gx, 1, 1, bx, 1, 1, 0, s, argv, NULL);
}

static CUresult conf_copy2d(int variant, int srcType, CUdeviceptr srcDev, const void *srcHost, size_t srcPitch,
	int dstType, CUdeviceptr dstDev, void *dstHost, size_t dstPitch, size_t width, size_t height, CUstream s)
{
	CUDA_MEMCPY2D p;
	memset(&p, 0, sizeof p);
	p.srcMemoryType = (CUmemorytype)srcType; p.srcDevice = srcDev; p.srcHost = srcHost; p.srcPitch = srcPitch;
	p.dstMemoryType = (CUmemorytype)dstType; p.dstDevice = dstDev; p.dstHost = dstHost; p.dstPitch = dstPitch;
	p.WidthInBytes = width; p.Height = height;
	switch (variant) {
	case 0: return cuMemcpy2D(&p);
	case 1: return cuMemcpy2DUnaligned(&p);
	default: return cuMemcpy2DAsync(&p, s);
	}
}

static CUresult conf_copy3d(CUdeviceptr dst, CUdeviceptr src, size_t pitch, size_t height, size_t width, size_t rows, size_t depth) {
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof p);
	p.srcMemoryType = CU_MEMORYTYPE_DEVICE; p.srcDevice = src; p.srcPitch = pitch; p.srcHeight = height;
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE; p.dstDevice = dst; p.dstPitch = pitch; p.dstHeight = height;
	p.WidthInBytes = width; p.Height = rows; p.Depth = depth;
	return cuMemcpy3D(&p);
}

static CUresult conf_attrs(CUdeviceptr p, unsigned *memType, int *ordinal, CUdeviceptr *start, size_t *size) {
	CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
	void *d[] = {memType, ordinal, start, size};
	return cuPointerGetAttributes(4, a, d, p);
}

static CUresult conf_ipc_open(CUdeviceptr *p, const void *h) {
	CUipcMemHandle handle;
	memcpy(handle.reserved, h, CU_IPC_HANDLE_SIZE);
	return cuIpcOpenMemHandle(p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
}

static CUresult conf_ipc_get(void *h, CUdeviceptr p) {
	CUipcMemHandle handle;
	CUresult r = cuIpcGetMemHandle(&handle, p);
	memcpy(h, handle.reserved, CU_IPC_HANDLE_SIZE);
	return r;
}
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/device/cuda"
)

// The driver's results the tests name.
const (
	Success               = int(C.CUDA_SUCCESS)
	NotInitialized        = int(C.CUDA_ERROR_NOT_INITIALIZED)
	InvalidValue          = int(C.CUDA_ERROR_INVALID_VALUE)
	OutOfMemory           = int(C.CUDA_ERROR_OUT_OF_MEMORY)
	InvalidDevice         = int(C.CUDA_ERROR_INVALID_DEVICE)
	InvalidImage          = int(C.CUDA_ERROR_INVALID_IMAGE)
	InvalidContext        = int(C.CUDA_ERROR_INVALID_CONTEXT)
	InvalidHandle         = int(C.CUDA_ERROR_INVALID_HANDLE)
	NotFound              = int(C.CUDA_ERROR_NOT_FOUND)
	NotReady              = int(C.CUDA_ERROR_NOT_READY)
	IllegalAddress        = int(C.CUDA_ERROR_ILLEGAL_ADDRESS)
	MisalignedAddress     = int(C.CUDA_ERROR_MISALIGNED_ADDRESS)
	HostAlreadyRegistered = int(C.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
	HostNotRegistered     = int(C.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
	PrimaryContextActive  = int(C.CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)
	ContextIsDestroyed    = int(C.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	NotPermitted          = int(C.CUDA_ERROR_NOT_PERMITTED)
)

// Flags and handles of the driver API.
const (
	StreamLegacy      = uintptr(1) // CU_STREAM_LEGACY
	StreamPerThread   = uintptr(2) // CU_STREAM_PER_THREAD
	StreamNonBlocking = uint32(C.CU_STREAM_NON_BLOCKING)
	EventDisableTime  = uint32(C.CU_EVENT_DISABLE_TIMING)
	HostPortable      = uint32(C.CU_MEMHOSTALLOC_PORTABLE)
	HostDeviceMap     = uint32(C.CU_MEMHOSTALLOC_DEVICEMAP)
	HostWriteCombined = uint32(C.CU_MEMHOSTALLOC_WRITECOMBINED)
	RegisterDeviceMap = uint32(C.CU_MEMHOSTREGISTER_DEVICEMAP)
	CtxSchedBlocking  = uint32(C.CU_CTX_SCHED_BLOCKING_SYNC)
	MemTypeHost       = int(C.CU_MEMORYTYPE_HOST)
	MemTypeDevice     = int(C.CU_MEMORYTYPE_DEVICE)
	IPCHandleSize     = int(C.CU_IPC_HANDLE_SIZE)
)

// Init starts the driver (the cuda backend's Init: cuInit through the
// patched gorgonia.org/cu), or returns why it cannot.
func Init() error { return cuda.Init() }

func r(c C.CUresult) int { return int(c) }

// DriverVersion is cuDriverGetVersion: 12080 for CUDA 12.8.
func DriverVersion() (int, int) {
	var v C.int
	c := C.cuDriverGetVersion(&v)
	return int(v), r(c)
}

func DeviceGet(ordinal int) (int, int) {
	var d C.CUdevice
	c := C.cuDeviceGet(&d, C.int(ordinal))
	return int(d), r(c)
}

func DeviceCount() (int, int) {
	var n C.int
	c := C.cuDeviceGetCount(&n)
	return int(n), r(c)
}

func PrimaryRetain(dev int) (uintptr, int) {
	var ctx C.CUcontext
	c := C.cuDevicePrimaryCtxRetain(&ctx, C.CUdevice(dev))
	return uintptr(unsafe.Pointer(ctx)), r(c)
}

func PrimaryRelease(dev int) int { return r(C.cuDevicePrimaryCtxRelease(C.CUdevice(dev))) }

func PrimaryState(dev int) (flags uint32, active bool, code int) {
	var f C.uint
	var a C.int
	c := C.cuDevicePrimaryCtxGetState(C.CUdevice(dev), &f, &a)
	return uint32(f), a != 0, r(c)
}

func PrimaryReset(dev int) int { return r(C.cuDevicePrimaryCtxReset(C.CUdevice(dev))) }

func PrimarySetFlags(dev int, flags uint32) int {
	return r(C.cuDevicePrimaryCtxSetFlags(C.CUdevice(dev), C.uint(flags)))
}

// CtxCreate makes a new context on device dev, current on the calling
// thread (cuCtxCreate, flags 0).
func CtxCreate(dev int) (uintptr, int) {
	var c C.CUcontext
	code := C.cuCtxCreate(&c, 0, C.CUdevice(dev))
	return uintptr(unsafe.Pointer(c)), r(code)
}

func CtxDestroy(ctx uintptr) int { return r(C.cuCtxDestroy(C.CUcontext(ptr(ctx)))) }

func CtxSetCurrent(ctx uintptr) int { return r(C.cuCtxSetCurrent(C.CUcontext(ptr(ctx)))) }

func CtxGetCurrent() (uintptr, int) {
	var ctx C.CUcontext
	c := C.cuCtxGetCurrent(&ctx)
	return uintptr(unsafe.Pointer(ctx)), r(c)
}

func CtxSynchronize() int { return r(C.cuCtxSynchronize()) }

func MemAlloc(n int) (uintptr, int) {
	var p C.CUdeviceptr
	c := C.cuMemAlloc(&p, C.size_t(n))
	return uintptr(p), r(c)
}

func MemFree(p uintptr) int { return r(C.cuMemFree(C.CUdeviceptr(p))) }

func MemGetInfo() (free, total int64, code int) {
	var f, t C.size_t
	c := C.cuMemGetInfo(&f, &t)
	return int64(f), int64(t), r(c)
}

func MemGetAddressRange(p uintptr) (base uintptr, size int64, code int) {
	var b C.CUdeviceptr
	var s C.size_t
	c := C.cuMemGetAddressRange(&b, &s, C.CUdeviceptr(p))
	return uintptr(b), int64(s), r(c)
}

// Host is memory outside the Go heap (C's), that the driver may keep.
type Host struct {
	P unsafe.Pointer
	N int
}

// Bytes is h's memory.
func (h Host) Bytes() []byte { return unsafe.Slice((*byte)(h.P), h.N) }

// CMalloc returns pageable C memory.
func CMalloc(n int) Host { return Host{C.malloc(C.size_t(n)), n} }

// CFree frees CMalloc's memory.
func CFree(h Host) { C.free(h.P) }

func MemcpyHtoD(dst uintptr, src Host) int {
	return r(C.cuMemcpyHtoD(C.CUdeviceptr(dst), src.P, C.size_t(src.N)))
}

func MemcpyDtoH(dst Host, src uintptr) int {
	return r(C.cuMemcpyDtoH(dst.P, C.CUdeviceptr(src), C.size_t(dst.N)))
}

func MemcpyDtoD(dst, src uintptr, n int) int {
	return r(C.cuMemcpyDtoD(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n)))
}

func MemcpyPeer(dst, dctx, src, sctx uintptr, n int) int {
	return r(C.cuMemcpyPeer(C.CUdeviceptr(dst), C.CUcontext(ptr(dctx)), C.CUdeviceptr(src), C.CUcontext(ptr(sctx)), C.size_t(n)))
}

func MemsetD8(p uintptr, v byte, n int) int {
	return r(C.cuMemsetD8(C.CUdeviceptr(p), C.uchar(v), C.size_t(n)))
}

func MemcpyHtoDAsync(dst uintptr, src Host, s uintptr) int {
	return r(C.cuMemcpyHtoDAsync(C.CUdeviceptr(dst), src.P, C.size_t(src.N), stream(s)))
}

func MemcpyDtoHAsync(dst Host, src uintptr, s uintptr) int {
	return r(C.cuMemcpyDtoHAsync(dst.P, C.CUdeviceptr(src), C.size_t(dst.N), stream(s)))
}

func MemsetD8Async(p uintptr, v byte, n int, s uintptr) int {
	return r(C.cuMemsetD8Async(C.CUdeviceptr(p), C.uchar(v), C.size_t(n), stream(s)))
}

func MemHostAlloc(n int, flags uint32) (Host, int) {
	var p unsafe.Pointer
	c := C.cuMemHostAlloc(&p, C.size_t(n), C.uint(flags))
	return Host{p, n}, r(c)
}

func MemFreeHost(h Host) int { return r(C.cuMemFreeHost(h.P)) }

func HostGetDevicePointer(h Host) (uintptr, int) {
	var d C.CUdeviceptr
	c := C.cuMemHostGetDevicePointer(&d, h.P, 0)
	return uintptr(d), r(c)
}

func HostRegister(h Host, flags uint32) int {
	return r(C.cuMemHostRegister(h.P, C.size_t(h.N), C.uint(flags)))
}

func HostUnregister(h Host) int { return r(C.cuMemHostUnregister(h.P)) }

// PointerAttrs are cuPointerGetAttributes' answers for an address.
type PointerAttrs struct {
	MemType, Ordinal int
	Start            uintptr
	Size             int64
}

func PointerGetAttributes(p uintptr) (PointerAttrs, int) {
	var mt C.unsigned
	var ord C.int
	var start C.CUdeviceptr
	var size C.size_t
	c := C.conf_attrs(C.CUdeviceptr(p), &mt, &ord, &start, &size)
	return PointerAttrs{int(mt), int(ord), uintptr(start), int64(size)}, r(c)
}

// Copy2D variants: cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy2DAsync.
const (
	Copy2D = iota
	Copy2DUnaligned
	Copy2DAsync
)

// MemcpyDtoD2D copies a pitched box within the device with one of the 2-D calls.
func MemcpyDtoD2D(variant int, dst, src uintptr, dstPitch, srcPitch, width, height int, s uintptr) int {
	return r(C.conf_copy2d(C.int(variant), C.CU_MEMORYTYPE_DEVICE, C.CUdeviceptr(src), nil, C.size_t(srcPitch),
		C.CU_MEMORYTYPE_DEVICE, C.CUdeviceptr(dst), nil, C.size_t(dstPitch), C.size_t(width), C.size_t(height), stream(s)))
}

// MemcpyHtoD2D copies a pitched box from host memory to the device.
func MemcpyHtoD2D(variant int, dst uintptr, src Host, dstPitch, srcPitch, width, height int, s uintptr) int {
	return r(C.conf_copy2d(C.int(variant), C.CU_MEMORYTYPE_HOST, 0, src.P, C.size_t(srcPitch),
		C.CU_MEMORYTYPE_DEVICE, C.CUdeviceptr(dst), nil, C.size_t(dstPitch), C.size_t(width), C.size_t(height), stream(s)))
}

// Memcpy3DDtoD copies depth slices of rows rows of width bytes within the device.
func Memcpy3DDtoD(dst, src uintptr, pitch, height, width, rows, depth int) int {
	return r(C.conf_copy3d(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(pitch), C.size_t(height), C.size_t(width), C.size_t(rows), C.size_t(depth)))
}

func StreamCreate(flags uint32) (uintptr, int) {
	var s C.CUstream
	c := C.cuStreamCreate(&s, C.uint(flags))
	return uintptr(unsafe.Pointer(s)), r(c)
}

func StreamDestroy(s uintptr) int     { return r(C.cuStreamDestroy(stream(s))) }
func StreamSynchronize(s uintptr) int { return r(C.cuStreamSynchronize(stream(s))) }
func StreamQuery(s uintptr) int       { return r(C.cuStreamQuery(stream(s))) }

func StreamWaitEvent(s, e uintptr) int {
	return r(C.cuStreamWaitEvent(stream(s), C.CUevent(ptr(e)), 0))
}

func EventCreate(flags uint32) (uintptr, int) {
	var e C.CUevent
	c := C.cuEventCreate(&e, C.uint(flags))
	return uintptr(unsafe.Pointer(e)), r(c)
}

func EventDestroy(e uintptr) int       { return r(C.cuEventDestroy(C.CUevent(ptr(e)))) }
func EventRecord(e, s uintptr) int     { return r(C.cuEventRecord(C.CUevent(ptr(e)), stream(s))) }
func EventQuery(e uintptr) int         { return r(C.cuEventQuery(C.CUevent(ptr(e)))) }
func EventSynchronize(e uintptr) int   { return r(C.cuEventSynchronize(C.CUevent(ptr(e)))) }
func GateStream(s uintptr, id int) int { return r(C.conf_gate(stream(s), C.uintptr_t(id))) }
func ModuleUnload(m uintptr) int       { return r(C.cuModuleUnload(C.CUmodule(ptr(m)))) }
func IPCCloseMemHandle(p uintptr) int  { return r(C.cuIpcCloseMemHandle(C.CUdeviceptr(p))) }
func EventElapsed(a, b uintptr) (float32, int) {
	var ms C.float
	c := C.cuEventElapsedTime(&ms, C.CUevent(ptr(a)), C.CUevent(ptr(b)))
	return float32(ms), r(c)
}

// ModuleLoadData loads a module image (copied with a terminating NUL, as
// the driver reads PTX to it).
func ModuleLoadData(image []byte) (uintptr, int) {
	buf := C.CBytes(append(append([]byte(nil), image...), 0))
	defer C.free(buf)
	var m C.CUmodule
	c := C.cuModuleLoadData(&m, buf)
	return uintptr(unsafe.Pointer(m)), r(c)
}

func ModuleGetFunction(m uintptr, name string) (uintptr, int) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	c := C.cuModuleGetFunction(&f, C.CUmodule(ptr(m)), cs)
	return uintptr(unsafe.Pointer(f)), r(c)
}

// Launch launches f on grid×block threads (x only) with the parameters
// packed in buf at offsets.
func Launch(f uintptr, grid, block int, s uintptr, buf []byte, offsets []int) int {
	cbuf := C.CBytes(append(buf, make([]byte, 8)...))
	defer C.free(cbuf)
	offs := make([]C.size_t, len(offsets)+1)
	for i, o := range offsets {
		offs[i] = C.size_t(o)
	}
	return r(C.conf_launch(C.CUfunction(ptr(f)), C.uint(grid), C.uint(block), stream(s), cbuf, &offs[0], C.int(len(offsets))))
}

func IPCGetMemHandle(p uintptr) ([]byte, int) {
	h := make([]byte, IPCHandleSize)
	buf := C.malloc(C.size_t(IPCHandleSize))
	defer C.free(buf)
	c := C.conf_ipc_get(buf, C.CUdeviceptr(p))
	copy(h, unsafe.Slice((*byte)(buf), IPCHandleSize))
	return h, r(c)
}

func IPCOpenMemHandle(h []byte) (uintptr, int) {
	buf := C.CBytes(h)
	defer C.free(buf)
	var p C.CUdeviceptr
	c := C.conf_ipc_open(&p, buf)
	return uintptr(p), r(c)
}

func ErrorName(code int) string {
	var s *C.char
	if C.cuGetErrorName(C.CUresult(code), &s) != C.CUDA_SUCCESS || s == nil {
		return "unknown"
	}
	return C.GoString(s)
}

func stream(s uintptr) C.CUstream { return C.CUstream(ptr(s)) }

// ptr is the C address h (a handle or a pointer the driver gave) as a pointer.
func ptr(h uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&h)) }
