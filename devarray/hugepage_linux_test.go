package devarray_test

import "syscall"

// benchAlloc returns n bytes for the gather benchmark's buffers in memory
// advised to use transparent huge pages, as NumPy advises for its arrays
// on Linux (numpy.core.multiarray._get_madvise_hugepage), so both sides
// of the comparison read and write memory of the same page size. free
// unmaps it.
func benchAlloc(n int) (b []byte, free func()) {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n), func() {}
	}
	_ = syscall.Madvise(m, syscall.MADV_HUGEPAGE)
	return m, func() { _ = syscall.Munmap(m) }
}
