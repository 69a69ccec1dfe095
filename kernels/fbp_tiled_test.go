package kernels

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two backprojection kernels of fbp.cu, transliterated to Go operation
// by operation as nvcc compiles them (the fma the compiler makes of
// cx*cos + cy*sin and of v0 + f*(v1-v0), each other operation rounded on
// its own), so that sim can check what only a GPU runs: that
// backproject_tiled gives backproject's bits, that its staged run of bins
// holds every bin a pixel of the tile reads, and that its floor is exact
// where BackprojectTiled lets it run. The GPU tests (fbp_gpu_test.go)
// compare the compiled kernels themselves.

// fma32 is the float32 fused multiply-add, rounded once: a*b is exact in
// float64, and the float64 sum is rounded again only when it lands exactly
// halfway between two float32s, where the sign of its rounding error
// decides.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb) // s + e == p + c exactly
	r := float32(s)
	if e != 0 && float64(r) != s {
		other := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
		if float64(r)+float64(other) == 2*s { // a tie: the exact sum is on e's side of it
			return float32(math.Nextafter(s, math.Copysign(math.Inf(1), e)))
		}
	}
	return r
}

func fmaT[T float32 | float64](a, b, c T) T {
	switch x := any(a).(type) {
	case float32:
		return T(fma32(x, float32(b), float32(c)))
	case float64:
		return T(math.FMA(x, float64(b), float64(c)))
	}
	panic("unreachable")
}

// bpFloorT is bp_floor: floor(t) as an int and as T, from one add of
// 1.5·2^23 (float) or 1.5·2^52 (double).
func bpFloorT[T float32 | float64](t T) (int, T) {
	var j int
	var r T
	switch x := any(t).(type) {
	case float32:
		const m32 = 12582912.0
		m := x + m32
		r = T(m - m32)
		j = int(int32(math.Float32bits(m)) - 0x4B400000)
	case float64:
		const m64 = 6755399441055744.0
		m := x + m64
		r = T(m - m64)
		j = int(int32(uint32(math.Float64bits(m))))
	}
	if r > t {
		return j - 1, r - 1
	}
	return j, r
}

// bpGeom is a backprojection's operands, as the kernels get them.
type bpGeom[T float32 | float64] struct {
	slices, a, d, n int
	sino, trig      []T
	scale           T
}

func (g bpGeom[T]) consts() (half, c T) {
	return T(T(g.n-1) * 0.5), T(T(g.d-1) * 0.5)
}

// emulatePlain is backproject_f32/f64: one pixel at a time, the angles in
// order, operands read from the sinogram with bounds tests.
func emulatePlain[T float32 | float64](g bpGeom[T]) []T {
	half, c := g.consts()
	out := make([]T, g.slices*g.n*g.n)
	for s := range g.slices {
		p := g.sino[s*g.a*g.d:]
		for y := range g.n {
			for x := range g.n {
				cx, cy := T(x)-half, half-T(y)
				var acc T
				for a := range g.a {
					t := fmaT(cx, g.trig[2*a], T(cy*g.trig[2*a+1])) + c
					fl := T(math.Floor(float64(t)))
					j := int(fl)
					f := t - fl
					row := p[a*g.d : (a+1)*g.d]
					var v0, v1 T
					if j >= 0 && j < g.d {
						v0 = row[j]
					}
					if j+1 >= 0 && j+1 < g.d {
						v1 = row[j+1]
					}
					acc += fmaT(f, v1-v0, v0)
				}
				out[(s*g.n+y)*g.n+x] = T(acc * g.scale)
			}
		}
	}
	return out
}

// The tile of fbp.cu's backproject_tiled.
const (
	bpPX = bpTileW / bpThreadsX
	bpPY = bpTileH / bpThreadsY
	bpAB = 16                    // BP_AB: angles staged per pass
	bpW  = bpTileW + bpTileH + 8 // BP_W: pairs staged per angle
)

// bpPair is a staged pair: bin j, and bin j+1 minus bin j.
type bpPair[T float32 | float64] struct{ v0, dv T }

