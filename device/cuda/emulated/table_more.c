//go:build cuda && cudaemu && linux

// The rest of the emulated driver's symbol table (table.c has the first
// part): contexts made by cuCtxCreate and the context stack, limits and
// cache and shared-memory configuration, the memsets beyond cuMemsetD8,
// CUDA arrays and device UUIDs; modules from files, their variables,
// functions' attributes and the linker.
#include <cuda.h>
#include <string.h>
#include "_cgo_export.h"

#define E(name) {#name, (void *)cuemu_##name}
static const struct { const char *name; void *fn; } cuemu_table_more[] = {
	E(cuCtxCreate_v2), E(cuCtxDestroy_v2), E(cuCtxPushCurrent_v2), E(cuCtxPopCurrent_v2),
	E(cuCtxGetApiVersion), E(cuCtxGetLimit), E(cuCtxSetLimit),
	E(cuCtxGetCacheConfig), E(cuCtxSetCacheConfig), E(cuCtxGetSharedMemConfig), E(cuCtxSetSharedMemConfig),
	E(cuFuncSetCacheConfig), E(cuFuncSetSharedMemConfig),
	E(cuMemsetD16_v2), E(cuMemsetD16Async), E(cuMemsetD32_v2), E(cuMemsetD32Async),
	E(cuMemsetD2D8_v2), E(cuMemsetD2D8Async), E(cuMemsetD2D16_v2), E(cuMemsetD2D16Async),
	E(cuMemsetD2D32_v2), E(cuMemsetD2D32Async),
	E(cuArrayCreate_v2), E(cuArray3DCreate_v2), E(cuArrayGetDescriptor_v2), E(cuArray3DGetDescriptor_v2),
	E(cuArrayDestroy),
	E(cuDeviceGetUuid), E(cuDeviceGetUuid_v2),
	E(cuModuleLoad), E(cuModuleGetGlobal_v2), E(cuFuncGetAttribute),
	E(cuLinkCreate_v2), E(cuLinkAddData_v2), E(cuLinkAddFile_v2), E(cuLinkComplete), E(cuLinkDestroy),
};

// cuemu_lookup_more returns the emulated function of a symbol in this
// part of the table, or NULL.
void *cuemu_lookup_more(const char *name) {
	for (size_t i = 0; i < sizeof cuemu_table_more / sizeof cuemu_table_more[0]; i++) {
		if (strcmp(cuemu_table_more[i].name, name) == 0) return cuemu_table_more[i].fn;
	}
	return NULL;
}
