//go:build cuda && cudaemu && linux

package emulated

import (
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/device/sim"
)

// TestMemsets runs every memset over random data and compares the device's
// bytes with the same memset done on the host: each sets exactly its
// elements, rows pitch bytes apart, and nothing else.
func TestMemsets(t *testing.T) {
	lockedDriver(t)
	makeContext(t, cu.SchedAuto)
	stream, err := cu.MakeStream(cu.DefaultStream) // blocking: it waits for the legacy stream's HtoD
	require.NoError(t, err)
	defer stream.Destroy()
	// The largest memset drawn below: 4-byte elements at offset 4·63, 20
	// rows of 200 elements, 4·249 bytes apart.
	const n = 4*63 + 19*4*(200+49) + 4*200
	dev, err := cu.MemAlloc(n)
	require.NoError(t, err)
	defer cu.MemFree(dev)
	for _, tc := range []struct {
		name  string
		size  int // bytes per element
		twoD  bool
		async bool
	}{
		{"D8", 1, false, false}, {"D16", 2, false, false}, {"D32", 4, false, false},
		{"D8Async", 1, false, true}, {"D16Async", 2, false, true}, {"D32Async", 4, false, true},
		{"D2D8", 1, true, false}, {"D2D16", 2, true, false}, {"D2D32", 4, true, false},
		{"D2D8Async", 1, true, true}, {"D2D16Async", 2, true, true}, {"D2D32Async", 4, true, true},
	} { // not subtests: each would run on a thread of its own, where no context is current
		func() {
			host := make([]byte, n)
			for i := range host {
				host[i] = byte(rand.Uint32())
			}
			require.NoError(t, cu.MemcpyHtoD(dev, ptrOf(host), n))
			value := rand.Uint32() >> (32 - 8*tc.size)
			off := tc.size * rand.IntN(64)
			width := 1 + rand.IntN(200)
			height, pitch := 1, width*tc.size
			if tc.twoD {
				height = 1 + rand.IntN(20)
				pitch = tc.size * (width + rand.IntN(50))
			}
			want := append([]byte(nil), host...)
			elem := make([]byte, 4)
			binary.LittleEndian.PutUint32(elem, value)
			for y := range height {
				for x := range width {
					copy(want[off+y*pitch+x*tc.size:], elem[:tc.size])
				}
			}
			p := dev + cu.DevicePtr(off)
			w, h, pi := int64(width), int64(height), int64(pitch)
			var err error
			switch {
			case tc.size == 1 && !tc.twoD && !tc.async:
				err = cu.MemsetD8(p, byte(value), w)
			case tc.size == 2 && !tc.twoD && !tc.async:
				err = cu.MemsetD16(p, uint16(value), w)
			case tc.size == 4 && !tc.twoD && !tc.async:
				err = cu.MemsetD32(p, value, w)
			case tc.size == 1 && !tc.twoD:
				err = cu.MemsetD8Async(p, byte(value), w, stream)
			case tc.size == 2 && !tc.twoD:
				err = cu.MemsetD16Async(p, uint16(value), w, stream)
			case tc.size == 4 && !tc.twoD:
				err = cu.MemsetD32Async(p, uint(value), w, stream)
			case tc.size == 1 && !tc.async:
				err = cu.MemsetD2D8(p, pi, byte(value), w, h)
			case tc.size == 2 && !tc.async:
				err = cu.MemsetD2D16(p, pi, uint16(value), w, h)
			case tc.size == 4 && !tc.async:
				err = cu.MemsetD2D32(p, pi, uint(value), w, h)
			case tc.size == 1:
				err = cu.MemsetD2D8Async(p, pi, byte(value), w, h, stream)
			case tc.size == 2:
				err = cu.MemsetD2D16Async(p, pi, uint16(value), w, h, stream)
			default:
				err = cu.MemsetD2D32Async(p, pi, uint(value), w, h, stream)
			}
			require.NoError(t, err, "%s of %d×%d elements, pitch %d, at offset %d", tc.name, width, height, pitch, off)
			require.NoError(t, stream.Synchronize())
			got := make([]byte, n)
			require.NoError(t, cu.MemcpyDtoH(ptrOf(got), dev, n))
			assert.Equal(t, want, got, "%s of %d×%d elements of %#x, pitch %d, at offset %d", tc.name, width, height, value, pitch, off)
		}()
	}
}

