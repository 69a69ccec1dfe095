/*
 * desc.h: cuarray_desc, an array as cuarray_describe fills it in, once per
 * array: the Python module keeps it and reads its layout from it, and
 * cuarray_dlpack_capsule builds DLPack tensors from it (keep.c).
 */
#ifndef CUARRAY_DESC_H
#define CUARRAY_DESC_H

#include <stdint.h>

#define CUARRAY_MAX_DIMS 64

typedef struct {
	uint64_t ptr;        // address of element 0
	int64_t itemsize;    // bytes
	int64_t extent[2];   // the bytes elements reach, from ptr: [lo, hi)
	int32_t ndim;
	uint32_t flags;      // 1 read-only, 2 C-contiguous, 4 F-contiguous, 8 host-accessible, 16 owned, 32 view
	int32_t dl_device[2];  // DLPack device type (-1: none) and id
	char typestr[8];     // "<f4"
	char dtype[16];      // "float32"
	char kind[16];       // "cuda", "sim", "cpu", ...
	char device[40];     // "sim:0"
	int64_t shape[CUARRAY_MAX_DIMS];
	int64_t strides[CUARRAY_MAX_DIMS];  // bytes
	void *keep;          // what keeps the memory alive while DLPack tensors of it live (keep.h)
	uint32_t keep_gen;   // the keep's generation when the array was described
	int32_t dl_ok;       // 1: a DLPack tensor can describe the array (device, dtype, element strides)
	uint8_t dl_code;     // DLPack dtype: code, bits, lanes
	uint8_t dl_bits;
	uint16_t dl_lanes;
	uint32_t reserved;
} cuarray_desc;

#endif
