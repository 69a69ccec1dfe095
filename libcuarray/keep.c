// The keeps and the DLPack tensors built on them (keep.h). A tensor is one
// malloc'd block (the managed tensor, then shape and strides); its deleter
// counts the tensor out of its keep and frees the block, and calls nothing
// in Go and nothing of the CUDA driver. When the array's owner has freed it
// (keep released) and the last tensor goes, the keep goes on the drained
// list, from which Go releases the memory (keep.go: reapKeeps).
#include <pthread.h>
#include <stdlib.h>

#include "../interop/dlpack.h"
#include "keep.h"

#define KEEP_RELEASED UINT64_C(1)
#define KEEP_ONE UINT64_C(2)
#define KEEP_TENSORS(s) (((s) & UINT64_C(0xffffffff)) >> 1)
#define KEEP_GEN(s) ((uint32_t)((s) >> 32))
#define KEEP_MAX_TENSORS UINT64_C(0x7fffffff)

cuarray_keep *cuarray_keep_drained;
static cuarray_keep *pool;
static pthread_mutex_t lists = PTHREAD_MUTEX_INITIALIZER;

/* cuarray_keep_new returns a keep with no tensors, not released, and its generation. */
cuarray_keep *cuarray_keep_new(uint32_t *gen) {
	pthread_mutex_lock(&lists);
	cuarray_keep *k = pool;
	if (k != NULL) {
		pool = k->next;
	}
	pthread_mutex_unlock(&lists);
	if (k == NULL) {
		k = calloc(1, sizeof *k);
		if (k == NULL) {
			return NULL;
		}
		__atomic_store_n(&k->state, (uint64_t)1 << 32, __ATOMIC_RELEASE);
	}
	k->next = NULL;
	uint64_t s = __atomic_load_n(&k->state, __ATOMIC_ACQUIRE);
	*gen = KEEP_GEN(s);
	__atomic_store_n(&k->state, (uint64_t)*gen << 32, __ATOMIC_RELEASE);
	return k;
}

/* cuarray_keep_release marks the keep released (its array was freed) and
 * returns how many tensors of it were alive then: with none, the caller
 * recycles it; otherwise the last deleter puts it on the drained list. */
uint64_t cuarray_keep_release(cuarray_keep *k) {
	return KEEP_TENSORS(__atomic_fetch_or(&k->state, KEEP_RELEASED, __ATOMIC_ACQ_REL));
}

/* cuarray_keep_recycle puts a released keep with no tensors back in the
 * pool under its next generation. A keep whose generations ran out (its
 * last life was 2^32 - 1) is retired instead: it stays released, and is
 * never handed out again, since a next life of generation 1 would take the
 * exports of a description kept from its first life (16 bytes lost per
 * 2^32 - 1 lives of one keep). Generation 0 is never live: a zeroed
 * description names none. */
void cuarray_keep_recycle(cuarray_keep *k) {
	uint64_t s = __atomic_load_n(&k->state, __ATOMIC_ACQUIRE);
	uint32_t gen = KEEP_GEN(s) + 1;
	if (gen == 0) {
		return;
	}
	__atomic_store_n(&k->state, (uint64_t)gen << 32 | KEEP_RELEASED, __ATOMIC_RELEASE);
	pthread_mutex_lock(&lists);
	k->next = pool;
	pool = k;
	pthread_mutex_unlock(&lists);
}

/* cuarray_keep_drain takes the drained list: released keeps whose last
 * tensor was deleted, linked by next. */
cuarray_keep *cuarray_keep_drain(void) {
	pthread_mutex_lock(&lists);
	cuarray_keep *k = cuarray_keep_drained;
	__atomic_store_n(&cuarray_keep_drained, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lists);
	return k;
}

/* cuarray_keep_tensors returns how many tensors of the keep are alive. */
uint64_t cuarray_keep_tensors(const cuarray_keep *k) {
	return KEEP_TENSORS(__atomic_load_n(&k->state, __ATOMIC_ACQUIRE));
}

/* acquire counts one more tensor of a keep of generation gen that is not
 * released; it returns a CUARRAY_KEEP_ result. */
