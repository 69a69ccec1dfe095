//go:build cuda

package cuda

// This file binds the few driver calls gorgonia.org/cu does not: host
// allocation and registration, mapped device pointers, pointer attributes,
// IPC handles, module loading with the JIT's logs, a launch that takes
// arguments of any size, and 2-D/3-D copies whose parameter struct holds
// host pointers (built in C, so no Go memory holds a pointer to Go memory).

/*
#cgo !linux LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/lib/x86_64-linux-gnu -L/usr/local/cuda/lib64
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static CUresult cuarray_memcpy3d(
	int dstType, CUdeviceptr dstDev, void *dstHost, size_t dstPitch, size_t dstHeight,
	int srcType, CUdeviceptr srcDev, const void *srcHost, size_t srcPitch, size_t srcHeight,
	size_t width, size_t height, size_t depth, CUstream stream, int async)
{
	// A 2-D copy is cuMemcpy2DUnaligned, which takes any pitch; queued, it is a 3-D copy of
	// depth 1: cuMemcpy2DAsync "may fail for pitches not computed by cuMemAllocPitch" within a
	// device, cuMemcpy3DAsync has no such rule.
	if (depth == 1 && !async) {
		CUDA_MEMCPY2D p;
		memset(&p, 0, sizeof p);
		p.dstMemoryType = (CUmemorytype)dstType; p.dstDevice = dstDev; p.dstHost = dstHost; p.dstPitch = dstPitch;
		p.srcMemoryType = (CUmemorytype)srcType; p.srcDevice = srcDev; p.srcHost = srcHost; p.srcPitch = srcPitch;
		p.WidthInBytes = width; p.Height = height;
		return cuMemcpy2DUnaligned(&p);
	}
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof p);
	p.dstMemoryType = (CUmemorytype)dstType; p.dstDevice = dstDev; p.dstHost = dstHost; p.dstPitch = dstPitch; p.dstHeight = dstHeight;
	p.srcMemoryType = (CUmemorytype)srcType; p.srcDevice = srcDev; p.srcHost = srcHost; p.srcPitch = srcPitch; p.srcHeight = srcHeight;
	p.WidthInBytes = width; p.Height = height; p.Depth = depth;
	return async ? cuMemcpy3DAsync(&p, stream) : cuMemcpy3D(&p);
}

// cuarray_launch copies the packed parameters into C memory, points an
// argument array into it and launches.
static CUresult cuarray_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
	unsigned bx, unsigned by, unsigned bz, unsigned shared, CUstream stream,
	const void *params, size_t nbytes, const long long *offsets, int nargs)
{
	char *buf = malloc(nbytes ? nbytes : 1);
	void **argv = malloc(sizeof(void *) * (nargs ? nargs : 1));
	if (buf == NULL || argv == NULL) {
		free(buf); free(argv);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(buf, params, nbytes);
	for (int i = 0; i < nargs; i++) argv[i] = buf + offsets[i];
	CUresult r = cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, argv, NULL);
	free(buf); free(argv);
	return r;
}

static CUresult cuarray_pointer_attrs(CUdeviceptr p, unsigned int *memType, int *ordinal,
	CUdeviceptr *start, size_t *size, unsigned int *managed, CUcontext *ctx)
{
	CUpointer_attribute attrs[] = {
		CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
		CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_CONTEXT,
	};
	void *data[] = { memType, ordinal, start, size, managed, ctx };
	return cuPointerGetAttributes(6, attrs, data, p);
}

// cuarray_module_load loads a module image (a fatbin, a cubin or PTX) with
// the JIT's info and error logs. The driver reads PTX up to its
// terminating NUL, so the image is copied with one.
static CUresult cuarray_module_load(CUmodule *m, const void *image, size_t n,
	char *info, size_t infoSize, char *errs, size_t errSize)
{
	char *buf = malloc(n + 1);
	if (buf == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(buf, image, n);
	buf[n] = 0;
	CUjit_option opts[] = {
		CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
		CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
	};
	void *vals[] = { info, (void *)(uintptr_t)infoSize, errs, (void *)(uintptr_t)errSize };
	CUresult r = cuModuleLoadDataEx(m, buf, 4, opts, vals);
	free(buf);
	return r;
}

static const char *cuarray_error_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == NULL) return "CUDA_ERROR_UNKNOWN_CODE";
	return s;
}

static const char *cuarray_error_string(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || s == NULL) return "unknown error";
	return s;
}
*/
import "C"

import (
	"unsafe"

	"gorgonia.org/cu"
)

