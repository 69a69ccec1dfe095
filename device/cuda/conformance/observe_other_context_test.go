//go:build cuda

package conformance

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
)

// childOtherContext names the child row of otherContextChild.
const childOtherContext = "observe-other-context"

// otherContextChild: what a second context of device 0 (cuCtxCreate) may
// do with memory the primary context allocated: copy it to the host with
// cuMemcpyDtoH, and have a kernel write it (fill_f32); then what the
// primary context reads there. gorgonia.org/cu's
// TestMultipleContextSingleHostThread expects both to work. The CUDA C++
// Programming Guide's driver API chapter says "each context has its own
// distinct address space. As a result, CUdeviceptr values from different
// contexts reference different memory locations", while the Driver API's
// unified addressing section says pointers are unique in the process, so
// that copies need not be told where memory is. The emulated driver's
// answers are its guess, the strict one: the copy is refused
// (CUDA_ERROR_INVALID_VALUE) and the kernel faults
// (CUDA_ERROR_ILLEGAL_ADDRESS), sticky in the second context only. The row
// runs in a child process, so that a fault there cannot spoil this one's
// context.
func otherContextChild(t *testing.T) string {
	const n = 1 << 10
	want := make([]byte, 4*n)
	_, err := rand.Read(want)
	if err != nil {
		return "no random bytes: " + err.Error()
	}
	p, c := MemAlloc(4 * n)
	ok(t, c, "cuMemAlloc")
	defer MemFree(p)
	src := CMalloc(4 * n)
	defer CFree(src)
	copy(src.Bytes(), want)
	ok(t, MemcpyHtoD(p, src), "cuMemcpyHtoD")
	ok(t, CtxSynchronize(), "cuCtxSynchronize")

	ctx1, c := CtxCreate(0)
	ok(t, c, "cuCtxCreate")
	got := CMalloc(4 * n)
	defer CFree(got)
	copied := MemcpyDtoH(got, p)
	copyRow := ErrorName(copied)
	if copied == Success {
		copyRow += fmt.Sprintf(", the bytes equal: %v", bytes.Equal(got.Bytes(), want))
	}
	f := loadFill(t)
	args, offs := fillF32Args(p, n, 0.5)
	launched := Launch(f, n/256, 256, StreamLegacy, args, offs)
	synced := CtxSynchronize()
	destroyed := CtxDestroy(ctx1)

	ok(t, CtxSetCurrent(ctx0), "cuCtxSetCurrent")
	read := MemcpyDtoH(got, p)
	after := ErrorName(read)
	if read == Success {
		switch {
		case bytes.Equal(got.Bytes(), want):
			after += ", the bytes it wrote"
		case bytes.Equal(got.Bytes(), float32s(n, 0.5)):
			after += ", the kernel's values"
		default:
			after += ", other bytes"
		}
	}
	return fmt.Sprintf("cuMemcpyDtoH in the second context: %s; fill_f32 there: cuLaunchKernel %s, cuCtxSynchronize %s; cuCtxDestroy %s; the primary context then reads: %s",
		copyRow, ErrorName(launched), ErrorName(synced), ErrorName(destroyed), after)
}
