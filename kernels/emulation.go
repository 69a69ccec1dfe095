package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Emulation is one launch of a kernel of kernels.cu, decoded for a driver
// that runs the kernel's Go reference instead of GPU code (the emulated
// CUDA driver): the device memory the kernel touches and the reference to
// run on it.
type Emulation struct {
	// Ranges are the device memory the kernel reads or writes, one range
	// per buffer argument.
	Ranges []driver.Range
	// Run does the kernel's work on the memory of Ranges, in order.
	Run func(mem [][]byte) error
	// Misaligned, when not empty, says which access of the kernel is not
	// aligned to its type: on a GPU the launch succeeds and the kernel
	// faults (CUDA_ERROR_MISALIGNED_ADDRESS).
	Misaligned string
}

// Emulate decodes a launch of kernel name with its parameter buffer, laid
// out as the CUDA ABI lays out the kernel's parameters (each at its
// natural alignment, in order; driver.KernelArgs builds the same), and
// returns what the kernel touches and the Go reference that does its work.
// A name that is not a kernel of this package, or a buffer too short for
// its parameters, is an error wrapping driver.ErrInvalidValue.
func Emulate(name string, params []byte) (Emulation, error) {
	d := &argDecoder{b: params}
	em, err := emulate(name, d)
	if err == nil && d.short {
		err = fmt.Errorf("%d bytes of parameters: too few: %w", len(params), driver.ErrInvalidValue)
	}
	if err != nil {
		return Emulation{}, fmt.Errorf("kernels: emulate %s: %w", name, err)
	}
	return em, nil
}

// emulate dispatches on the kernel's name.
func emulate(name string, d *argDecoder) (Emulation, error) {
	base, suffix, _ := strings.Cut(name, "_")
	switch {
	case name == "checksum":
		return emulateChecksum(d), nil
	case name == "copy_wide":
		return emulateCopyWide(d), nil
	case strings.HasPrefix(name, "backproject_tiled_"):
		e, err := elementOf(strings.TrimPrefix(name, "backproject_tiled_"))
		return emulateStacks(d, e, err, refBackproject, true)
	case strings.HasPrefix(name, "trig_table_"):
		e, err := elementOf(strings.TrimPrefix(name, "trig_table_"))
		return emulateTable(d, e, err, 2, refTrigTable)
	case strings.HasPrefix(name, "ramp_taps_"):
		e, err := elementOf(strings.TrimPrefix(name, "ramp_taps_"))
		return emulateTaps(d, e, err)
	case strings.HasPrefix(name, "ramp_filter_"):
		e, err := elementOf(strings.TrimPrefix(name, "ramp_filter_"))
		return emulateRampFilter(d, e, err)
	case base == "pack" || base == "unpack":
		item, err := strconv.Atoi(suffix)
		if err != nil || (item != 1 && item != 2 && item != 4 && item != 8 && item != 16) {
			return Emulation{}, fmt.Errorf("no such kernel: %w", driver.ErrInvalidValue)
		}
		return emulateMove(d, int64(item), base == "pack"), nil
	case base == "fill" || base == "scale":
		e, err := elementOf(suffix)
		if err != nil {
			return Emulation{}, err
		}
		ref := refFill
		if base == "scale" {
			ref = refScale
		}
		return emulateUnary(d, e, ref), nil
	case base == "axpy":
		e, err := elementOf(suffix)
		if err != nil {
			return Emulation{}, err
		}
		return emulateAxpy(d, e), nil
	case base == "sum":
		e, err := elementOf(suffix)
		if err != nil {
			return Emulation{}, err
		}
		return emulateSum(d, e), nil
	case base == "backproject":
		e, err := elementOf(suffix)
		return emulateStacks(d, e, err, refBackproject, true)
	case base == "project":
		e, err := elementOf(suffix)
		return emulateStacks(d, e, err, refProject, false)
	case base == "phantom":
		e, err := elementOf(suffix)
		if err != nil {
			return Emulation{}, err
		}
		return emulatePhantom(d, e), nil
	}
	return Emulation{}, fmt.Errorf("no such kernel: %w", driver.ErrInvalidValue)
}