// bpFootprint is the run of bins a tile with corners (cxa, cya), (cxb, cyb)
// reads at an angle, as backproject_tiled stages it: the first bin and
// the pair count.
func bpFootprint[T float32 | float64](cxa, cxb, cya, cyb, cs, sn, c T) (lo, cnt int) {
	tt := func(cx, cy T) T { return fmaT(cx, cs, T(cy*sn)) + c }
	t00, t01, t10, t11 := tt(cxa, cya), tt(cxb, cya), tt(cxa, cyb), tt(cxb, cyb)
	lo, _ = bpFloorT(min(t00, t01, t10, t11))
	hi, _ := bpFloorT(max(t00, t01, t10, t11))
	return lo, min(hi-lo+1, bpW)
}

// emulateTiled is backproject_tiled_f32/f64, block by block (a block's
// threads in turn: the result does not depend on their order). It fails
// the test when a pixel would read a pair outside the staged run.
func emulateTiled[T float32 | float64](t *testing.T, g bpGeom[T]) []T {
	half, c := g.consts()
	out := make([]T, g.slices*g.n*g.n)
	tilesX, tilesY := (g.n+bpTileW-1)/bpTileW, (g.n+bpTileH-1)/bpTileH
	var pairs [bpAB][bpW]bpPair[T]
	var tab [bpAB][2]T
	var lo, cnt [bpAB]int
	bad := 0
	for b := range g.slices * tilesX * tilesY {
		s, tile := b/(tilesX*tilesY), b%(tilesX*tilesY)
		x0, y0 := (tile%tilesX)*bpTileW, (tile/tilesX)*bpTileH
		p := g.sino[s*g.a*g.d:]
		var acc [bpThreadsY][bpThreadsX][bpPY][bpPX]T
		cxa, cxb := T(x0)-half, T(x0+bpTileW-1)-half
		cya, cyb := half-T(y0), half-T(y0+bpTileH-1)
		for a0 := 0; a0 < g.a; a0 += bpAB {
			na := min(bpAB, g.a-a0)
			for i := range na {
				cs, sn := g.trig[2*(a0+i)], g.trig[2*(a0+i)+1]
				tab[i] = [2]T{cs, sn}
				lo[i], cnt[i] = bpFootprint(cxa, cxb, cya, cyb, cs, sn, c)
			}
			for ai := range na {
				row := p[(a0+ai)*g.d : (a0+ai+1)*g.d]
				for k := range cnt[ai] {
					j := lo[ai] + k
					var v0, v1 T
					if uint(j) < uint(g.d) {
						v0 = row[j]
					}
					if uint(j+1) < uint(g.d) {
						v1 = row[j+1]
					}
					pairs[ai][k] = bpPair[T]{v0, v1 - v0}
				}
			}
			for ty := range bpThreadsY {
				for tx := range bpThreadsX {
					for ai := range na {
						cs, sn := tab[ai][0], tab[ai][1]
						for r := range bpPY {
							q := T(T(half-T(y0+ty+bpThreadsY*r)) * sn)
							for k := range bpPX {
								cx := T(x0+tx+bpThreadsX*k) - half
								tv := fmaT(cx, cs, q) + c
								j, fl := bpFloorT(tv)
								f := tv - fl
								if j-lo[ai] < 0 || j-lo[ai] >= cnt[ai] {
									bad++
									continue
								}
								v := pairs[ai][j-lo[ai]]
								acc[ty][tx][r][k] += fmaT(f, v.dv, v.v0)
							}
						}
					}
				}
			}
		}
		for ty := range bpThreadsY {
			for tx := range bpThreadsX {
				for r := range bpPY {
					for k := range bpPX {
						x, y := x0+tx+bpThreadsX*k, y0+ty+bpThreadsY*r
						if x < g.n && y < g.n {
							out[(s*g.n+y)*g.n+x] = T(acc[ty][tx][r][k] * g.scale)
						}
					}
				}
			}
		}
	}
	assert.Zero(t, bad, "pixel reads outside the staged run of bins")
	return out
}

