package kernels

import (
	"math"
)

// Go references of fbp.cu, on the bytes of device memory the sim hands out.
//
// Arithmetic is done at the element's precision, every operation rounded
// on its own as the CUDA code computes in T (float or double). The
// references compute in T itself: an IEEE float32 add, subtract or
// multiply gives the float64 operation's result rounded to float32 (a
// float64 holds the exact product of two float32, and for sums and
// differences rounding twice through 53 bits equals rounding once, since
// 53 >= 2*24+2), so these give the same bits as the earlier float64
// emulation that rounded after each operation (kept in
// reference_old_test.go, which the tests hold them against). The explicit
// T(...) conversions around products keep Go from fusing a multiply and
// an add into one FMA, which would round once instead of twice.

// rampTap is tap k of the Ram-Lak filter, as ramp_taps computes it.
func rampTap(k int) float64 {
	switch {
	case k == 0:
		return 0.25
	case k%2 != 0:
		return -1 / (math.Pi * math.Pi * float64(k) * float64(k))
	}
	return 0
}

func refRampTaps(h []byte, d int, e element) {
	for i := range 2*d - 1 {
		e.put(h, int64(i)*e.size, rampTap(i-(d-1)))
	}
}

// floats decodes n elements of e at mem[0:] into a new slice of T.
func floats[T float32 | float64](mem []byte, n int, e element) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = T(e.get(mem, int64(i)*e.size))
	}
	return out
}

// refRampFilter filters rows rows of d values from in into out: out[r][x]
// is the sum over j = 0, 1, ..., d-1, in that order, of taps[x-j+d-1] *
// in[r][j], rounded after each product and each sum. Rows are filtered in
// parallel.
func refRampFilter(out, in, h []byte, rows int64, d int, e element) {
	if e.size == 4 {
		rampFilterAs[float32](out, in, h, rows, d, e)
	} else {
		rampFilterAs[float64](out, in, h, rows, d, e)
	}
}

func rampFilterAs[T float32 | float64](out, in, h []byte, rows int64, d int, e element) {
	taps := floats[T](h, 2*d-1, e)
	// The Ram-Lak taps at even offsets other than 0 are zero. A zero tap
	// times a finite value is a zero, and adding a zero leaves the sum as
	// it was: the sum starts at +0 and a rounded sum is -0 only when both
	// terms are, so it is never -0 and x + (±0) = x. Rows of finite values
	// can therefore skip those taps; a row with an Inf or NaN (0 × Inf is
	// NaN) takes every tap, as the kernel does.
	sparse := true
	for i, t := range taps {
		if off := i - (d - 1); off != 0 && off%2 == 0 && t != 0 {
			sparse = false
		}
	}
	rowBytes := int64(d) * e.size
	parallel(int(rows), max(1, 4096/d), func(lo, hi int) {
		row := make([]T, d)
		res := make([]T, d)
		for r := int64(lo); r < int64(hi); r++ {
			base := r * rowBytes
			finite := true
			for j := range row {
				v := T(e.get(in, base+int64(j)*e.size))
				row[j] = v
				finite = finite && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
			}
			if sparse && finite {
				rampRowSparse(res, row, taps)
			} else {
				rampRowDense(res, row, taps)
			}
			for x, v := range res {
				e.put(out, base+int64(x)*e.size, float64(v))
			}
		}
	})
}

// rampRowDense filters one row with every tap.
func rampRowDense[T float32 | float64](res, row, taps []T) {
	d := len(row)
	for x := range res {
		var acc T
		t := taps[x : x+d]
		for j, v := range row {
			acc += T(t[d-1-j] * v)
		}
		res[x] = acc
	}
}

// rampRowSparse filters one row with the taps at offset 0 and at odd
// offsets only, in the same order as rampRowDense: for output x, the terms
// j < x with x-j odd, then j = x, then the terms j > x with j-x odd.
func rampRowSparse[T float32 | float64](res, row, taps []T) {
	d := len(row)
	for x := range res {
		var acc T
		t := taps[x : x+d] // t[d-1-j] is the tap for term j
		for j := (x + 1) & 1; j < x; j += 2 {
			acc += T(t[d-1-j] * row[j])
		}
		acc += T(t[d-1-x] * row[x])
		for j := x + 1; j < d; j += 2 {
			acc += T(t[d-1-j] * row[j])
		}
		res[x] = acc
	}
}