// elementOf returns the element of a kernel name's suffix, f32 or f64.
func elementOf(suffix string) (element, error) {
	switch suffix {
	case "f32":
		return element{4}, nil
	case "f64":
		return element{8}, nil
	}
	return element{}, fmt.Errorf("no such kernel: %w", driver.ErrInvalidValue)
}

// argDecoder reads parameters in order, each at its natural alignment, as
// driver.KernelArgs writes them. Reading past the end gives zeros and sets short.
type argDecoder struct {
	b     []byte
	off   int
	short bool
}

func (d *argDecoder) take(align, n int) []byte {
	d.off = (d.off + align - 1) / align * align
	if d.off+n > len(d.b) {
		d.short = true
		d.off += n
		return make([]byte, n)
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b
}

func (d *argDecoder) u64() uint64       { return binary.LittleEndian.Uint64(d.take(8, 8)) }
func (d *argDecoder) ptr() devarray.Ptr { return devarray.Ptr(d.u64()) }
func (d *argDecoder) i64() int64        { return int64(d.u64()) }
func (d *argDecoder) i32() int          { return int(int32(binary.LittleEndian.Uint32(d.take(4, 4)))) }
func (d *argDecoder) f64() float64      { return math.Float64frombits(d.u64()) }

// scalar reads a T (float or double) as scalar wrote it.
func (d *argDecoder) scalar(e element) float64 {
	if e.size == 4 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(d.take(4, 4))))
	}
	return d.f64()
}

// layout reads a struct Layout (encode's inverse); a bad one gives an
// empty layout and sets short.
func (d *argDecoder) layout() layout {
	b := d.take(8, layoutBytes)
	n := int64(binary.LittleEndian.Uint64(b))
	ndim := int(int32(binary.LittleEndian.Uint32(b[8:])))
	if ndim < 0 || ndim > MaxDims || n < 0 {
		d.short = true
		return layout{}
	}
	l := layout{n: n, shape: make([]int, ndim), strides: make([]int64, ndim)}
	count := int64(1)
	for i := range ndim {
		s := int64(binary.LittleEndian.Uint64(b[16+8*i:]))
		if s < 0 || s > math.MaxInt32 {
			d.short = true
			return layout{}
		}
		l.shape[i] = int(s)
		l.strides[i] = int64(binary.LittleEndian.Uint64(b[16+8*MaxDims+8*i:]))
		var ok bool
		if count, ok = mul(count, s); !ok || !fits(s, l.strides[i]) {
			d.short = true
			return layout{}
		}
	}
	if count != n && (ndim > 0 || n > 1) {
		d.short = true
		return layout{}
	}
	return l
}

// work returns f as a kernel's Run, or a Run that does nothing for a
// layout of no elements (the kernel's grid-stride loop does not start).
func (l layout) work(f func(m [][]byte)) func(m [][]byte) error {
	if l.n == 0 {
		return func([][]byte) error { return nil }
	}
	return func(m [][]byte) error { f(m); return nil }
}

// extent returns the range a layout's elements of item bytes cover from
// p, and the offset of element 0 inside it.
func (l layout) extent(p devarray.Ptr, item int64) (driver.Range, int64) {
	if l.n == 0 {
		return driver.Range{Ptr: p}, 0
	}
	var lo, hi int64
	for i, n := range l.shape {
		step := l.strides[i] * int64(n-1)
		if step < 0 {
			lo += step
		} else {
			hi += step
		}
	}
	return driver.Range{Ptr: p + devarray.Ptr(lo), N: hi - lo + item}, -lo
}

// misaligned says whether an access of align bytes through p with l's
// strides is not aligned.
func (l layout) misaligned(p devarray.Ptr, align int64) bool {
	if int64(p)%align != 0 {
		return true
	}
	for i, n := range l.shape {
		if n > 1 && l.strides[i]%align != 0 {
			return true
		}
	}
	return false
}

func misalignedPtr(p devarray.Ptr, align int64) bool { return int64(p)%align != 0 }

// maxBytes bounds every size and extent a decoded launch computes, so none
// overflows: no device has 2^50 bytes.
const maxBytes = 1 << 50

