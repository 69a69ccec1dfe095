//go:build cuda && cudaemu && linux

package emulated

import (
	"encoding/binary"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guardedPage maps two pages, the second not readable (as memory past the
// end of a C allocation may be), and returns the first; both are unmapped
// when the test ends.
func guardedPage(t *testing.T) (page []byte, guard unsafe.Pointer) {
	t.Helper()
	n := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Munmap(mem) })
	require.NoError(t, syscall.Mprotect(mem[n:], syscall.PROT_NONE))
	return mem[:n], unsafe.Pointer(&mem[n])
}

// TestGatherParamsRefusesMalformedArrays: cuLaunchKernel's kernelParams
// must hold one pointer per parameter, each to the parameter's bytes; an
// array that does not is CUDA_ERROR_INVALID_VALUE wherever the driver can
// tell, never a crash. The arrays live outside Go's heap, in a page
// followed by one that is not readable, as a C caller's would.
func TestGatherParamsRefusesMalformedArrays(t *testing.T) {
	ps := []param{{0, 4}, {8, 8}, {16, 4}} // .f32, .u64, .u32
	page, guard := guardedPage(t)
	// The parameters' bytes at the start of the page.
	values := page[:16]
	binary.LittleEndian.PutUint32(values[0:], 0x40200000)
	binary.LittleEndian.PutUint64(values[4:], 0x7f3a00001000)
	binary.LittleEndian.PutUint32(values[12:], 1961)
	at := func(off int) uintptr { return uintptr(unsafe.Pointer(&values[off])) }
	// argv writes an array of entries that ends where the page does, and
	// returns it.
	argv := func(entries ...uintptr) unsafe.Pointer {
		start := len(page) - 8*len(entries)
		for i, e := range entries {
			binary.LittleEndian.PutUint64(page[start+8*i:], uint64(e))
		}
		return unsafe.Pointer(&page[start])
	}
	want := make([]byte, 20)
	copy(want[0:], values[0:4])
	copy(want[8:], values[4:12])
	copy(want[16:], values[12:16])
	for _, tc := range []struct {
		name   string
		params func() unsafe.Pointer
		want   cuResult
	}{
		{"one pointer per parameter", func() unsafe.Pointer { return argv(at(0), at(4), at(12)) }, success},
		{"no array", func() unsafe.Pointer { return nil }, errInvalidValue},
		{"a null entry", func() unsafe.Pointer { return argv(at(0), 0, at(12)) }, errInvalidValue},
		{"an entry that points to memory not mapped", func() unsafe.Pointer { return argv(at(0), uintptr(guard), at(12)) }, errInvalidValue},
		{"an entry that points to a small integer", func() unsafe.Pointer { return argv(at(0), 1961, at(12)) }, errInvalidValue},
		{"one entry too few, at the end of the mapping", func() unsafe.Pointer { return argv(at(0), at(4)) }, errInvalidValue},
		{"an array in memory not mapped", func() unsafe.Pointer { return guard }, errInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r := gatherParams(ps, tc.params())
			require.Equal(t, tc.want, r)
			if r == success {
				assert.Equal(t, want, got, "each parameter's bytes at its offset")
			} else {
				assert.Nil(t, got)
			}
		})
	}
	got, r := gatherParams(nil, nil)
	require.Equal(t, success, r, "a kernel without parameters needs no array")
	assert.Empty(t, got)
}

// TestExtraParamsRefusesMemoryNotMapped: an extra array whose buffer
// reaches memory not mapped is CUDA_ERROR_INVALID_VALUE, not a crash.
func TestExtraParamsRefusesMemoryNotMapped(t *testing.T) {
	ps := []param{{0, 8}, {8, 4}}
	page, guard := guardedPage(t)
	size := page[:8]
	binary.LittleEndian.PutUint64(size, 12)
	sizeAt := uintptr(unsafe.Pointer(&size[0]))
	// A 12-byte buffer that starts 4 bytes before the unreadable page.
	tail := uintptr(unsafe.Pointer(&page[len(page)-4]))
	extra := page[64 : 64+5*8]
	for i, e := range []uintptr{launchParamBufferPointer, tail, launchParamBufferSize, sizeAt, launchParamEnd} {
		binary.LittleEndian.PutUint64(extra[8*i:], uint64(e))
	}
	got, r := extraParams(ps, unsafe.Pointer(&extra[0]))
	assert.Equal(t, errInvalidValue, r, "a buffer that runs into memory not mapped")
	assert.Nil(t, got)
	got, r = extraParams(ps, guard)
	assert.Equal(t, errInvalidValue, r, "an extra array in memory not mapped")
	assert.Nil(t, got)
}
