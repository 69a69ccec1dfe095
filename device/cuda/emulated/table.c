//go:build cuda && cudaemu && linux

// The emulated driver's symbol table: each driver function by the symbol
// name cuda.h gives it, as libcuda.so.1 exports it (cuMemAlloc_v2; the
// unversioned cuMemAlloc is not here, so a binding to it fails).
#include <cuda.h>
#include <string.h>
#include "_cgo_export.h"

static CUresult cuemu_not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }
static CUresult cuemu_refuse(void) { return CUDA_ERROR_INVALID_VALUE; }

// cuemu_refused returns the function of a call the configuration refuses
// (refuse=): it answers CUDA_ERROR_INVALID_VALUE and does nothing.
void *cuemu_refused(void) { return (void *)cuemu_refuse; }

static CUresult cuemu_cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags) {
	return cuemu_ipc_open(p, &h, flags);
}

#define E(name) {#name, (void *)cuemu_##name}
static const struct { const char *name; void *fn; } cuemu_table[] = {
	E(cuInit), E(cuDriverGetVersion), E(cuGetErrorName), E(cuGetErrorString),
	E(cuDeviceGetCount), E(cuDeviceGet), E(cuDeviceGetName), E(cuDeviceTotalMem_v2),
	E(cuDeviceGetAttribute), E(cuDeviceCanAccessPeer),
	E(cuDevicePrimaryCtxGetState), E(cuDevicePrimaryCtxRetain), E(cuDevicePrimaryCtxRelease_v2),
	E(cuDevicePrimaryCtxReset_v2), E(cuDevicePrimaryCtxSetFlags_v2),
	E(cuCtxSetCurrent), E(cuCtxGetCurrent), E(cuCtxGetDevice), E(cuCtxGetFlags), E(cuCtxSynchronize),
	E(cuMemGetInfo_v2), E(cuMemAlloc_v2), E(cuMemFree_v2),
	E(cuMemHostAlloc), E(cuMemFreeHost), E(cuMemHostGetDevicePointer_v2),
	E(cuMemHostRegister_v2), E(cuMemHostUnregister), E(cuPointerGetAttributes),
	E(cuMemcpyHtoD_v2), E(cuMemcpyHtoDAsync_v2), E(cuMemcpyDtoH_v2), E(cuMemcpyDtoHAsync_v2),
	E(cuMemcpyDtoD_v2), E(cuMemcpyDtoDAsync_v2), E(cuMemcpyPeer), E(cuMemcpyPeerAsync), E(cuMemsetD8_v2), E(cuMemsetD8Async),
	E(cuMemcpy2D_v2), E(cuMemcpy2DUnaligned_v2), E(cuMemcpy2DAsync_v2), E(cuMemcpy3D_v2), E(cuMemcpy3DAsync_v2),
	E(cuStreamCreate), E(cuStreamDestroy_v2), E(cuStreamSynchronize), E(cuStreamQuery), E(cuStreamWaitEvent),
	E(cuEventCreate), E(cuEventDestroy_v2), E(cuEventRecord), E(cuEventQuery), E(cuEventSynchronize),
	E(cuEventElapsedTime),
	E(cuModuleLoadData), E(cuModuleLoadDataEx), E(cuModuleUnload), E(cuModuleGetFunction), E(cuLaunchKernel),
	E(cuIpcGetMemHandle), E(cuIpcOpenMemHandle_v2), E(cuIpcCloseMemHandle),
	E(cuLaunchHostFunc), E(cuMemGetAddressRange_v2),
	E(cuMemAllocAsync), E(cuMemAllocFromPoolAsync), E(cuMemFreeAsync), E(cuDeviceGetDefaultMemPool),
	E(cuMemPoolCreate), E(cuMemPoolDestroy), E(cuMemPoolSetAttribute), E(cuMemPoolGetAttribute), E(cuMemPoolTrimTo),
	E(cuMemPoolExportToShareableHandle), E(cuMemPoolImportFromShareableHandle),
	E(cuMemPoolExportPointer), E(cuMemPoolImportPointer),
	E(cuMemGetAllocationGranularity), E(cuMemAddressReserve), E(cuMemAddressFree), E(cuMemCreate), E(cuMemRelease),
	E(cuMemMap), E(cuMemUnmap), E(cuMemSetAccess),
	E(cuMemAllocManaged), E(cuMemAdvise), E(cuMemRangeGetAttribute), E(cuMemRangeGetAttributes),
	E(cuStreamAttachMemAsync), E(cuMemPrefetchAsync),
};

// cuemu_call_host runs a host function of cuLaunchHostFunc.
void cuemu_call_host(CUhostFn fn, void *data) { fn(data); }

// cuemu_lookup returns the emulated function of a symbol, or one that
// answers CUDA_ERROR_NOT_SUPPORTED for a driver function cuarray does not call.
void *cuemu_lookup(const char *name) {
	for (size_t i = 0; i < sizeof cuemu_table / sizeof cuemu_table[0]; i++) {
		if (strcmp(cuemu_table[i].name, name) == 0) return cuemu_table[i].fn;
	}
	return (void *)cuemu_not_supported;
}

// cuemu_implements reports whether the table has name.
int cuemu_implements(const char *name) {
	for (size_t i = 0; i < sizeof cuemu_table / sizeof cuemu_table[0]; i++) {
		if (strcmp(cuemu_table[i].name, name) == 0) return 1;
	}
	return 0;
}