static int acquire(cuarray_keep *k, uint32_t gen) {
	if (k == NULL) {
		return CUARRAY_KEEP_RELEASED;
	}
	uint64_t s = __atomic_load_n(&k->state, __ATOMIC_ACQUIRE);
	for (;;) {
		if (KEEP_GEN(s) != gen || (s & KEEP_RELEASED) != 0) {
			return CUARRAY_KEEP_RELEASED;
		}
		if (KEEP_TENSORS(s) >= KEEP_MAX_TENSORS) {
			return CUARRAY_KEEP_TOO_MANY;
		}
		if (__atomic_compare_exchange_n(&k->state, &s, s + KEEP_ONE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			return CUARRAY_KEEP_OK;
		}
	}
}

/* drop counts a tensor out; the last one of a released keep puts it on the drained list. */
static void drop(cuarray_keep *k) {
	uint64_t s = __atomic_sub_fetch(&k->state, KEEP_ONE, __ATOMIC_ACQ_REL);
	if ((s & UINT64_C(0xffffffff)) == KEEP_RELEASED) {
		pthread_mutex_lock(&lists);
		k->next = cuarray_keep_drained;
		__atomic_store_n(&cuarray_keep_drained, k, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&lists);
	}
}

/* A tensor: the managed tensor of either ABI, its keep, shape and strides. */
typedef struct {
	union {
		DLManagedTensorVersioned v;
		DLManagedTensor l;
	} t;
	cuarray_keep *keep;
	int64_t dims[]; /* shape[ndim], then strides[ndim], in elements */
} tensor;

/* The deleters: from any thread, with or without the GIL, at any time
 * (after the array was freed, while the interpreter finalizes), since they
 * touch only the block and the keep, which is never freed. Each frees self
 * (DLPack's dlpack.h: the deleter deletes the argument self as well), so a
 * second call on the same tensor is the caller's use after free, as with
 * any producer's tensor; it is not detected (the block may already belong
 * to another malloc). */
static void delete_versioned(DLManagedTensorVersioned *self) {
	if (self == NULL) {
		return;
	}
	tensor *b = self->manager_ctx;
	drop(b->keep);
	free(b);
}

static void delete_legacy(DLManagedTensor *self) {
	if (self == NULL) {
		return;
	}
	tensor *b = self->manager_ctx;
	drop(b->keep);
	free(b);
}

/* cuarray_keep_owns says whether a tensor's deleter is one of keep.c's. */
int cuarray_keep_owns(const void *t, int versioned) {
	if (t == NULL) {
		return 0;
	}
	if (versioned) {
		return ((const DLManagedTensorVersioned *)t)->deleter == delete_versioned;
	}
	return ((const DLManagedTensor *)t)->deleter == delete_legacy;
}

/* cuarray_keep_export builds a DLPack tensor of the described array (a
 * DLManagedTensorVersioned, or a legacy DLManagedTensor) in one malloc and
 * counts it in the array's keep; *out is the tensor. Element strides are
 * always written; data is the address of element 0, byte_offset 0. It
 * returns a CUARRAY_KEEP_ result; on any but CUARRAY_KEEP_OK, *out is
 * untouched and nothing is counted. */
int cuarray_keep_export(const cuarray_desc *d, int versioned, void **out) {
	if (!d->dl_ok || d->ndim < 0 || d->ndim > CUARRAY_MAX_DIMS || d->itemsize <= 0) {
		return CUARRAY_KEEP_NO_DLPACK;
	}
	int readonly = (d->flags & 1) != 0;
	if (readonly && !versioned) {
		return CUARRAY_KEEP_READ_ONLY;
	}
	int32_t n = d->ndim;
	tensor *b = malloc(sizeof(tensor) + 2 * (size_t)n * sizeof(int64_t));
	if (b == NULL) {
		return CUARRAY_KEEP_NO_MEMORY;
	}
	int r = acquire(d->keep, d->keep_gen);
	if (r != CUARRAY_KEEP_OK) {
		free(b);
		return r;
	}
	b->keep = d->keep;
	DLTensor *t;
	if (versioned) {
		b->t.v.version.major = CUARRAY_DLPACK_MAJOR;
		b->t.v.version.minor = CUARRAY_DLPACK_MINOR;
		b->t.v.manager_ctx = b;
		b->t.v.deleter = delete_versioned;
		b->t.v.flags = readonly ? CUARRAY_DLPACK_FLAG_READ_ONLY : 0;
		t = &b->t.v.dl_tensor;
	} else {
		b->t.l.manager_ctx = b;
		b->t.l.deleter = delete_legacy;
		t = &b->t.l.dl_tensor;
	}
	for (int32_t i = 0; i < n; i++) {
		b->dims[i] = d->shape[i];
		b->dims[n + i] = d->strides[i] / d->itemsize; /* dl_ok: a multiple of itemsize */
	}
	t->data = (void *)(uintptr_t)d->ptr;
	t->device.device_type = d->dl_device[0];
	t->device.device_id = d->dl_device[1];
	t->ndim = n;
	t->dtype.code = d->dl_code;
	t->dtype.bits = d->dl_bits;
	t->dtype.lanes = d->dl_lanes;
	t->shape = b->dims;
	t->strides = b->dims + n;
	t->byte_offset = 0;
	*out = versioned ? (void *)&b->t.v : (void *)&b->t.l;
	return CUARRAY_KEEP_OK;
}

/* cuarray_keep_hold counts a hold on the memory of the described array in
 * its keep, as a tensor is counted: an export that is no DLPack tensor
 * (the Python module's __array_interface__ and __cuda_array_interface__)
 * keeps the memory until cuarray_keep_unhold, even if the owner frees the
 * array first. *out is the keep to pass to cuarray_keep_unhold. It returns
 * CUARRAY_KEEP_OK, CUARRAY_KEEP_RELEASED (the array was freed, or the
 * description is stale), CUARRAY_KEEP_NO_MEMORY (the array has no keep:
 * C memory ran out when it was made) or CUARRAY_KEEP_TOO_MANY. */
int cuarray_keep_hold(const cuarray_desc *d, void **out) {
	if (d == NULL || out == NULL) {
		return CUARRAY_KEEP_RELEASED;
	}
	if (d->keep == NULL) {
		return CUARRAY_KEEP_NO_MEMORY;
	}
	int r = acquire(d->keep, d->keep_gen);
	if (r == CUARRAY_KEEP_OK) {
		*out = d->keep;
	}
	return r;
}

/* cuarray_keep_unhold lets go of a hold of cuarray_keep_hold, once per
 * hold, from any thread, without calling Go: the last one of a freed
 * array puts its keep on the drained list, as the last tensor's deleter
 * does. */
void cuarray_keep_unhold(void *k) {
	if (k != NULL) {
		drop(k);
	}
}

/* cuarray_keep_live returns how many tensors and holds the keep counts
 * while it is in generation gen, and 0 once it has moved on (a pointer
 * kept after its array went stays valid: keeps are never freed). */
uint64_t cuarray_keep_live(const void *k, uint32_t gen) {
	if (k == NULL) {
		return 0;
	}
	uint64_t s = __atomic_load_n(&((const cuarray_keep *)k)->state, __ATOMIC_ACQUIRE);
	return KEEP_GEN(s) == gen ? KEEP_TENSORS(s) : 0;
}
