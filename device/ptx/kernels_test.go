package ptx

import (
	"encoding/binary"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// hostMem is device memory made of Go byte slices: a slice's address is
// its device pointer (Go heap objects do not move).
type hostMem struct{ bufs [][]byte }

func (h *hostMem) alloc(n int, rng *rand.Rand) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	h.bufs = append(h.bufs, b)
	return b
}

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func (h *hostMem) Lookup(a uint64) (uint64, []byte, bool) {
	for _, b := range h.bufs {
		if base := addr(b); a >= base && a-base < uint64(len(b)) {
			return base, b, true
		}
	}
	return 0, nil, false
}

// bytesAt returns the n bytes of h's memory at device address p.
func (h *hostMem) bytesAt(t testing.TB, p devarray.Ptr, n int64) []byte {
	if n == 0 {
		return nil
	}
	base, mem, ok := h.Lookup(uint64(p))
	require.True(t, ok, "range at %#x is in a test buffer", uint64(p))
	off := uint64(p) - base
	return mem[off : off+uint64(n)]
}

// layoutBytes encodes a kernels.cu Layout.
func layoutBytes(shape []int64, strides []int64) []byte {
	b := make([]byte, 144)
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	binary.LittleEndian.PutUint64(b, uint64(n))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(shape)))
	for i := range shape {
		binary.LittleEndian.PutUint64(b[16+8*i:], uint64(shape[i]))
		binary.LittleEndian.PutUint64(b[16+64+8*i:], uint64(strides[i]))
	}
	return b
}

// strided allocates an array of random shape with random (some negative,
// some padded) byte strides and returns its element-0 pointer and layout.
func strided(h *hostMem, rng *rand.Rand, item int64, floats int) (devarray.Ptr, []byte, int64) {
	ndim := 1 + rng.IntN(3)
	shape := make([]int64, ndim)
	strides := make([]int64, ndim)
	for i := range shape {
		shape[i] = int64(1 + rng.IntN(24))
	}
	step := item
	for i := ndim - 1; i >= 0; i-- {
		strides[i] = step
		step *= shape[i] + int64(rng.IntN(2))
	}
	if rng.IntN(3) == 0 {
		k := rng.IntN(ndim)
		strides[k] = -strides[k]
	}
	var lo, hi int64
	n := int64(1)
	for i := range shape {
		n *= shape[i]
		s := strides[i] * (shape[i] - 1)
		if s < 0 {
			lo += s
		} else {
			hi += s
		}
	}
	buf := h.alloc(int(hi-lo+item), rng)
	fillFloats(buf, floats, rng)
	return devarray.Ptr(addr(buf) + uint64(-lo)), layoutBytes(shape, strides), n
}

// fillFloats overwrites b with random finite floats of floats bytes (0: keep bytes).
func fillFloats(b []byte, floats int, rng *rand.Rand) {
	switch floats {
	case 4:
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(rng.NormFloat64())))
		}
	case 8:
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], math.Float64bits(rng.NormFloat64()))
		}
	}
}

// kernelCase is one launch of a kernel of kernels.ptx.
type kernelCase struct {
	args  *driver.KernelArgs
	grid  [3]uint32
	block [3]uint32
	tol   float64 // 0: bit for bit; else relative tolerance per element
	elem  int     // element size for tolerance comparisons
}

// grid1D is how package kernels launches its grid-stride kernels.
func grid1D(n int64) [3]uint32 {
	return [3]uint32{uint32(max(min((n+255)/256, 8192), 1)), 1, 1}
}

func scalarArg(a *driver.KernelArgs, size int, v float64) *driver.KernelArgs {
	if size == 4 {
		return a.F32(float32(v))
	}
	return a.F64(v)
}

func trigTable(h *hostMem, rng *rand.Rand, a, size int) devarray.Ptr {
	b := h.alloc(2*a*size, rng)
	for i := 0; i < a; i++ {
		th := math.Pi * float64(i) / float64(a)
		if size == 4 {
			binary.LittleEndian.PutUint32(b[8*i:], math.Float32bits(float32(math.Cos(th))))
			binary.LittleEndian.PutUint32(b[8*i+4:], math.Float32bits(float32(math.Sin(th))))
		} else {
			binary.LittleEndian.PutUint64(b[16*i:], math.Float64bits(math.Cos(th)))
			binary.LittleEndian.PutUint64(b[16*i+8:], math.Float64bits(math.Sin(th)))
		}
	}
	return devarray.Ptr(addr(b))
}