// newBPGeom makes random sinograms (with exact zeros, negative zeros and
// values of both signs) and the angle table as trig_table makes it.
func newBPGeom[T float32 | float64](slices, a, d, n int, rng *rand.Rand) bpGeom[T] {
	g := bpGeom[T]{slices: slices, a: a, d: d, n: n, sino: make([]T, slices*a*d), trig: make([]T, 2*a), scale: T(math.Pi / float64(a))}
	for i := range g.sino {
		switch rng.IntN(20) {
		case 0:
			g.sino[i] = 0
		case 1:
			g.sino[i] = T(math.Copysign(0, -1))
		default:
			g.sino[i] = T(rng.Float64()*10 - 3)
		}
	}
	for i := range a {
		th := math.Pi * float64(i) / float64(a)
		g.trig[2*i], g.trig[2*i+1] = T(math.Cos(th)), T(math.Sin(th))
	}
	return g
}

func bitsOf[T float32 | float64](xs []T) []uint64 {
	out := make([]uint64, len(xs))
	for i, x := range xs {
		switch v := any(x).(type) {
		case float32:
			out[i] = uint64(math.Float32bits(v))
		case float64:
			out[i] = math.Float64bits(v)
		}
	}
	return out
}

func testTiledMatchesPlain[T float32 | float64](t *testing.T, name string) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, tc := range []struct{ slices, a, d, n int }{
		{1, 1, 1, 1},
		{2, 7, 3, 5},          // most samples off the detector
		{1, 16, 40, 33},       // one pass of angles
		{2, 17, 33, 33},       // a pass of one angle
		{1, 40, 130, 130},     // tiles past the image on both axes
		{1, 23, 300, 140},     // a detector wider than the image
		{1, 33, 64, 150},      // narrower: the image's corners off the detector
		{1, 45, 180, 129 + 3}, // two tiles across, odd sizes
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d->%d", name, tc.slices, tc.a, tc.d, tc.n), func(t *testing.T) {
			g := newBPGeom[T](tc.slices, tc.a, tc.d, tc.n, rng)
			want := emulatePlain(g)
			got := emulateTiled(t, g)
			require.Equal(t, bitsOf(want), bitsOf(got), "the tiled kernel gives the plain kernel's bits")
			nonzero := 0
			for _, v := range got {
				if v != 0 {
					nonzero++
				}
			}
			if len(got) >= 16 {
				assert.Greater(t, nonzero, len(got)/4, "not mostly zeros")
			}
		})
	}
}

// TestTiledBackprojectionEmulated: backproject_tiled's algorithm, run on the
// host, gives backproject's bits on random sinograms of many shapes, and
// every pixel reads inside the tile's staged run.
func TestTiledBackprojectionEmulated(t *testing.T) {
	testTiledMatchesPlain[float32](t, "f32")
	testTiledMatchesPlain[float64](t, "f64")
}

// TestTiledBackprojectionEmulatedMatchesReference: the emulated plain
// kernel is within the Go reference's bound of it (the reference rounds
// without fma), so the emulation is of the kernel the GPU tests hold to
// the reference.
func TestTiledBackprojectionEmulatedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	g := newBPGeom[float32](2, 30, 50, 45, rng)
	e := element{4}
	sino, trig := make([]byte, 4*len(g.sino)), make([]byte, 4*len(g.trig))
	for i, v := range g.sino {
		e.put(sino, int64(4*i), float64(v))
	}
	for i, v := range g.trig {
		e.put(trig, int64(4*i), float64(v))
	}
	img := make([]byte, 4*g.slices*g.n*g.n)
	refBackproject(img, sino, trig, int64(g.slices), g.a, g.d, g.n, float64(g.scale), e)
	got := emulateTiled(t, g)
	for i, v := range got {
		want := e.get(img, int64(4*i))
		require.InDelta(t, want, float64(v), 1e-4*(1+math.Abs(want)), "pixel %d", i)
	}
}

