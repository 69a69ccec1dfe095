//go:build cuda

package conformance

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/cuarray/cuarray/kernels"
)

// pageableRowBytes is the Go slice a kernel reads in place: a few KiB.
const pageableRowBytes = 6 << 10

// observePageable: the two attributes of pageable memory access and,
// where the first is 1, a kernel (copy_wide) reading a Go slice of random
// bytes in place, by its host address, into device memory, and whether
// the bytes it copied are the slice's. Where it is 0 the kernel is not
// launched: it would fault and spoil the context for the rows after it.
// The emulated driver answers 0 to both unless told pageable-access=hmm
// or ats: that a GPU without HMM answers 0 is a guess until a GPU run
// logs it.
func observePageable(t *testing.T, add func(name, got string)) {
	access := attributeRow(add, "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS", AttrPageableMemoryAccess)
	attributeRow(add, "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES", AttrPageableMemoryAccessHostTables)
	const row = "a kernel reading a Go slice in place (copy_wide from its host address into device memory)"
	if access != 1 {
		add(row, "not launched: no pageable memory access")
		return
	}
	add(row, kernelReadsPageable(t))
}

// attributeRow adds device 0's attribute attr as a row and returns it (-1
// when it cannot be read).
func attributeRow(add func(name, got string), name string, attr int) int {
	v, c := DeviceAttribute(attr, 0)
	if c != Success {
		add(name, ErrorName(c))
		return -1
	}
	add(name, fmt.Sprint(v))
	return v
}

// kernelReadsPageable launches copy_wide from a Go slice of random bytes,
// pinned for the launch, into device memory, reads the device memory back
// and says whether it holds the slice's bytes.
func kernelReadsPageable(t *testing.T) string {
	src := make([]byte, pageableRowBytes)
	rand.Read(src)
	var pin runtime.Pinner
	pin.Pin(&src[0])
	defer pin.Unpin()
	release, err := declarePageable(src)
	if err != nil {
		return "declaring the slice failed: " + err.Error()
	}
	defer release()
	m, c := ModuleLoadData([]byte(kernels.Image()))
	ok(t, c, "cuModuleLoadData")
	defer ModuleUnload(m)
	f, c := ModuleGetFunction(m, "copy_wide")
	ok(t, c, "cuModuleGetFunction")
	dst, c := MemAlloc(pageableRowBytes)
	ok(t, c, "cuMemAlloc")
	defer MemFree(dst)
	args := binary.LittleEndian.AppendUint64(nil, uint64(dst))
	args = binary.LittleEndian.AppendUint64(args, uint64(uintptr(unsafe.Pointer(&src[0]))))
	args = binary.LittleEndian.AppendUint64(args, pageableRowBytes)
	if c := Launch(f, 4, 128, 0, args, []int{0, 8, 16}); c != Success {
		return "cuLaunchKernel: " + ErrorName(c)
	}
	if c := CtxSynchronize(); c != Success {
		return "cuCtxSynchronize: " + ErrorName(c)
	}
	got := CMalloc(pageableRowBytes)
	defer CFree(got)
	ok(t, MemcpyDtoH(got, dst), "cuMemcpyDtoH")
	if bytes.Equal(got.Bytes(), src) {
		return fmt.Sprintf("the kernel saw the slice's %d bytes", pageableRowBytes)
	}
	differ := 0
	for i, b := range got.Bytes() {
		if b != src[i] {
			differ++
		}
	}
	return fmt.Sprintf("%d of the slice's %d bytes differ in what the kernel copied", differ, pageableRowBytes)
}