func refTrigTable(trig []byte, a int, e element) {
	for i := range a {
		th := math.Pi * float64(i) / float64(a)
		e.put(trig, int64(2*i)*e.size, math.Cos(th))
		e.put(trig, int64(2*i+1)*e.size, math.Sin(th))
	}
}

// refBackproject backprojects slices sinograms of a x d into n x n images:
// pixel (y, x) of slice s is scale times the sum over the angles, in order,
// of the sinogram row of the angle linearly interpolated at
// t = (cx·cos + cy·sin) + c, zero off the detector. Rows of pixels are
// computed in parallel.
func refBackproject(img, sino, trig []byte, slices int64, a, d, n int, scale float64, e element) {
	if e.size == 4 {
		backprojectAs[float32](img, sino, trig, slices, a, d, n, scale, e)
	} else {
		backprojectAs[float64](img, sino, trig, slices, a, d, n, scale, e)
	}
}

func backprojectAs[T float32 | float64](img, sino, trig []byte, slices int64, a, d, n int, scale float64, e element) {
	cs := floats[T](trig, 2*a, e)
	c := T(float64(d-1) * 0.5)
	half := T(float64(n-1) * 0.5)
	cxs := make([]T, n) // x - (n-1)/2, rounded once as the kernel does
	for x := range cxs {
		cxs[x] = T(float64(x) - float64(half))
	}
	// Each angle's row as pairs (v0, v1-v0) of bins j and j+1 for j from -1
	// to d-1 (pair j at j+1), zero off the detector: a sample reads one
	// pair. v1-v0 is rounded as the kernel rounds it for every pixel.
	stride := d + 1
	pairs := make([][2]T, a*stride)
	row := make([]T, d+2) // bin j at j+1, zeros either side
	for s := range slices {
		for ai := range a {
			for j := range d {
				row[j+1] = T(e.get(sino, (s*int64(a*d)+int64(ai*d+j))*e.size))
			}
			p := pairs[ai*stride : (ai+1)*stride]
			for j := range p {
				p[j] = [2]T{row[j], row[j+1] - row[j]}
			}
		}
		// about 64 Ki samples a chunk: a row of a 256² image from 360 angles is 92 Ki
		parallel(n, max(1, 65536/max(a*n, 1)), func(lo, hi int) {
			acc := make([]T, n)
			for y := lo; y < hi; y++ {
				clear(acc)
				cy := T(float64(half) - float64(y))
				for ai := range a {
					cosA, sinA := cs[2*ai], cs[2*ai+1]
					q := T(cy * sinA) // the same for the whole row
					backprojectRow(acc, cxs, pairs[ai*stride:(ai+1)*stride], cosA, q, c)
				}
				base := (s*int64(n) + int64(y)) * int64(n)
				for x, v := range acc {
					e.put(img, (base+int64(x))*e.size, float64(T(float64(v)*scale)))
				}
			}
		})
	}
}

// backprojectRow adds one angle's contribution to a row of pixels: for
// pixel x, the angle's row sampled at t = (cx[x]·cos + q) + c, read from
// its pairs (pair j+1 holds bins j and j+1). A sample whose two bins are
// both off the detector adds exactly zero (0 + f·(0-0) = +0, and the sum
// is never -0: see rampFilterAs), so it is skipped.
func backprojectRow[T float32 | float64](acc, cx []T, pairs [][2]T, cos, q, c T) {
	cx = cx[:len(acc)]
	for x := range acc {
		t := T(T(cx[x]*cos)+q) + c
		j := int(t) // floor: t is finite and small (|t| < 2^31)
		fl := T(j)  // exact: |j| < 2^24, or t is already an integer
		if fl > t {
			j--
			fl--
		}
		if uint(j+1) >= uint(len(pairs)) { // bins j and j+1 both off the detector
			continue
		}
		p := pairs[j+1]
		acc[x] += p[0] + T((t-fl)*p[1])
	}
}
