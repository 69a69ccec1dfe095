/*
 * keep.h: what keeps an array's memory alive while DLPack tensors of it
 * live, in C memory, so that a tensor is made and deleted without a call
 * into Go (keep.c, keep.go).
 */
#ifndef CUARRAY_KEEP_H
#define CUARRAY_KEEP_H

#include <stdint.h>

#include "desc.h"

/*
 * cuarray_keep: one per allocation (an array and its views share it).
 * state, always read and written atomically, is
 *     generation << 32 | live tensors << 1 | released
 * where the live tensors are the DLPack tensors and the holds
 * (cuarray_keep_hold) of the Python module's other exports.
 * released: the array's owner freed it (Go set the bit); generation: the
 * keep's life, so that a description kept after the keep went back to the
 * pool (and maybe to another array) is refused rather than counted.
 * Keeps are never returned to the C heap: a stale pointer still points to
 * a keep. A keep's generations never wrap: after its 2^32 - 1st life it is
 * retired, released for good (cuarray_keep_recycle).
 */
typedef struct cuarray_keep {
	uint64_t state;
	struct cuarray_keep *next; /* in the pool, or in the drained list */
} cuarray_keep;

/* The results of cuarray_keep_export. */
enum {
	CUARRAY_KEEP_OK = 0,
	CUARRAY_KEEP_RELEASED = 1,   /* the array was freed (or the description is stale) */
	CUARRAY_KEEP_NO_DLPACK = 2,  /* DLPack cannot describe the array (dl_ok is 0) */
	CUARRAY_KEEP_READ_ONLY = 3,  /* a read-only array for the legacy ABI, which cannot say so */
	CUARRAY_KEEP_NO_MEMORY = 4,  /* malloc failed */
	CUARRAY_KEEP_TOO_MANY = 5,   /* 2^31 - 1 tensors of the array are alive */
};

/* cuarray_keep_drained: the head of the drained list (read by Go without a call). */
extern cuarray_keep *cuarray_keep_drained;

cuarray_keep *cuarray_keep_new(uint32_t *gen);
uint64_t cuarray_keep_release(cuarray_keep *k);
void cuarray_keep_recycle(cuarray_keep *k);
cuarray_keep *cuarray_keep_drain(void);
uint64_t cuarray_keep_tensors(const cuarray_keep *k);
int cuarray_keep_export(const cuarray_desc *d, int versioned, void **out);
int cuarray_keep_owns(const void *tensor, int versioned);
int cuarray_keep_hold(const cuarray_desc *d, void **out);
void cuarray_keep_unhold(void *k);
uint64_t cuarray_keep_live(const void *k, uint32_t gen);

#endif