// mul returns the product of non-negative factors, or false past maxBytes.
func mul(factors ...int64) (int64, bool) {
	p := int64(1)
	for _, f := range factors {
		if f < 0 || f != 0 && p > maxBytes/f {
			return 0, false
		}
		p *= f
	}
	return p, p <= maxBytes
}

// fits reports whether an axis of n items stepping stride bytes spans at
// most maxBytes.
func fits(n, stride int64) bool {
	if stride < 0 {
		stride = -stride
	}
	_, ok := mul(max(n-1, 0), stride)
	return ok && stride <= maxBytes
}

// sizes returns the product of each list of factors, setting d.short when
// one is past maxBytes.
func (d *argDecoder) sizes(lists ...[]int64) []int64 {
	out := make([]int64, len(lists))
	for i, l := range lists {
		n, ok := mul(l...)
		if !ok {
			d.short = true
			n = 0
		}
		out[i] = n
	}
	return out
}

// emulateUnary is fill or scale: (T *a, Layout L, T v).
func emulateUnary(d *argDecoder, e element, ref func([]byte, int64, layout, element, float64)) Emulation {
	p, l := d.ptr(), d.layout()
	v := d.scalar(e)
	r, base := l.extent(p, e.size)
	em := Emulation{Ranges: []driver.Range{r}, Run: l.work(func(m [][]byte) { ref(m[0], base, l, e, v) })}
	if l.n > 0 && l.misaligned(p, e.size) {
		em.Misaligned = fmt.Sprintf("element of %d bytes at %v, strides %v", e.size, p, l.strides)
	}
	return em
}

// emulateAxpy is (T *y, Layout Ly, const T *x, Layout Lx, T alpha).
func emulateAxpy(d *argDecoder, e element) Emulation {
	py, ly := d.ptr(), d.layout()
	px, lx := d.ptr(), d.layout()
	alpha := d.scalar(e)
	ry, by := ly.extent(py, e.size)
	rx, bx := lx.extent(px, e.size)
	rx.ReadOnly = true
	em := Emulation{Ranges: []driver.Range{ry, rx}, Run: ly.work(func(m [][]byte) { refAxpy(m[0], by, ly, m[1], bx, lx, e, alpha) })}
	if ly.n > 0 && (ly.misaligned(py, e.size) || lx.misaligned(px, e.size)) {
		em.Misaligned = fmt.Sprintf("element of %d bytes at %v or %v", e.size, py, px)
	}
	return em
}

// emulateSum is (const T *a, Layout L, double *out): the kernel adds the
// sum into *out.
func emulateSum(d *argDecoder, e element) Emulation {
	p, l := d.ptr(), d.layout()
	out := d.ptr()
	r, base := l.extent(p, e.size)
	r.ReadOnly = true
	em := Emulation{Ranges: []driver.Range{r, {Ptr: out, N: 8}}, Run: l.work(func(m [][]byte) {
		sum := math.Float64frombits(binary.LittleEndian.Uint64(m[1])) + refSum(m[0], base, l, e)
		binary.LittleEndian.PutUint64(m[1], math.Float64bits(sum))
	})}
	if l.n > 0 && l.misaligned(p, e.size) || misalignedPtr(out, 8) {
		em.Misaligned = fmt.Sprintf("element of %d bytes at %v, or the result at %v", e.size, p, out)
	}
	return em
}

// emulateChecksum is (const unsigned char *p, long long nbytes, unsigned long long *out).
func emulateChecksum(d *argDecoder) Emulation {
	p, n, out := d.ptr(), d.i64(), d.ptr()
	if n < 0 || n > maxBytes {
		d.short = true
		n = 0
	}
	em := Emulation{Ranges: []driver.Range{{Ptr: p, N: n, ReadOnly: true}, {Ptr: out, N: 8}}, Run: func(m [][]byte) error {
		binary.LittleEndian.PutUint64(m[1], binary.LittleEndian.Uint64(m[1])+Checksum(m[0]))
		return nil
	}}
	if misalignedPtr(out, 8) {
		em.Misaligned = fmt.Sprintf("the result at %v", out)
	}
	return em
}

