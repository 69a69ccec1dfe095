package kernels

import (
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
)

// wideBytesPerThread is what one thread of copy_wide moves a pass: its
// WIDE_LOADS 16-byte words (kernels.cu).
const wideBytesPerThread = 4 * 16

// copyWideFits reports whether copy_wide can move n bytes from src to dst:
// both at the same address mod 16, so that its 16-byte words are aligned
// on both sides (its head and tail bytes take the rest).
func copyWideFits(dst, src devarray.Ptr, n int64) bool {
	return n >= 0 && uint64(dst)%16 == uint64(src)%16
}

// wideMove reports whether a move of src into dst takes copy_wide: both
// C-contiguous, with the same address mod 16.
func wideMove(dst, src *devarray.DevArray) bool {
	return dst.IsContiguous() && src.IsContiguous() && copyWideFits(dst.Ptr(), src.Ptr(), src.NBytes())
}

// copyWide copies contiguous src into contiguous dst with copy_wide (on
// sim, its Go reference), inside devarray.Use of both.
func (k *Kernels) copyWide(dst, src *devarray.DevArray) error {
	n := src.NBytes()
	return devarray.Use(func() error {
		if k.gpu != nil {
			return k.launch("copy_wide", (n+wideBytesPerThread-1)/wideBytesPerThread, kernel.Out(dst), kernel.In(src), kernel.I64(n))
		}
		return k.access("copy_wide", func(mem [][]byte, base []int64) error {
			copy(mem[0][base[0]:base[0]+n], mem[1][base[1]:base[1]+n])
			return nil
		}, 1, dst, src)
	}, dst, src)
}
