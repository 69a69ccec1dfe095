//go:build cuda && cudaemu && linux

package emulated

// cuMemsetD8, D16, D32, their 2-D forms (cuMemsetD2D8, D2D16, D2D32) and
// the Async form of each.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"encoding/binary"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// memsetOp is one memset: height rows of width elements of size bytes
// (1, 2 or 4), each set to value, the rows pitch bytes apart (a 1-D memset
// is one row).
type memsetOp struct {
	p             uintptr
	pitch         uint64
	width, height uint64
	size          uint64
	value         uint32
	twoD          bool
}

// extent returns the bytes from the first row's start to the last row's
// end, and false when that overflows.
func (m memsetOp) extent() (uint64, bool) {
	if m.width > maxCopy/m.size || m.height > maxCopy {
		return 0, false
	}
	row := m.width * m.size
	if m.height == 0 {
		return row, true
	}
	if m.height > 1 && m.pitch > (maxCopy-row)/(m.height-1) {
		return 0, false
	}
	return m.pitch*(m.height-1) + row, true
}

// memset queues m on stream sh, as the driver does:
//
//   - "The dstDevice pointer must be two byte aligned" (cuMemsetD16; four
//     for D32), and for the 2-D forms "The dstDevice pointer and dstPitch
//     offset must be" so aligned (cuda.h): CUDA_ERROR_INVALID_VALUE
//     otherwise. A pitch shorter than a row, and a range not inside one
//     allocation that the context reaches, are CUDA_ERROR_INVALID_VALUE
//     too (guesses: cuda.h lists the result, not the cases).
//   - "The synchronous memset functions are asynchronous with respect to
//     the host except when the target is pinned host memory or a Unified
//     Memory region, in which case they are fully synchronous. The Async
//     versions are always asynchronous with respect to the host" (the
//     Driver API's API synchronization behavior page): a memset into device
//     memory returns before it is done, and one not Async into mapped
//     page-locked host memory returns when it is.
//
// A memset of nothing (width or height 0) queues nothing, but its pointer
// must still lie in an allocation, as cuMemsetD8's always had to here (a
// guess).
func memset(m memsetOp, sh uintptr, async bool) cuResult {
	_, dev, s, r := currentStream(sh)
	if r != success {
		return r
	}
	if m.p%uintptr(m.size) != 0 || (m.twoD && m.pitch%m.size != 0) {
		return errInvalidValue
	}
	if !m.twoD {
		m.pitch, m.height = m.width*m.size, 1
	}
	n, ok := m.extent()
	if !ok || (m.height > 1 && m.pitch < m.width*m.size) || !onDevice(dev, m.p, int64(n)) {
		return errInvalidValue
	}
	if m.width == 0 || m.height == 0 {
		return success
	}
	row := int64(m.width * m.size)
	r = s.run(func(st driver.Stream) error {
		if m.size == 1 && (m.height == 1 || m.pitch == m.width) {
			return st.MemsetAsync(devarray.Ptr(m.p), byte(m.value), int64(n))
		}
		ranges := make([]driver.Range, 0, m.height)
		for y := range m.height {
			ranges = append(ranges, driver.Range{Ptr: devarray.Ptr(m.p + uintptr(y*m.pitch)), N: row})
		}
		pattern := make([]byte, 4)
		binary.LittleEndian.PutUint32(pattern, m.value)
		pattern = pattern[:m.size]
		return dev.Launch(st, ranges, func(mem [][]byte) error {
			for _, b := range mem {
				for i := 0; i < len(b); i += len(pattern) {
					copy(b[i:], pattern)
				}
			}
			return nil
		})
	})
	if r != success || async || hostAt(m.p, int64(n)) == nil {
		return r
	}
	return s.wait()
}

//export cuemu_cuMemsetD16_v2
func cuemu_cuMemsetD16_v2(p C.CUdeviceptr, v C.ushort, n C.size_t) C.CUresult {
	return result("cuMemsetD16_v2", memset(memsetOp{p: uintptr(p), width: uint64(n), size: 2, value: uint32(v)}, 0, false))
}

//export cuemu_cuMemsetD16Async
func cuemu_cuMemsetD16Async(p C.CUdeviceptr, v C.ushort, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemsetD16Async", memset(memsetOp{p: uintptr(p), width: uint64(n), size: 2, value: uint32(v)}, sh(s), true))
}

//export cuemu_cuMemsetD32_v2
func cuemu_cuMemsetD32_v2(p C.CUdeviceptr, v C.uint, n C.size_t) C.CUresult {
	return result("cuMemsetD32_v2", memset(memsetOp{p: uintptr(p), width: uint64(n), size: 4, value: uint32(v)}, 0, false))
}

//export cuemu_cuMemsetD32Async
func cuemu_cuMemsetD32Async(p C.CUdeviceptr, v C.uint, n C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemsetD32Async", memset(memsetOp{p: uintptr(p), width: uint64(n), size: 4, value: uint32(v)}, sh(s), true))
}

// memset2D is one of the 2-D memsets: width elements of size bytes in each
// of height rows, pitch bytes apart.
func memset2D(p C.CUdeviceptr, pitch C.size_t, size uint64, v uint32, width, height C.size_t) memsetOp {
	return memsetOp{p: uintptr(p), pitch: uint64(pitch), width: uint64(width), height: uint64(height), size: size, value: v, twoD: true}
}

//export cuemu_cuMemsetD2D8_v2
func cuemu_cuMemsetD2D8_v2(p C.CUdeviceptr, pitch C.size_t, v C.uchar, width, height C.size_t) C.CUresult {
	return result("cuMemsetD2D8_v2", memset(memset2D(p, pitch, 1, uint32(v), width, height), 0, false))
}

//export cuemu_cuMemsetD2D8Async
func cuemu_cuMemsetD2D8Async(p C.CUdeviceptr, pitch C.size_t, v C.uchar, width, height C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemsetD2D8Async", memset(memset2D(p, pitch, 1, uint32(v), width, height), sh(s), true))
}

//export cuemu_cuMemsetD2D16_v2
func cuemu_cuMemsetD2D16_v2(p C.CUdeviceptr, pitch C.size_t, v C.ushort, width, height C.size_t) C.CUresult {
	return result("cuMemsetD2D16_v2", memset(memset2D(p, pitch, 2, uint32(v), width, height), 0, false))
}

//export cuemu_cuMemsetD2D16Async
func cuemu_cuMemsetD2D16Async(p C.CUdeviceptr, pitch C.size_t, v C.ushort, width, height C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemsetD2D16Async", memset(memset2D(p, pitch, 2, uint32(v), width, height), sh(s), true))
}

//export cuemu_cuMemsetD2D32_v2
func cuemu_cuMemsetD2D32_v2(p C.CUdeviceptr, pitch C.size_t, v C.uint, width, height C.size_t) C.CUresult {
	return result("cuMemsetD2D32_v2", memset(memset2D(p, pitch, 4, uint32(v), width, height), 0, false))
}

//export cuemu_cuMemsetD2D32Async
func cuemu_cuMemsetD2D32Async(p C.CUdeviceptr, pitch C.size_t, v C.uint, width, height C.size_t, s C.CUstream) C.CUresult {
	return result("cuMemsetD2D32Async", memset(memset2D(p, pitch, 4, uint32(v), width, height), sh(s), true))
}