// emulateMove is pack (char *dst, const char *src, Layout L) or unpack
// (char *dst, Layout L, const char *src), items of item bytes.
func emulateMove(d *argDecoder, item int64, pack bool) Emulation {
	var flat, strided devarray.Ptr
	var l layout
	if pack {
		flat, strided, l = d.ptr(), d.ptr(), d.layout()
	} else {
		strided, l, flat = d.ptr(), d.layout(), d.ptr()
	}
	r, base := l.extent(strided, item)
	rf := driver.Range{Ptr: flat, N: d.sizes([]int64{l.n, item})[0]}
	em := Emulation{}
	if pack {
		r.ReadOnly = true
		em.Ranges = []driver.Range{rf, r}
		em.Run = l.work(func(m [][]byte) { refPack(m[0], m[1], base, l, item) })
	} else {
		rf.ReadOnly = true
		em.Ranges = []driver.Range{r, rf}
		em.Run = l.work(func(m [][]byte) { refUnpack(m[0], base, l, m[1], item) })
	}
	align := min(item, 8)
	if l.n > 0 && (l.misaligned(strided, align) || misalignedPtr(flat, align)) {
		em.Misaligned = fmt.Sprintf("item of %d bytes at %v (strides %v) or %v", item, strided, l.strides, flat)
	}
	return em
}

// emulateCopyWide is copy_wide (char *dst, const char *src, long long n):
// n bytes; unless src and dst lie at the same address mod 16, its 16-byte
// loads are misaligned and the kernel faults.
func emulateCopyWide(d *argDecoder) Emulation {
	dst, src, n := d.ptr(), d.ptr(), d.i64()
	if n < 0 {
		d.short, n = true, 0
	}
	em := Emulation{
		Ranges: []driver.Range{{Ptr: dst, N: n}, {Ptr: src, N: n, ReadOnly: true}},
		Run:    func(m [][]byte) error { copy(m[0], m[1]); return nil },
	}
	// As the kernel does: a head of bytes up to dst's 16-byte boundary,
	// then words at dst+head and src+head, which must both be aligned.
	head := min(int64((16-uint64(dst)%16)%16), n)
	if (n-head)/16 > 0 && (uint64(src)+uint64(head))%16 != 0 {
		em.Misaligned = fmt.Sprintf("16-byte load at %v", src+devarray.Ptr(head))
	}
	return em
}

// emulateTable is trig_table (T *trig, int A): per entries of T per angle.
func emulateTable(d *argDecoder, e element, err error, per int64, ref func([]byte, int, element)) (Emulation, error) {
	if err != nil {
		return Emulation{}, err
	}
	p, a := d.ptr(), d.i32()
	if a < 0 {
		d.short = true
		a = 0
	}
	em := Emulation{Ranges: []driver.Range{{Ptr: p, N: d.sizes([]int64{per, int64(a), e.size})[0]}}, Run: func(m [][]byte) error { ref(m[0], a, e); return nil }}
	if misalignedPtr(p, e.size) {
		em.Misaligned = fmt.Sprintf("table at %v", p)
	}
	return em, nil
}

// emulateTaps is ramp_taps (T *h, int D): 2D-1 taps.
func emulateTaps(d *argDecoder, e element, err error) (Emulation, error) {
	if err != nil {
		return Emulation{}, err
	}
	p, n := d.ptr(), d.i32()
	if n < 1 {
		d.short = true
		n = 1
	}
	em := Emulation{Ranges: []driver.Range{{Ptr: p, N: int64(2*n-1) * e.size}}, Run: func(m [][]byte) error { refRampTaps(m[0], n, e); return nil }}
	if misalignedPtr(p, e.size) {
		em.Misaligned = fmt.Sprintf("taps at %v", p)
	}
	return em, nil
}

