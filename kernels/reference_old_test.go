package kernels

import "math"

// The references of fbp.cu as they were before they ran on all cores and
// computed in T (the bit-exact reference): every operation in float64, rounded to the
// element's precision after each (e.round). Test-only: the tests hold the
// new references against them bit for bit.

// oldRampFilter is refRampFilter as it was before it was made bit-exact, kept to hold the
// new one against: it filters rows rows of d values from in into out.
func oldRampFilter(out, in, h []byte, rows int64, d int, e element) {
	taps := make([]float64, 2*d-1)
	for i := range taps {
		taps[i] = e.get(h, int64(i)*e.size)
	}
	row := make([]float64, d)
	for r := range rows {
		for j := range row {
			row[j] = e.get(in, (r*int64(d)+int64(j))*e.size)
		}
		for x := range d {
			var acc float64
			for j, v := range row {
				acc = e.round(acc + e.round(taps[x-j+d-1]*v))
			}
			e.put(out, (r*int64(d)+int64(x))*e.size, acc)
		}
	}
}

// oldBackproject is refBackproject as it was before it was made bit-exact, kept to hold
// the new one against: it backprojects slices sinograms of a x d into n x n images.
func oldBackproject(img, sino, trig []byte, slices int64, a, d, n int, scale float64, e element) {
	cs := make([]float64, 2*a)
	for i := range cs {
		cs[i] = e.get(trig, int64(i)*e.size)
	}
	c := e.round(float64(d-1) * 0.5)
	half := e.round(float64(n-1) * 0.5)
	row := make([]float64, a*d)
	for s := range slices {
		for i := range row {
			row[i] = e.get(sino, (s*int64(a*d)+int64(i))*e.size)
		}
		for y := range n {
			cy := e.round(half - float64(y))
			for x := range n {
				cx := e.round(float64(x) - half)
				var acc float64
				for ai := range a {
					t := e.round(e.round(e.round(cx*cs[2*ai])+e.round(cy*cs[2*ai+1])) + c)
					fl := math.Floor(t)
					j := int(fl)
					f := e.round(t - fl)
					var v0, v1 float64
					if j >= 0 && j < d {
						v0 = row[ai*d+j]
					}
					if j+1 >= 0 && j+1 < d {
						v1 = row[ai*d+j+1]
					}
					acc = e.round(acc + e.round(v0+e.round(f*e.round(v1-v0))))
				}
				e.put(img, ((s*int64(n)+int64(y))*int64(n)+int64(x))*e.size, e.round(acc*scale))
			}
		}
	}
}