// TestBPFloor: the floor of backproject_tiled is math.Floor, in value and
// as an int, over the range BackprojectTiled allows: near every integer,
// at halves (where rounding to nearest ties), and at random.
func TestBPFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	check32 := func(x float32) {
		j, fl := bpFloorT(x)
		want := float32(math.Floor(float64(x)))
		if fl != want || j != int(want) {
			t.Fatalf("floor32(%v) = %d, %v: want %v", x, j, fl, want)
		}
	}
	check64 := func(x float64) {
		j, fl := bpFloorT(x)
		want := math.Floor(x)
		if fl != want || j != int(want) {
			t.Fatalf("floor64(%v) = %d, %v: want %v", x, j, fl, want)
		}
	}
	const lim32, lim64 = 1 << 22, 1 << 31
	for range 200000 {
		i := float64(rng.IntN(2*lim32) - lim32)
		for _, x := range []float32{float32(i), float32(i) + 0.5, math.Nextafter32(float32(i), -lim32), math.Nextafter32(float32(i), lim32),
			float32((rng.Float64()*2 - 1) * lim32), float32(rng.Float64()*8 - 4)} {
			if math.Abs(float64(x)) < lim32 {
				check32(x)
			}
		}
		i = float64(rng.Int64N(2*lim64) - lim64)
		for _, x := range []float64{i, i + 0.5, math.Nextafter(i, -lim64), math.Nextafter(i, lim64), (rng.Float64()*2 - 1) * lim64} {
			if math.Abs(x) < lim64 {
				check64(x)
			}
		}
	}
	check32(0)
	check32(math.SmallestNonzeroFloat32)
	check32(-math.SmallestNonzeroFloat32)
	check64(0)
	check64(-math.SmallestNonzeroFloat64)
}

// TestTiledFootprintLargeGeometry: at sizes the full emulation cannot
// afford, up to the largest BackprojectTiled allows in float32, a tile's
// staged run holds every bin each of its pixels reads, at random tiles and
// angles, and the run fits the BP_W pairs staged.
func TestTiledFootprintLargeGeometry(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, tc := range []struct{ n, d int }{{512, 512}, {4096, 6000}, {100000, 3}, {1 << 21, 1 << 21}} {
		require.True(t, BackprojectTiled(tc.n, tc.d, 4), "%v fits", tc)
		a := 720
		g := bpGeom[float32]{n: tc.n, d: tc.d, a: a}
		half, c := g.consts()
		for range 300 {
			x0 := rng.IntN((tc.n+bpTileW-1)/bpTileW) * bpTileW
			y0 := rng.IntN((tc.n+bpTileH-1)/bpTileH) * bpTileH
			th := math.Pi * float64(rng.IntN(a)) / float64(a)
			cs, sn := float32(math.Cos(th)), float32(math.Sin(th))
			cxa, cxb := float32(x0)-half, float32(x0+bpTileW-1)-half
			cya, cyb := half-float32(y0), half-float32(y0+bpTileH-1)
			lo, cnt := bpFootprint(cxa, cxb, cya, cyb, cs, sn, c)
			require.Less(t, cnt, bpW, "the run fits with room")
			for y := y0; y < y0+bpTileH; y++ {
				q := half - float32(y)
				q = q * sn
				for x := x0; x < x0+bpTileW; x++ {
					j, _ := bpFloorT(fma32(float32(x)-half, cs, q) + c)
					if j < lo || j-lo >= cnt {
						t.Fatalf("n %d d %d tile (%d, %d) angle %v: pixel (%d, %d) reads bin %d outside [%d, %d)", tc.n, tc.d, x0, y0, th, x, y, j, lo, lo+cnt)
					}
				}
			}
		}
	}
	assert.False(t, BackprojectTiled(1<<22, 16, 4), "float32 past 2^22: the plain kernel")
	assert.True(t, BackprojectTiled(1<<22, 16, 8), "float64 goes further")
	assert.False(t, BackprojectTiled(1<<30, 1<<31-1, 8), "float64 past 2^31: the plain kernel")
}