// emulateRampFilter is (T *out, const T *in, const T *h, long long rows, int D).
func emulateRampFilter(d *argDecoder, e element, err error) (Emulation, error) {
	if err != nil {
		return Emulation{}, err
	}
	out, in, h, rows, n := d.ptr(), d.ptr(), d.ptr(), d.i64(), d.i32()
	if rows < 0 || n < 1 {
		d.short = true
		rows, n = 0, 1
	}
	rowBytes := d.sizes([]int64{rows, int64(n), e.size})[0]
	em := Emulation{
		Ranges: []driver.Range{{Ptr: out, N: rowBytes}, {Ptr: in, N: rowBytes, ReadOnly: true}, {Ptr: h, N: int64(2*n-1) * e.size, ReadOnly: true}},
		Run:    func(m [][]byte) error { refRampFilter(m[0], m[1], m[2], rows, n, e); return nil },
	}
	if misalignedPtr(out, e.size) || misalignedPtr(in, e.size) || misalignedPtr(h, e.size) {
		em.Misaligned = fmt.Sprintf("rows at %v or %v, or taps at %v", out, in, h)
	}
	return em, nil
}

// emulateStacks is backproject, backproject_tiled and project: (T *first,
// const T *second, const T *trig, long long slices, int A, int D, int N, T
// scale). Backprojection writes images (slices, N, N) from sinograms
// (slices, A, D); projection the other way round.
func emulateStacks(d *argDecoder, e element, err error, ref func(a, b, trig []byte, slices int64, na, nd, nn int, scale float64, e element), imageFirst bool) (Emulation, error) {
	if err != nil {
		return Emulation{}, err
	}
	first, second, trig := d.ptr(), d.ptr(), d.ptr()
	slices, a, nd, n := d.i64(), d.i32(), d.i32(), d.i32()
	scale := d.scalar(e)
	if slices < 0 || a < 0 || nd < 0 || n < 0 {
		d.short = true
		slices, a, nd, n = 0, 0, 0, 0
	}
	sz := d.sizes([]int64{slices, int64(n), int64(n), e.size}, []int64{slices, int64(a), int64(nd), e.size})
	img, sino := sz[0], sz[1]
	sizes := [2]int64{sino, img}
	if imageFirst {
		sizes = [2]int64{img, sino}
	}
	em := Emulation{
		Ranges: []driver.Range{{Ptr: first, N: sizes[0]}, {Ptr: second, N: sizes[1], ReadOnly: true}, {Ptr: trig, N: 2 * int64(a) * e.size, ReadOnly: true}},
		Run:    func(m [][]byte) error { ref(m[0], m[1], m[2], slices, a, nd, n, scale, e); return nil },
	}
	if misalignedPtr(first, e.size) || misalignedPtr(second, e.size) || misalignedPtr(trig, e.size) {
		em.Misaligned = fmt.Sprintf("arrays at %v, %v or table at %v", first, second, trig)
	}
	return em, nil
}

// emulatePhantom is (T *out, PhantomTable tab, long long slices, int N,
// double z0, double h, int sub, double f0, double hs, double w).
func emulatePhantom(d *argDecoder, e element) Emulation {
	out := d.ptr()
	tab := d.take(8, 8+8*ellipsoidWords*PhantomMaxEllipsoids)
	slices, n := d.i64(), d.i32()
	var g phantomGrid
	g.z0, g.h = d.f64(), d.f64()
	g.sub = d.i32()
	g.f0, g.hs, g.w = d.f64(), d.f64(), d.f64()
	count := int(binary.LittleEndian.Uint32(tab))
	if count > PhantomMaxEllipsoids || slices < 0 || n < 0 || g.sub < 1 {
		d.short = true
		count, slices, n, g.sub = 0, 0, 0, 1
	}
	table := make([]prepared, count)
	for i := range table {
		for j := range table[i] {
			table[i][j] = math.Float64frombits(binary.LittleEndian.Uint64(tab[8+8*(ellipsoidWords*i+j):]))
		}
	}
	em := Emulation{
		Ranges: []driver.Range{{Ptr: out, N: d.sizes([]int64{slices, int64(n), int64(n), e.size})[0]}},
		Run:    func(m [][]byte) error { refPhantom(m[0], table, slices, n, g, e); return nil },
	}
	if misalignedPtr(out, e.size) {
		em.Misaligned = fmt.Sprintf("volume at %v", out)
	}
	return em
}
