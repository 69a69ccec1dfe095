package kernels

import "math"

// Go references of radon.cu, on the bytes of device memory the sim hands out.

// refPhantom is phantom_*: every operation rounded to float64 on its own,
// as the kernel's __dmul_rn and __dadd_rn, so both give the same bits.
//
// It skips an ellipsoid for a voxel when the voxel's centre is farther from
// the ellipsoid's centre than its largest semi-axis plus the voxel's half
// diagonal, with a margin far above rounding: every point of the voxel is
// then outside, and the kernel's test would say so too.
func refPhantom(out []byte, table []prepared, slices int64, n int, g phantomGrid, e element) {
	half := float64(n-1) * 0.5
	type bound struct{ c [3]float64 } // the ellipsoid's centre in the volume's frame
	bounds := make([]bound, len(table))
	reach := make([]float64, len(table)) // squared distance beyond which a voxel is outside
	for i, el := range table {
		for a := range 3 { // centre = Mᵀ c, M a rotation
			bounds[i].c[a] = el[a]*el[9] + el[3+a]*el[10] + el[6+a]*el[11]
		}
		r := 1/min(el[12], el[13], el[14]) + g.h*math.Sqrt(3)/2
		reach[i] = r * r * (1 + 1e-6)
	}
	// voxels are independent: rows of voxels run in parallel, each worker
	// with its own list of nearby ellipsoids
	parallel(int(slices)*n, max(1, 4096/max(n*len(table), 1)), func(lo, hi int) {
		near := make([]int, 0, len(table))
		for row := lo; row < hi; row++ {
			s, y := int64(row/n), row%n
			cz := g.z0 + float64(float64(s)*g.h)
			cy := float64((half - float64(y)) * g.h)
			for x := range n {
				c := [3]float64{float64((float64(x) - half) * g.h), cy, cz}
				near = near[:0]
				for i, b := range bounds {
					dx, dy, dz := c[0]-b.c[0], c[1]-b.c[1], c[2]-b.c[2]
					if dx*dx+dy*dy+dz*dz <= reach[i] {
						near = append(near, i)
					}
				}
				var v float64
				for sz := range g.sub {
					for sy := range g.sub {
						for sx := range g.sub {
							p := [3]float64{
								(c[0] + g.f0) + float64(float64(sx)*g.hs),
								(c[1] + g.f0) + float64(float64(sy)*g.hs),
								(c[2] + g.f0) + float64(float64(sz)*g.hs),
							}
							for _, i := range near {
								el := table[i]
								var r float64
								for a := range 3 {
									d := float64(float64(float64(el[3*a]*p[0])+float64(el[3*a+1]*p[1]))+float64(el[3*a+2]*p[2])) - el[9+a]
									q := float64(d * el[12+a])
									r += float64(q * q)
								}
								if r <= 1 {
									v += el[15]
								}
							}
						}
					}
				}
				e.put(out, ((s*int64(n)+int64(y))*int64(n)+int64(x))*e.size, float64(v*g.w))
			}
		}
	})
}

// refProject is project_*, at the element's precision: each operation is
// rounded to T on its own (the conversions keep Go from fusing them).
func refProject(sino, img, trig []byte, slices int64, a, d, n int, step float64, e element) {
	if e.size == 4 {
		projectAs[float32](sino, img, trig, slices, a, d, n, step, e)
	} else {
		projectAs[float64](sino, img, trig, slices, a, d, n, step, e)
	}
}

func projectAs[T float32 | float64](sino, img, trig []byte, slices int64, a, d, n int, step64 float64, e element) {
	cs := make([]T, 2*a)
	for i := range cs {
		cs[i] = T(e.get(trig, int64(i)*e.size))
	}
	step := T(step64)
	half := T(n-1) * 0.5
	w := half + 1
	rc2 := T(2*w) * w
	uc := T(d-1) * 0.5
	pix := make([]T, n*n)
	for s := range slices {
		for i := range pix {
			pix[i] = T(e.get(img, (s*int64(n*n)+int64(i))*e.size))
		}
		// every (angle, bin) is independent: angles run in parallel
		parallel(a, max(1, 65536/max(d*n, 1)), func(lo, hi int) {
			for ai := lo; ai < hi; ai++ {
				c, sn := cs[2*ai], cs[2*ai+1]
				for j := range d {
					u := T(j) - uc
					u2 := T(u * u)
					var acc T
					if u2 < rc2 {
						k := int(math.Floor(float64(T(T(math.Sqrt(float64(rc2-u2)))) / step)))
						uc0, us0 := T(u*c), T(u*sn)
						for t := -k; t <= k; t++ {
							tau := T(T(t) * step)
							col := (uc0 - T(tau*sn)) + half
							row := half - (us0 + T(tau*c))
							fx, fy := T(math.Floor(float64(col))), T(math.Floor(float64(row)))
							x0, y0 := int(fx), int(fy)
							if x0 < -1 || x0 >= n || y0 < -1 || y0 >= n {
								continue
							}
							ax, ay := col-fx, row-fy
							var v00, v01, v10, v11 T
							if y0 >= 0 {
								if x0 >= 0 {
									v00 = pix[y0*n+x0]
								}
								if x0+1 < n {
									v01 = pix[y0*n+x0+1]
								}
							}
							if y0+1 < n {
								if x0 >= 0 {
									v10 = pix[(y0+1)*n+x0]
								}
								if x0+1 < n {
									v11 = pix[(y0+1)*n+x0+1]
								}
							}
							top := v00 + T(ax*(v01-v00))
							bot := v10 + T(ax*(v11-v10))
							acc += top + T(ay*(bot-top))
						}
					}
					e.put(sino, ((s*int64(a)+int64(ai))*int64(d)+int64(j))*e.size, float64(T(acc*step)))
				}
			}
		})
	}
}