// makeCase builds a random launch of kernel name.
func makeCase(t *testing.T, name string, h *hostMem, rng *rand.Rand) kernelCase {
	var c kernelCase
	c.block = [3]uint32{256, 1, 1}
	a := new(driver.KernelArgs)
	size := 4
	if len(name) > 4 && name[len(name)-3:] == "f64" {
		size = 8
	}
	c.elem = size
	ptr := func(n int, floats int) devarray.Ptr {
		b := h.alloc(n, rng)
		fillFloats(b, floats, rng)
		return devarray.Ptr(addr(b))
	}
	base := name
	for _, p := range []string{"fill_", "scale_", "axpy_", "sum_", "pack_", "unpack_", "trig_table_", "ramp_taps_", "ramp_filter_", "backproject_tiled_", "backproject_", "phantom_", "project_"} {
		if len(name) > len(p) && name[:len(p)] == p {
			base = p[:len(p)-1]
			break
		}
	}
	switch base {
	case "fill", "scale":
		p, l, n := strided(h, rng, int64(size), size)
		scalarArg(a.Ptr(p).Struct(l, 8), size, rng.NormFloat64())
		c.grid = grid1D(n)
	case "axpy":
		py, ly, n := strided(h, rng, int64(size), size)
		// x has y's shape with its own strides
		var shape []int64
		nd := int(binary.LittleEndian.Uint32(ly[8:]))
		for i := 0; i < nd; i++ {
			shape = append(shape, int64(binary.LittleEndian.Uint64(ly[16+8*i:])))
		}
		strides := make([]int64, nd)
		step := int64(size)
		for i := nd - 1; i >= 0; i-- {
			strides[i] = step
			step *= shape[i]
		}
		px := ptr(int(n)*size, size)
		scalarArg(a.Ptr(py).Struct(ly, 8).Ptr(px).Struct(layoutBytes(shape, strides), 8), size, rng.NormFloat64())
		c.grid = grid1D(n)
	case "sum":
		p, l, n := strided(h, rng, int64(size), size)
		out := ptr(8, 8)
		a.Ptr(p).Struct(l, 8).Ptr(out)
		c.grid = grid1D(n)
		// the kernel sums per thread, then across the warp by shuffles,
		// then across warps by atomicAdd: another order than the
		// reference's sequential sum, so equal within rounding only. The
		// rounding follows the partial sums, not the total: summed in
		// order, 13,824 normal values (the largest case) were off by up
		// to 3.9e-12 in 300 draws, and a total can be near zero, where
		// the tolerance is absolute
		c.tol = 1e-10
		c.elem = 8
	case "pack", "unpack":
		var item int
		fmt.Sscanf(name[len(base)+1:], "%d", &item)
		p, l, n := strided(h, rng, int64(item), 0)
		flat := ptr(int(n)*item, 0)
		if base == "pack" {
			a.Ptr(flat).Ptr(p).Struct(l, 8)
		} else {
			a.Ptr(p).Struct(l, 8).Ptr(flat)
		}
		c.grid = grid1D(n)
	case "copy_wide":
		n := 16 + rng.IntN(5000)
		src := h.alloc(n+32, rng)
		dst := h.alloc(n+32, rng)
		shift := rng.IntN(16)
		a.Ptr(devarray.Ptr(addr(dst) + uint64(shift))).Ptr(devarray.Ptr(addr(src) + uint64(shift))).I64(int64(n))
		c.grid = grid1D(int64(n+63) / 64)
	case "checksum":
		n := 1 + rng.IntN(20000)
		a.Ptr(ptr(n, 0)).I64(int64(n)).Ptr(ptr(8, 0))
		c.grid = grid1D(int64(n+3) / 4)
	case "trig_table":
		na := 1 + rng.IntN(700)
		a.Ptr(ptr(2*na*size, 0)).I32(int32(na))
		c.grid = grid1D(int64(na))
		if size == 8 {
			// CUDA's cos and sin (within 1 ulp of the true value, per the
			// CUDA Math API) against Go's math.Cos and math.Sin
			c.tol = 4e-16
		}
	case "ramp_taps":
		d := 1 + rng.IntN(600)
		a.Ptr(ptr((2*d-1)*size, 0)).I32(int32(d))
		c.grid = grid1D(int64(2*d - 1))
	case "ramp_filter":
		d := 1 + rng.IntN(80)
		rows := 1 + rng.IntN(20)
		a.Ptr(ptr(rows*d*size, 0)).Ptr(ptr(rows*d*size, size)).Ptr(ptr((2*d-1)*size, size)).I64(int64(rows)).I32(int32(d))
		c.grid = grid1D(int64(rows * d))
	case "backproject", "backproject_tiled", "project":
		slices, na, d, n := 1+rng.IntN(2), 1+rng.IntN(40), 1+rng.IntN(70), 1+rng.IntN(70)
		trig := trigTable(h, rng, na, size)
		img := ptr(slices*n*n*size, size)
		sino := ptr(slices*na*d*size, size)
		if base == "backproject" || base == "backproject_tiled" {
			// a sample position t (up to D/2 + N in size) one rounding
			// away moves the interpolated value by its slope: up to A
			// angles of |slope| * ulp(t)
			c.tol = 3e-4
			if size == 8 {
				c.tol = 1e-12
			}
		}
		if base == "project" {
			scalarArg(a.Ptr(sino).Ptr(img).Ptr(trig).I64(int64(slices)).I32(int32(na)).I32(int32(d)).I32(int32(n)), size, 0.5+rng.Float64())
			c.grid = grid1D(int64(slices * na * d))
		} else {
			scalarArg(a.Ptr(img).Ptr(sino).Ptr(trig).I64(int64(slices)).I32(int32(na)).I32(int32(d)).I32(int32(n)), size, rng.Float64())
			c.grid = grid1D(int64(slices * n * n))
		}
		if base == "backproject_tiled" {
			tiles := slices * ((n + 127) / 128) * ((n + 15) / 16)
			c.grid, c.block = [3]uint32{uint32(tiles), 1, 1}, [3]uint32{32, 8, 1}
		}
	case "phantom":
		count := 1 + rng.IntN(5)
		tab := make([]byte, 8+8*16*16)
		binary.LittleEndian.PutUint32(tab, uint32(count))
		for i := 0; i < count; i++ {
			th := rng.Float64() * math.Pi
			m := []float64{math.Cos(th), -math.Sin(th), 0, math.Sin(th), math.Cos(th), 0, 0, 0, 1}
			vals := append(m, rng.Float64()-0.5, rng.Float64()-0.5, rng.Float64()-0.5,
				1/(0.2+rng.Float64()*0.5), 1/(0.2+rng.Float64()*0.5), 1/(0.2+rng.Float64()*0.5), rng.NormFloat64())
			for j, v := range vals {
				binary.LittleEndian.PutUint64(tab[8+8*(16*i+j):], math.Float64bits(v))
			}
		}
		slices, n, sub := 1+rng.IntN(3), 1+rng.IntN(24), 1+rng.IntN(3)
		hh := 2.0 / float64(n)
		hs := hh / float64(sub)
		a.Ptr(ptr(slices*n*n*size, 0)).Struct(tab, 8).I64(int64(slices)).I32(int32(n)).
			F64(-0.5).F64(hh).I32(int32(sub)).F64(-hh/2 + hs/2).F64(hs).F64(1 / float64(sub*sub*sub))
		c.grid = grid1D(int64(slices * n * n))
	default:
		t.Fatalf("no case for kernel %s", name)
	}
	switch base {
	case "axpy", "ramp_filter", "backproject", "backproject_tiled", "project":
		// nvcc contracts a*b + c into fma.rn (one rounding: kernels.ptx has
		// them, and backproject_tiled asks for them with __fmaf_rn), where
		// the Go reference rounds the product first: the interpreter runs
		// the PTX's fma, so the sums agree to within the products' rounding
		// errors accumulated over the terms.
		c.tol = 2e-5
		if size == 8 {
			c.tol = 1e-13
		}
		if base == "backproject" || base == "backproject_tiled" {
			// a sample position t (up to D/2 + N in size) one rounding
			// away moves the interpolated value by its slope: up to A
			// angles of |slope| * ulp(t)
			c.tol = 3e-4
			if size == 8 {
				c.tol = 1e-12
			}
		}
		if base == "project" {
			// project's sample positions feed floor(): a position one
			// rounding away moves a sample's interpolation weights, and
			// the sample count floor(sqrt(rc2 - u*u) / step) can change
			c.tol = 5e-4
			if size == 8 {
				c.tol = 1e-11
			}
		}
	}
	c.args = a
	return c
}