// TestMemsetChecks: the pointer (and a 2-D memset's pitch) must be aligned
// to the element, a pitch may not be shorter than a row, and the range must
// lie in one allocation.
func TestMemsetChecks(t *testing.T) {
	lockedDriver(t)
	makeContext(t, cu.SchedAuto)
	dev, err := cu.MemAlloc(4096)
	require.NoError(t, err)
	defer cu.MemFree(dev)
	for _, tc := range []struct {
		name string
		call func() error
		err  error
	}{
		{"D16 at an odd address", func() error { return cu.MemsetD16(dev+1, 1, 4) }, cu.InvalidValue},
		{"D32 two bytes off", func() error { return cu.MemsetD32(dev+2, 1, 4) }, cu.InvalidValue},
		{"D32 aligned", func() error { return cu.MemsetD32(dev+4, 1, 4) }, nil},
		{"D8 past the end", func() error { return cu.MemsetD8(dev+4000, 1, 97) }, cu.InvalidValue},
		{"D8 to the end", func() error { return cu.MemsetD8(dev+4000, 1, 96) }, nil},
		{"D32 of nothing", func() error { return cu.MemsetD32(dev, 1, 0) }, nil},
		{"D2D16 odd pitch", func() error { return cu.MemsetD2D16(dev, 33, 1, 8, 4) }, cu.InvalidValue},
		{"D2D32 pitch of two bytes off", func() error { return cu.MemsetD2D32(dev, 66, 1, 8, 4) }, cu.InvalidValue},
		{"D2D8 pitch shorter than a row", func() error { return cu.MemsetD2D8(dev, 8, 1, 16, 4) }, cu.InvalidValue},
		{"D2D8 last row past the end", func() error { return cu.MemsetD2D8(dev, 1024, 1, 16, 5) }, cu.InvalidValue},
		{"D2D8 rows within", func() error { return cu.MemsetD2D8(dev, 1020, 1, 16, 5) }, nil},
		{"D8 not device memory", func() error { return cu.MemsetD8(cu.DevicePtr(0x1000), 1, 4) }, cu.InvalidValue},
	} {
		err := tc.call()
		if tc.err == nil {
			assert.NoError(t, err, tc.name)
		} else {
			assert.Equal(t, tc.err, err, tc.name)
		}
	}
	require.NoError(t, cu.Synchronize())
}

// TestMemsetAsynchrony: "The synchronous memset functions are asynchronous
// with respect to the host except when the target is pinned host memory
// ... The Async versions are always asynchronous with respect to the host"
// (the Driver API's API synchronization behavior page). With the stream
// held, a memset of device memory returns before it is done, one not Async
// of mapped page-locked host memory waits, and an Async one does not.
func TestMemsetAsynchrony(t *testing.T) {
	lockedDriver(t)
	ctx := makeContext(t, cu.SchedAuto)
	dev, err := cu.MemAlloc(1024)
	require.NoError(t, err)
	defer cu.MemFree(dev)
	hostPtr, r := memHostAlloc(1024, hostAllocDeviceMap)
	require.Equal(t, success, r, "cuMemHostAlloc")
	defer memFreeHost(uintptr(hostPtr))
	mapped, r := memHostGetDevicePointer(uintptr(hostPtr), 0)
	require.Equal(t, success, r, "cuMemHostGetDevicePointer")
	c := drv.currentContext()

	resume, err := sim.Pause(c.legacy)
	require.NoError(t, err)
	defer resume()
	for _, f := range []func() error{
		func() error { return cu.MemsetD32(dev, 7, 256) },
		func() error { return cu.MemsetD2D16(dev, 64, 7, 32, 8) },
		func() error { return cu.MemsetD8Async(cu.DevicePtr(mapped), 7, 1024, cu.Stream{}) },
		func() error { return cu.MemsetD2D32Async(cu.DevicePtr(mapped), 128, 7, 16, 8, cu.Stream{}) },
	} {
		assert.NoError(t, f(), "a memset returns with its stream held")
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cu.SetCurrentContext(ctx); err != nil {
			done <- err
			return
		}
		done <- cu.MemsetD32(cu.DevicePtr(mapped), 9, 256)
	}()
	select {
	case err := <-done:
		t.Fatalf("cuMemsetD32 of mapped page-locked host memory returned (%v) before its work was done", err)
	case <-time.After(100 * time.Millisecond):
	}
	resume()
	require.NoError(t, <-done)
	b := unsafe.Slice((*byte)(hostPtr), 1024)
	for i := 0; i < 1024; i += 4 {
		require.Equal(t, uint32(9), binary.LittleEndian.Uint32(b[i:]), "byte %d: the memset was done when it returned", i)
	}
}
