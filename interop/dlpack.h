/*
 * dlpack.h: the DLPack 1.x ABI (https://github.com/dmlc/dlpack), only the
 * types cuarray exchanges, plus cuarray's own deleters (dlpack.c).
 * The layouts must match the DLPack specification byte for byte.
 */
#ifndef CUARRAY_DLPACK_H
#define CUARRAY_DLPACK_H

#include <stdint.h>

#define CUARRAY_DLPACK_MAJOR 1
#define CUARRAY_DLPACK_MINOR 1

#define CUARRAY_DLPACK_FLAG_READ_ONLY (UINT64_C(1) << 0)
#define CUARRAY_DLPACK_FLAG_IS_COPIED (UINT64_C(1) << 1)

typedef struct {
	uint32_t major;
	uint32_t minor;
} DLPackVersion;

typedef struct {
	int32_t device_type; /* DLDeviceType: kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 */
	int32_t device_id;
} DLDevice;

typedef struct {
	uint8_t code; /* DLDataTypeCode */
	uint8_t bits;
	uint16_t lanes;
} DLDataType;

typedef struct {
	void *data;
	DLDevice device;
	int32_t ndim;
	DLDataType dtype;
	int64_t *shape;
	int64_t *strides; /* in elements; NULL means C-contiguous */
	uint64_t byte_offset;
} DLTensor;

/* The legacy (pre-1.0) managed tensor, capsule name "dltensor". */
typedef struct DLManagedTensor {
	DLTensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* The 1.x managed tensor, capsule name "dltensor_versioned". */
typedef struct DLManagedTensorVersioned {
	DLPackVersion version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
	DLTensor dl_tensor;
} DLManagedTensorVersioned;

/*
 * cuarray's exports: one malloc'd block holds the managed tensor, the Go
 * handle of what keeps the memory alive, and the shape and strides.
 */
typedef struct {
	DLManagedTensorVersioned t;
	uintptr_t handle;
	int64_t dims[]; /* shape[ndim], then strides[ndim] */
} cuarray_dlpack_versioned;

typedef struct {
	DLManagedTensor t;
	uintptr_t handle;
	int64_t dims[];
} cuarray_dlpack_legacy;

cuarray_dlpack_versioned *cuarray_dlpack_new_versioned(int32_t ndim);
cuarray_dlpack_legacy *cuarray_dlpack_new_legacy(int32_t ndim);

/* Call a managed tensor's deleter, if it has one. */
void cuarray_dlpack_delete_versioned(DLManagedTensorVersioned *t);
void cuarray_dlpack_delete_legacy(DLManagedTensor *t);

#endif
