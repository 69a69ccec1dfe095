#include <stdlib.h>
#include <string.h>

#include "dlpack.h"
#include "_cgo_export.h"

/* The deleters of cuarray's exports: release the Go side, free the block. */
static void delete_versioned(DLManagedTensorVersioned *self) {
	cuarray_dlpack_versioned *b = (cuarray_dlpack_versioned *)self->manager_ctx;
	cuarrayDLPackRelease(b->handle);
	free(b);
}

static void delete_legacy(DLManagedTensor *self) {
	cuarray_dlpack_legacy *b = (cuarray_dlpack_legacy *)self->manager_ctx;
	cuarrayDLPackRelease(b->handle);
	free(b);
}

cuarray_dlpack_versioned *cuarray_dlpack_new_versioned(int32_t ndim) {
	size_t n = sizeof(cuarray_dlpack_versioned) + 2 * (size_t)ndim * sizeof(int64_t);
	cuarray_dlpack_versioned *b = calloc(1, n);
	if (b == NULL) {
		return NULL;
	}
	b->t.version.major = CUARRAY_DLPACK_MAJOR;
	b->t.version.minor = CUARRAY_DLPACK_MINOR;
	b->t.manager_ctx = b;
	b->t.deleter = delete_versioned;
	b->t.dl_tensor.ndim = ndim;
	b->t.dl_tensor.shape = b->dims;
	b->t.dl_tensor.strides = b->dims + ndim;
	return b;
}

cuarray_dlpack_legacy *cuarray_dlpack_new_legacy(int32_t ndim) {
	size_t n = sizeof(cuarray_dlpack_legacy) + 2 * (size_t)ndim * sizeof(int64_t);
	cuarray_dlpack_legacy *b = calloc(1, n);
	if (b == NULL) {
		return NULL;
	}
	b->t.manager_ctx = b;
	b->t.deleter = delete_legacy;
	b->t.dl_tensor.ndim = ndim;
	b->t.dl_tensor.shape = b->dims;
	b->t.dl_tensor.strides = b->dims + ndim;
	return b;
}

void cuarray_dlpack_delete_versioned(DLManagedTensorVersioned *t) {
	if (t != NULL && t->deleter != NULL) {
		t->deleter(t);
	}
}

void cuarray_dlpack_delete_legacy(DLManagedTensor *t) {
	if (t != NULL && t->deleter != NULL) {
		t->deleter(t);
	}
}
