//go:build cuda && cudaemu && linux

package emulated

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cuLaunchKernel's extra array: the buffer and its size, in either order,
// ended by CU_LAUNCH_PARAM_END; anything else is CUDA_ERROR_INVALID_VALUE.
func TestExtraParams(t *testing.T) {
	ps := []param{{0, 8}, {8, 4}, {16, 8}}
	buf := make([]byte, 24+rand.IntN(8))
	for i := range buf {
		buf[i] = byte(rand.Uint32())
	}
	// On the heap, which does not move, as C memory would not: the array
	// holds their addresses as integers.
	// (a length known only at run time puts a slice on the heap).
	sizes := make([]uintptr, 2+rand.IntN(2))
	sizes[0], sizes[1] = uintptr(len(buf)), 20
	b, s, sh := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&sizes[0])), uintptr(unsafe.Pointer(&sizes[1]))
	for _, tc := range []struct {
		name  string
		extra []uintptr
		want  cuResult
	}{
		{"pointer then size", []uintptr{launchParamBufferPointer, b, launchParamBufferSize, s, launchParamEnd}, success},
		{"size then pointer", []uintptr{launchParamBufferSize, s, launchParamBufferPointer, b, launchParamEnd}, success},
		{"no size", []uintptr{launchParamBufferPointer, b, launchParamEnd}, errInvalidValue},
		{"no buffer", []uintptr{launchParamBufferSize, s, launchParamEnd}, errInvalidValue},
		{"a buffer shorter than the parameters", []uintptr{launchParamBufferPointer, b, launchParamBufferSize, sh, launchParamEnd}, errInvalidValue},
		{"an unknown marker", []uintptr{7, b, launchParamEnd}, errInvalidValue},
		{"a null size pointer", []uintptr{launchParamBufferPointer, b, launchParamBufferSize, 0, launchParamEnd}, errInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r := extraParams(ps, unsafe.Pointer(&tc.extra[0]))
			runtime.KeepAlive(buf)
			runtime.KeepAlive(sizes)
			require.Equal(t, tc.want, r)
			if r == success {
				assert.Equal(t, buf[:24], got, "the parameters' bytes, copied")
			}
		})
	}
	got, r := extraParams(nil, unsafe.Pointer(&[]uintptr{launchParamEnd}[0]))
	require.Equal(t, success, r, "a kernel without parameters needs no buffer")
	assert.Empty(t, got)
}
