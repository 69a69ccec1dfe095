package kernels

import (
	"bytes"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fbpCase is one geometry the new references are held against the old on.
type fbpCase struct {
	slices  int64
	a, d, n int
}

var fbpCases = []fbpCase{
	{1, 1, 1, 1},
	{1, 7, 5, 9},    // image wider than the detector: samples off it
	{2, 13, 32, 17}, // detector wider than the image
	{3, 45, 33, 50},
	{1, 90, 64, 64},
	{2, 180, 91, 64},
}

// elements are float32 and float64.
var elements = []element{{4}, {8}}

// randomValues returns n values of element e, spread over many magnitudes
// and both signs so that every rounding case comes up, as bytes.
func randomValues(rng *rand.Rand, n int, e element) []byte {
	b := make([]byte, int64(n)*e.size)
	for i := range n {
		v := (2*rng.Float64() - 1) * math.Ldexp(1, rng.IntN(41)-20)
		e.put(b, int64(i)*e.size, v)
	}
	return b
}

// garbage returns n random bytes: an output buffer whose every byte the
// reference must write.
func garbage(rng *rand.Rand, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// fusesFMA reports whether this build fuses a float64 multiply and add
// that have no conversion between them into one FMA (arm64, amd64.v3): the
// old references' float64 path then rounds differently from the new one,
// which never fuses. float32 is unaffected: the old path converted after
// every operation.
func fusesFMA() bool {
	x, y, z := fmaProbe[0], fmaProbe[1], fmaProbe[2]
	return x*y+z != float64(x*y)+z
}

// fmaProbe holds values whose x*y+z differs when fused (a variable, so the
// compiler cannot fold it).
var fmaProbe = [3]float64{1 + 0x1p-30, 1 - 0x1p-30, -1}

// requireSameBits checks that got and want hold the same elements bit for
// bit, or, for float64 in a build that fuses, within a few ulps.
func requireSameBits(t *testing.T, want, got []byte, e element, what string) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	if e.size == 8 && fusesFMA() {
		for i := int64(0); i < int64(len(want)); i += 8 {
			w, g := e.get(want, i), e.get(got, i)
			require.InDelta(t, w, g, 8*math.Abs(w)*0x1p-52+1e-300, "%s: element %d", what, i/8)
		}
		return
	}
	for i := int64(0); i < int64(len(want)); i += e.size {
		require.Equal(t, e.get(want, i), e.get(got, i), "%s: element %d differs (first difference)", what, i/e.size)
	}
}

// TestRampFilterSameBits: refRampFilter, on all cores and in T, gives the
// same bits as the float64 emulation it replaced, on random rows, rows
// with zeros, -0, Inf and NaN (which turn off the skipping of zero taps),
// and on every geometry of fbpCases.
func TestRampFilterSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, e := range elements {
		for _, tc := range fbpCases {
			t.Run(fmt.Sprintf("f%d/%d×%d×%d", 8*e.size, tc.slices, tc.a, tc.d), func(t *testing.T) {
				rows := tc.slices * int64(tc.a)
				d := tc.d
				taps := make([]byte, int64(2*d-1)*e.size)
				refRampTaps(taps, d, e)
				in := randomValues(rng, int(rows)*d, e)
				if rows > 3 && d > 2 {
					e.put(in, int64(d)*e.size, 0)                      // a zero
					e.put(in, int64(d+1)*e.size, math.Copysign(0, -1)) // a -0
					e.put(in, int64(2*d+rng.IntN(d))*e.size, math.Inf(1))
					e.put(in, int64(3*d+rng.IntN(d))*e.size, math.NaN())
				}
				n := rows * int64(d) * e.size
				want, got := garbage(rng, n), garbage(rng, n)
				oldRampFilter(want, in, taps, rows, d, e)
				refRampFilter(got, in, taps, rows, d, e)
				requireSameBits(t, want, got, e, "ramp filter")
			})
		}
	}
}

// TestBackprojectSameBits: refBackproject, on all cores and in T, gives
// the same bits as the float64 emulation it replaced, on random sinograms
// of every geometry of fbpCases.
func TestBackprojectSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, e := range elements {
		for _, tc := range fbpCases {
			t.Run(fmt.Sprintf("f%d/%d×%d×%d→%d", 8*e.size, tc.slices, tc.a, tc.d, tc.n), func(t *testing.T) {
				trig := make([]byte, int64(2*tc.a)*e.size)
				refTrigTable(trig, tc.a, e)
				sino := randomValues(rng, int(tc.slices)*tc.a*tc.d, e)
				n := tc.slices * int64(tc.n*tc.n) * e.size
				want, got := garbage(rng, n), garbage(rng, n)
				scale := math.Pi / float64(tc.a)
				oldBackproject(want, sino, trig, tc.slices, tc.a, tc.d, tc.n, scale, e)
				refBackproject(got, sino, trig, tc.slices, tc.a, tc.d, tc.n, scale, e)
				requireSameBits(t, want, got, e, "backprojection")
			})
		}
	}
}

