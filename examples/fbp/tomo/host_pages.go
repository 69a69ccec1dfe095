package tomo

import (
	"os"
	"unsafe"
)

// touchPages writes a zero into every page of v, a fresh (zero) Go slice,
// so that the kernel maps its pages now: a large make is fresh memory from
// the system, whose pages are mapped on their first write, a page fault
// each. The volume's first writer is otherwise the downloads, which then
// take a fault for every page of it while the clock runs.
func touchPages(v []float32) {
	step := max(1, os.Getpagesize()/int(unsafe.Sizeof(float32(0))))
	for i := 0; i < len(v); i += step {
		v[i] = 0
	}
}

// floatBytes is the memory of v as bytes.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(float32(0))))
}