// Driver result codes that map to cuarray's error kinds.
const (
	codeInvalidValue          = int(C.CUDA_ERROR_INVALID_VALUE)
	codeOutOfMemory           = int(C.CUDA_ERROR_OUT_OF_MEMORY)
	codeNoDevice              = int(C.CUDA_ERROR_NO_DEVICE)
	codeInvalidDevice         = int(C.CUDA_ERROR_INVALID_DEVICE)
	codeNotReady              = int(C.CUDA_ERROR_NOT_READY)
	codeNotMapped             = int(C.CUDA_ERROR_NOT_MAPPED)
	codeNotMappedAsPointer    = int(C.CUDA_ERROR_NOT_MAPPED_AS_POINTER)
	codeInvalidHandle         = int(C.CUDA_ERROR_INVALID_HANDLE)
	codeInvalidContext        = int(C.CUDA_ERROR_INVALID_CONTEXT)
	codeContextIsDestroyed    = int(C.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	codeHostAlreadyRegistered = int(C.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
	codeHostNotRegistered     = int(C.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
	codeNotFound              = int(C.CUDA_ERROR_NOT_FOUND)
	codeIllegalAddress        = int(C.CUDA_ERROR_ILLEGAL_ADDRESS)
	codeLaunchFailed          = int(C.CUDA_ERROR_LAUNCH_FAILED)
)

// Driver results after which the context is unusable ("sticky" errors:
// every later call returns the same error; cuda.h: "the process must be
// terminated and relaunched"), driver.ErrContextFailed.
var stickyCodes = map[int]bool{
	int(C.CUDA_ERROR_EXTERNAL_DEVICE):       true,
	int(C.CUDA_ERROR_MPS_CLIENT_TERMINATED): true,
	codeIllegalAddress:                      true,
	codeLaunchFailed:                        true,
	int(C.CUDA_ERROR_LAUNCH_TIMEOUT):        true,
	int(C.CUDA_ERROR_HARDWARE_STACK_ERROR):  true,
	int(C.CUDA_ERROR_ILLEGAL_INSTRUCTION):   true,
	int(C.CUDA_ERROR_MISALIGNED_ADDRESS):    true,
	int(C.CUDA_ERROR_INVALID_ADDRESS_SPACE): true,
	int(C.CUDA_ERROR_INVALID_PC):            true,
	int(C.CUDA_ERROR_ASSERT):                true,
	int(C.CUDA_ERROR_ECC_UNCORRECTABLE):     true,
}

// Memory types of cuPointerGetAttribute and CUDA_MEMCPY2D/3D.
const (
	memHost    = int(C.CU_MEMORYTYPE_HOST)
	memDevice  = int(C.CU_MEMORYTYPE_DEVICE)
	memUnified = int(C.CU_MEMORYTYPE_UNIFIED)
)

// Flags of cuMemHostAlloc and cuMemHostRegister.
const (
	hostAllocPortable      = uint32(C.CU_MEMHOSTALLOC_PORTABLE)
	hostAllocDeviceMap     = uint32(C.CU_MEMHOSTALLOC_DEVICEMAP)
	hostAllocWriteCombined = uint32(C.CU_MEMHOSTALLOC_WRITECOMBINED)
	hostRegisterPortable   = uint32(C.CU_MEMHOSTREGISTER_PORTABLE)
	hostRegisterDeviceMap  = uint32(C.CU_MEMHOSTREGISTER_DEVICEMAP)
)

// headerVersion is the CUDA version of the cuda.h the backend was built with.
const headerVersion = int(C.CUDA_VERSION)

// ipcHandleSize is the size of a CUipcMemHandle.
const ipcHandleSize = C.CU_IPC_HANDLE_SIZE

// errorName returns the driver's name and description of a result code. It
// loads the driver first (cu.Init, once), as only a loaded one can name codes.
func errorName(code int) (name, desc string) {
	_ = cu.Init()
	r := C.CUresult(code)
	return C.GoString(C.cuarray_error_name(r)), C.GoString(C.cuarray_error_string(r))
}

func code(r C.CUresult) int { return int(r) }

func cstream(s cu.Stream) C.CUstream { return C.CUstream(unsafe.Pointer(s.C())) }

// streamFromHandle makes a cu.Stream of a raw CUstream: gorgonia.org/cu
// has no constructor for one, and its Stream is a struct of one CUstream.
func streamFromHandle(h uintptr) cu.Stream {
	var s cu.Stream
	*(*uintptr)(unsafe.Pointer(&s)) = h
	return s
}

func ctxFlags() (uint32, int) {
	var f C.uint
	r := C.cuCtxGetFlags(&f)
	return uint32(f), code(r)
}

func memHostAlloc(n int64, flags uint32) (unsafe.Pointer, int) {
	var p unsafe.Pointer
	r := C.cuMemHostAlloc(&p, C.size_t(n), C.uint(flags))
	return p, code(r)
}

func memFreeHost(p unsafe.Pointer) int { return code(C.cuMemFreeHost(p)) }

func memHostGetDevicePointer(p unsafe.Pointer) (uintptr, int) {
	var d C.CUdeviceptr
	r := C.cuMemHostGetDevicePointer(&d, p, 0)
	return uintptr(d), code(r)
}

// memHostRegister page-locks memory that is not Go heap memory (the caller
// checks that), so the driver may keep the pointer after the call.
func memHostRegister(p unsafe.Pointer, n int64, flags uint32) int {
	return code(C.cuMemHostRegister(p, C.size_t(n), C.uint(flags)))
}

func memHostUnregister(p unsafe.Pointer) int { return code(C.cuMemHostUnregister(p)) }

// pointerAttrs are the attributes of an address the driver knows about.
type pointerAttrs struct {
	memType     int
	ordinal     int
	start, size uintptr
	managed     bool
}

func pointerAttributes(p uintptr) (pointerAttrs, int) {
	var (
		mt, managed C.uint
		ord         C.int
		start       C.CUdeviceptr
		size        C.size_t
		ctx         C.CUcontext
	)
	r := C.cuarray_pointer_attrs(C.CUdeviceptr(p), &mt, &ord, &start, &size, &managed, &ctx)
	return pointerAttrs{memType: int(mt), ordinal: int(ord), start: uintptr(start), size: uintptr(size), managed: managed != 0}, code(r)
}

func ipcGetMemHandle(p uintptr) ([ipcHandleSize]byte, int) {
	var h C.CUipcMemHandle
	r := C.cuIpcGetMemHandle(&h, C.CUdeviceptr(p))
	var out [ipcHandleSize]byte
	copy(out[:], C.GoBytes(unsafe.Pointer(&h.reserved[0]), ipcHandleSize))
	return out, code(r)
}

func ipcOpenMemHandle(handle [ipcHandleSize]byte) (uintptr, int) {
	var h C.CUipcMemHandle
	for i, b := range handle {
		h.reserved[i] = C.char(b)
	}
	var d C.CUdeviceptr
	r := C.cuIpcOpenMemHandle(&d, h, C.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
	return uintptr(d), code(r)
}

func ipcCloseMemHandle(p uintptr) int { return code(C.cuIpcCloseMemHandle(C.CUdeviceptr(p))) }

// copyPlace is one side of a 2-D/3-D copy in driver terms.
type copyPlace struct {
	memType int
	dev     uintptr
	host    unsafe.Pointer
}

func memcpy3D(dst, src copyPlace, dstPitch, dstHeight, srcPitch, srcHeight, width, height, depth int64, s C.CUstream, async bool) int {
	a := C.int(0)
	if async {
		a = 1
	}
	return code(C.cuarray_memcpy3d(
		C.int(dst.memType), C.CUdeviceptr(dst.dev), dst.host, C.size_t(dstPitch), C.size_t(dstHeight),
		C.int(src.memType), C.CUdeviceptr(src.dev), src.host, C.size_t(srcPitch), C.size_t(srcHeight),
		C.size_t(width), C.size_t(height), C.size_t(depth), s, a))
}

// jitLogBytes is the size of each JIT log buffer of moduleLoad.
const jitLogBytes = 16 << 10

// moduleLoad loads a module image (cuModuleLoadDataEx) and returns the
// JIT's error and info logs, empty when it wrote none.
func moduleLoad(image string) (m C.CUmodule, errLog, infoLog string, c int) {
	if len(image) == 0 {
		return m, "", "", codeInvalidValue
	}
	info := make([]byte, jitLogBytes)
	errs := make([]byte, jitLogBytes)
	r := C.cuarray_module_load(&m, unsafe.Pointer(unsafe.StringData(image)), C.size_t(len(image)),
		(*C.char)(unsafe.Pointer(&info[0])), C.size_t(len(info)), (*C.char)(unsafe.Pointer(&errs[0])), C.size_t(len(errs)))
	return m, cString(errs), cString(info), code(r)
}

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func moduleUnload(m C.CUmodule) int { return code(C.cuModuleUnload(m)) }

func moduleGetFunction(m C.CUmodule, name string) (C.CUfunction, int) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	r := C.cuModuleGetFunction(&f, m, cs)
	return f, code(r)
}

func launch(f C.CUfunction, grid, block [3]uint32, shared uint32, s C.CUstream, params []byte, offsets []int) int {
	offs := make([]C.longlong, len(offsets)+1)
	for i, o := range offsets {
		offs[i] = C.longlong(o)
	}
	var pp unsafe.Pointer
	if len(params) > 0 {
		pp = unsafe.Pointer(&params[0])
	}
	return code(C.cuarray_launch(f,
		C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.uint(shared), s, pp, C.size_t(len(params)), &offs[0], C.int(len(offsets))))
}
