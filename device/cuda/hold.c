//go:build cuda

#include <cuda.h>
#include <stdint.h>
#include "_cgo_export.h"

// cuarray_hold_fn is the host function a held stream runs: it waits in Go
// until the hold is released.
static void CUDA_CB cuarray_hold_fn(void *id) { cuarrayHoldWait((uintptr_t)id); }

CUresult cuarray_hold(CUstream s, uintptr_t id) { return cuLaunchHostFunc(s, cuarray_hold_fn, (void *)id); }
