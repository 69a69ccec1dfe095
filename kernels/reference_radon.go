package kernels

import "math"

// Go references of radon.cu, on the bytes of device memory the sim hands out.

// refPhantom is phantom_*: every operation rounded to float64 on its own,
// as the kernel's __dmul_rn and __dadd_rn, so both give the same bits.
func refPhantom(out []byte, table []prepared, slices int64, n int, g phantomGrid, e element) {
	half := float64(n-1) * 0.5
	for s := range slices {
		cz := g.z0 + float64(float64(s)*g.h)
		for y := range n {
			cy := float64((half - float64(y)) * g.h)
			for x := range n {
				c := [3]float64{float64((float64(x) - half) * g.h), cy, cz}
				var v float64
				for sz := range g.sub {
					for sy := range g.sub {
						for sx := range g.sub {
							p := [3]float64{
								(c[0] + g.f0) + float64(float64(sx)*g.hs),
								(c[1] + g.f0) + float64(float64(sy)*g.hs),
								(c[2] + g.f0) + float64(float64(sz)*g.hs),
							}
							for _, el := range table {
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
	}
}

// refProject is project_*, at the element's precision.
func refProject(sino, img, trig []byte, slices int64, a, d, n int, step float64, e element) {
	r := e.round
	cs := make([]float64, 2*a)
	for i := range cs {
		cs[i] = e.get(trig, int64(i)*e.size)
	}
	step = r(step)
	half := r(float64(n-1) * 0.5)
	w := r(half + 1)
	rc2 := r(r(2*w) * w)
	pix := make([]float64, n*n)
	for s := range slices {
		for i := range pix {
			pix[i] = e.get(img, (s*int64(n*n)+int64(i))*e.size)
		}
		at := func(y, x int) float64 {
			if x < 0 || x >= n || y < 0 || y >= n {
				return 0
			}
			return pix[y*n+x]
		}
		for ai := range a {
			c, sn := cs[2*ai], cs[2*ai+1]
			for j := range d {
				u := r(float64(j) - r(float64(d-1)*0.5))
				var acc float64
				if r(u*u) < rc2 {
					k := int(math.Floor(r(r(math.Sqrt(r(rc2-r(u*u)))) / step)))
					for t := -k; t <= k; t++ {
						tau := r(float64(t) * step)
						col := r(r(r(u*c)-r(tau*sn)) + half)
						row := r(half - r(r(u*sn)+r(tau*c)))
						fx, fy := math.Floor(col), math.Floor(row)
						x0, y0 := int(fx), int(fy)
						if x0 < -1 || x0 >= n || y0 < -1 || y0 >= n {
							continue
						}
						ax, ay := r(col-fx), r(row-fy)
						v00, v01, v10, v11 := at(y0, x0), at(y0, x0+1), at(y0+1, x0), at(y0+1, x0+1)
						top := r(v00 + r(ax*r(v01-v00)))
						bot := r(v10 + r(ax*r(v11-v10)))
						acc = r(acc + r(top+r(ay*r(bot-top))))
					}
				}
				e.put(sino, ((s*int64(a)+int64(ai))*int64(d)+int64(j))*e.size, r(acc*step))
			}
		}
	}
}