// TestFBPOfThePhantomSameBits runs the whole reconstruction of the
// Shepp–Logan phantom's projections, old and new: the same bits.
func TestFBPOfThePhantomSameBits(t *testing.T) {
	const n, a = 64, 120
	d := n + 1
	table := make([]prepared, len(SheppLogan3D))
	for i, el := range SheppLogan3D {
		var err error
		table[i], err = el.prepare()
		require.NoError(t, err)
	}
	for _, e := range elements {
		t.Run(fmt.Sprintf("f%d", 8*e.size), func(t *testing.T) {
			img := make([]byte, int64(n*n)*e.size)
			refPhantom(img, table, 1, n, newPhantomGrid(n, n/2, n, PhantomSubsamples), e)
			trig := make([]byte, int64(2*a)*e.size)
			refTrigTable(trig, a, e)
			sino := make([]byte, int64(a*d)*e.size)
			refProject(sino, img, trig, 1, a, d, n, ProjectStep, e)
			taps := make([]byte, int64(2*d-1)*e.size)
			refRampTaps(taps, d, e)

			filtered := [2][]byte{make([]byte, len(sino)), make([]byte, len(sino))}
			oldRampFilter(filtered[0], sino, taps, a, d, e)
			refRampFilter(filtered[1], sino, taps, a, d, e)
			requireSameBits(t, filtered[0], filtered[1], e, "filtered sinogram")
			out := [2][]byte{make([]byte, len(img)), make([]byte, len(img))}
			oldBackproject(out[0], filtered[0], trig, 1, a, d, n, math.Pi/a, e)
			refBackproject(out[1], filtered[0], trig, 1, a, d, n, math.Pi/a, e)
			requireSameBits(t, out[0], out[1], e, "reconstruction")
			// and it is a reconstruction: the centre of the brain is near 0.2
			mid := e.get(out[1], int64(n/2*n+n/2)*e.size)
			assert.InDelta(t, 0.2, mid, 0.05, "the reconstruction's centre")
		})
	}
}

// TestParallelCoversEachItemOnce: every item of [0, n) is handed to
// exactly one call, for chunk sizes that divide n and that do not.
func TestParallelCoversEachItemOnce(t *testing.T) {
	for _, tc := range []struct{ n, grain int }{{0, 1}, {1, 1}, {7, 1}, {100, 7}, {1000, 1000}, {1000, 2000}, {5, 0}} {
		seen := make([]atomic.Int32, tc.n)
		parallel(tc.n, tc.grain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			require.Equal(t, int32(1), seen[i].Load(), "n %d grain %d: item %d", tc.n, tc.grain, i)
		}
	}
}

// TestParallelRaisesAWorkersPanic: a panic in a chunk comes back to the
// caller (where sim's launch turns it into the stream's error), not a
// crash of the process.
func TestParallelRaisesAWorkersPanic(t *testing.T) {
	assert.PanicsWithValue(t, "kernels: reference worker: boom", func() {
		parallel(64, 1, func(lo, _ int) {
			if lo == 37 {
				panic("boom")
			}
		})
	})
}

// BenchmarkReferenceFBP256 times the references themselves, old and new,
// on one 256×256 slice from 360 angles × 256 detectors (the size of the
// scikit-image comparison): the ramp filter and the backprojection, with
// no device around them. old/new in one run is the speed-up.
func BenchmarkReferenceFBP256(b *testing.B) {
	const a, d, n = 360, 256, 256
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, e := range elements {
		taps := make([]byte, int64(2*d-1)*e.size)
		refRampTaps(taps, d, e)
		trig := make([]byte, int64(2*a)*e.size)
		refTrigTable(trig, a, e)
		sino := randomValues(rng, a*d, e)
		filtered := make([]byte, len(sino))
		img := make([]byte, int64(n*n)*e.size)
		for _, impl := range []struct {
			name string
			ramp func(out, in, h []byte, rows int64, d int, e element)
			bp   func(img, sino, trig []byte, slices int64, a, d, n int, scale float64, e element)
		}{{"old", oldRampFilter, oldBackproject}, {"new", refRampFilter, refBackproject}} {
			b.Run(fmt.Sprintf("f%d/ramp/%s", 8*e.size, impl.name), func(b *testing.B) {
				for b.Loop() {
					impl.ramp(filtered, sino, taps, a, d, e)
				}
			})
			b.Run(fmt.Sprintf("f%d/backproject/%s", 8*e.size, impl.name), func(b *testing.B) {
				for b.Loop() {
					impl.bp(img, filtered, trig, 1, a, d, n, math.Pi/a, e)
				}
			})
		}
	}
}