// TestKernelsPTXMatchReferences runs every kernel of kernels.ptx on random
// inputs and compares with its Go reference.
func TestKernelsPTXMatchReferences(t *testing.T) {
	m := loadKernels(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for _, name := range m.Kernels() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(name))*7919+uint64(name[0])))
			for trial := 0; trial < 3; trial++ {
				h := &hostMem{}
				c := makeCase(t, name, h, rng)
				params, _ := c.args.Bytes()
				em, err := kernels.Emulate(name, params)
				require.NoError(t, err)
				require.Empty(t, em.Misaligned, "the case is aligned")
				// the reference runs on copies of the ranges
				want := make([][]byte, len(em.Ranges))
				for i, r := range em.Ranges {
					want[i] = append([]byte(nil), h.bytesAt(t, r.Ptr, r.N)...)
				}
				require.NoError(t, em.Run(want))
				k, ok := m.Kernel(name)
				require.True(t, ok)
				st, err := k.Run(Launch{Grid: c.grid, Block: c.block, Params: params, Global: h})
				require.NoError(t, err, "run %s", name)
				require.Positive(t, st.LaneInstructions)
				for i, r := range em.Ranges {
					got := h.bytesAt(t, r.Ptr, r.N)
					if c.tol == 0 {
						sameBytes(t, want[i], got, c.elem, fmt.Sprintf("range %d of %s (bit for bit)", i, name))
						continue
					}
					closeFloats(t, want[i], got, c.elem, c.tol, name)
				}
				runtime.KeepAlive(h)
			}
		})
	}
}

