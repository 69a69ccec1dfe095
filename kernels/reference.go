package kernels

import (
	"encoding/binary"
	"math"

	"github.com/cuarray/cuarray/devarray"
)

// The Go references of the kernels in kernels.cu. Each works on the bytes of
// device memory that the sim backend hands out, with element 0 of the array
// at mem[base]. The GPU runs the CUDA versions; tests compare the two.

// element reads and writes one float32 or float64 at an offset.
type element struct{ size int64 }

func (e element) get(mem []byte, at int64) float64 {
	if e.size == 4 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(mem[at:])))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(mem[at:]))
}

func (e element) put(mem []byte, at int64, v float64) {
	if e.size == 4 {
		binary.LittleEndian.PutUint32(mem[at:], math.Float32bits(float32(v)))
		return
	}
	binary.LittleEndian.PutUint64(mem[at:], math.Float64bits(v))
}

// round rounds v to the element's precision, as the CUDA code computes in it.
func (e element) round(v float64) float64 {
	if e.size == 4 {
		return float64(float32(v))
	}
	return v
}

func refFill(mem []byte, base int64, l layout, e element, v float64) {
	l.offsets(func(_, off int64) { e.put(mem, base+off, v) })
}

func refScale(mem []byte, base int64, l layout, e element, alpha float64) {
	l.offsets(func(_, off int64) { e.put(mem, base+off, e.round(alpha)*e.get(mem, base+off)) })
}

// refAxpy computes y = alpha*x + y. x is read in full before y is written
// only where the two do not overlap; overlapping arrays give what the GPU
// gives for them, which is unspecified.
func refAxpy(ymem []byte, ybase int64, ly layout, xmem []byte, xbase int64, lx layout, e element, alpha float64) {
	a := e.round(alpha)
	xs := make([]int64, 0, lx.n)
	lx.offsets(func(_, off int64) { xs = append(xs, off) })
	ly.offsets(func(i, off int64) {
		x := e.get(xmem, xbase+xs[i])
		e.put(ymem, ybase+off, e.round(e.round(a*x)+e.get(ymem, ybase+off)))
	})
}

func refSum(mem []byte, base int64, l layout, e element) float64 {
	var s float64
	l.offsets(func(_, off int64) { s += e.get(mem, base+off) })
	return s
}

// refPack gathers the elements of the strided src (element 0 at base) into
// the packed dst.
func refPack(dst, src []byte, base int64, l layout, item int64) {
	if err := refRuns(src, base, l, item).Gather(dst[:l.n*item], 0); err != nil {
		panic(err) // sim's launch turns a reference's panic into the stream's error
	}
}

// refUnpack scatters the packed src into the strided dst.
func refUnpack(dst []byte, base int64, l layout, src []byte, item int64) {
	if err := refRuns(dst, base, l, item).Scatter(src[:l.n*item], 0); err != nil {
		panic(err)
	}
}

// refRuns returns the elements of the layout in mem, element 0 at
// mem[base], as a devarray.HostStrided, whose loops move contiguous runs
// with copy(), spread-out elements in a loop for their size and
// transposed layouts in cache tiles: the host gather of package transfer
// and of the C library too. A layout outside mem panics, which sim's
// launch reports as the stream's error, as it does an out-of-range access
// of any reference.
func refRuns(mem []byte, base int64, l layout, item int64) *devarray.HostStrided {
	h, err := devarray.NewHostStrided(mem, base, l.shape, l.strides, item)
	if err != nil {
		panic(err)
	}
	return h
}

// Checksum is the checksum kernel's function on host bytes: the sum, modulo
// 2^64, of (2i+1)·w_i over the little-endian 32-bit words w_i of b, the last
// word zero-padded. It changes when any byte changes or moves.
func Checksum(b []byte) uint64 {
	var s uint64
	for i := 0; 4*i < len(b); i++ {
		var w [4]byte
		copy(w[:], b[4*i:])
		s += uint64(binary.LittleEndian.Uint32(w[:])) * uint64(2*i+1)
	}
	return s
}