// closeFloats compares arrays of floats within a relative tolerance.
func closeFloats(t *testing.T, want, got []byte, size int, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := 0; i+size <= len(want); i += size {
		var w, g float64
		if size == 4 {
			w = float64(math.Float32frombits(binary.LittleEndian.Uint32(want[i:])))
			g = float64(math.Float32frombits(binary.LittleEndian.Uint32(got[i:])))
		} else {
			w = math.Float64frombits(binary.LittleEndian.Uint64(want[i:]))
			g = math.Float64frombits(binary.LittleEndian.Uint64(got[i:]))
		}
		require.InDelta(t, w, g, tol*max(1, math.Abs(w)), "%s: element %d", what, i/size)
	}
}

// sameBytes requires equal bytes, reporting the first differing element.
func sameBytes(t *testing.T, want, got []byte, size int, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	bad, first := 0, -1
	for i := range want {
		if want[i] != got[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad == 0 {
		return
	}
	e := first / size * size
	hi := min(e+size, len(want))
	t.Fatalf("%s: %d bytes differ; first at byte %d: want % x, got % x", what, bad, first, want[e:hi], got[e:hi])
}

// TestKernelsPTXMisaligned: where kernels.Emulate says a launch's accesses
// are misaligned, the interpreter faults with MisalignedAddress, as a GPU
// does (CUDA_ERROR_MISALIGNED_ADDRESS).
func TestKernelsPTXMisaligned(t *testing.T) {
	m := loadKernels(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 41))
	h := &hostMem{}
	src, dst := h.alloc(4096, rng), h.alloc(4096, rng)
	a := new(driver.KernelArgs).Ptr(devarray.Ptr(addr(dst))).Ptr(devarray.Ptr(addr(src) + 3)).I64(2000)
	buf := h.alloc(4096, rng)
	b := new(driver.KernelArgs).Ptr(devarray.Ptr(addr(buf)+2)).Struct(layoutBytes([]int64{100}, []int64{4}), 8).F32(1)
	for _, c := range []struct {
		name string
		args *driver.KernelArgs
		grid [3]uint32
	}{{"copy_wide", a, grid1D(32)}, {"fill_f32", b, grid1D(100)}} {
		params, _ := c.args.Bytes()
		em, err := kernels.Emulate(c.name, params)
		require.NoError(t, err)
		require.NotEmpty(t, em.Misaligned, "the reference says %s is misaligned", c.name)
		k, _ := m.Kernel(c.name)
		_, err = k.Run(Launch{Grid: c.grid, Block: [3]uint32{256, 1, 1}, Params: params, Global: h})
		f := faultOf(t, err)
		require.Equal(t, MisalignedAddress, f.Kind, c.name)
		require.Equal(t, c.name, f.Kernel)
		require.Positive(t, f.Line)
	}
	runtime.KeepAlive(h)
}
