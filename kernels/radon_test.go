package kernels_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

var floatTypes = []devarray.DType{devarray.Float32, devarray.Float64}

// phantomOf runs Phantom into a new (slices, n, n) array and reads it back.
func phantomOf(t *testing.T, k *kernels.Kernels, dt devarray.DType, table []kernels.Ellipsoid, slices, n, first, total int) []float64 {
	t.Helper()
	vol, err := devarray.Empty(k.Device(), dt, slices, n, n)
	require.NoError(t, err)
	defer vol.Free()
	require.NoError(t, k.Phantom(vol, table, first, total))
	return download(t, vol)
}

// TestPhantomMass holds the phantom against an independent figure: the
// ellipsoids' values add, so the phantom's integral is the sum of value ×
// volume (4/3 π abc) of its ellipsoids, all inside the cube [-1, 1]³.
func TestPhantomMass(t *testing.T) {
	_, k := setup(t)
	const n = 32
	var want float64
	for _, e := range kernels.SheppLogan3D {
		want += e.Value * 4 / 3 * math.Pi * e.A * e.B * e.C
	}
	for _, dt := range floatTypes {
		vol := phantomOf(t, k, dt, kernels.SheppLogan3D, n, n, 0, n)
		var sum float64
		for _, v := range vol {
			sum += v
		}
		voxel := math.Pow(2.0/n, 3)
		assert.InEpsilon(t, want, sum*voxel, 0.01, "%v: the integral of the phantom", dt)
		mid := vol[(n/2*n+n/2)*n+n/2]
		assert.InDelta(t, 0.2, mid, 1e-6, "%v: inside the brain, away from every small ellipsoid", dt)
		assert.Zero(t, vol[0], "%v: a corner is outside the skull", dt)
	}
}

// TestPhantomSlabs: any split of the stack into slabs gives the same bits
// as one call, and a rotation by 90° about z swaps the x and y semi-axes.
func TestPhantomSlabs(t *testing.T) {
	_, k := setup(t)
	const n, total = 24, 20
	for _, dt := range floatTypes {
		whole := phantomOf(t, k, dt, kernels.SheppLogan3D, total, n, 0, total)
		var parts []float64
		for first := 0; first < total; {
			s := min(1+rand.IntN(7), total-first)
			parts = append(parts, phantomOf(t, k, dt, kernels.SheppLogan3D, s, n, first, total)...)
			first += s
		}
		assert.Equal(t, whole, parts, "%v: slabs stack into the volume", dt)
	}
	a := kernels.Ellipsoid{Value: 1.5, A: 0.7, B: 0.3, C: 0.5}
	b := a
	b.A, b.B, b.Phi = a.B, a.A, 90
	one := phantomOf(t, k, devarray.Float64, []kernels.Ellipsoid{a}, 8, n, 8, total)
	turned := phantomOf(t, k, devarray.Float64, []kernels.Ellipsoid{b}, 8, n, 8, total)
	var diff, sum float64
	for i := range one {
		diff += math.Abs(one[i] - turned[i])
		sum += one[i]
	}
	assert.Less(t, diff/sum, 1e-3, "a quarter turn of an ellipsoid with its axes swapped is the same shape")
	assert.InDelta(t, 1.5, one[(4*n+n/2)*n+n/2], 1e-12, "the centre is inside")
}

func TestPhantomErrors(t *testing.T) {
	dev, k := setup(t)
	vol, err := devarray.Empty(dev, devarray.Float32, 4, 8, 8)
	require.NoError(t, err)
	defer vol.Free()
	ints, err := devarray.Empty(dev, devarray.Int32, 4, 8, 8)
	require.NoError(t, err)
	defer ints.Free()
	flat, err := devarray.Empty(dev, devarray.Float32, 4, 8, 6)
	require.NoError(t, err)
	defer flat.Free()
	ro, err := vol.AsReadOnly()
	require.NoError(t, err)
	many := make([]kernels.Ellipsoid, kernels.PhantomMaxEllipsoids+1)
	for i := range many {
		many[i] = kernels.Ellipsoid{Value: 1, A: 1, B: 1, C: 1}
	}
	for _, tc := range []struct {
		name  string
		vol   *devarray.DevArray
		table []kernels.Ellipsoid
		first int
		total int
		err   error
	}{
		{"not a float", ints, kernels.SheppLogan3D, 0, 4, devarray.ErrDType},
		{"not square", flat, kernels.SheppLogan3D, 0, 4, devarray.ErrShape},
		{"past the stack", vol, kernels.SheppLogan3D, 1, 4, devarray.ErrShape},
		{"negative first", vol, kernels.SheppLogan3D, -1, 4, devarray.ErrShape},
		{"read-only", ro, kernels.SheppLogan3D, 0, 4, devarray.ErrReadOnly},
		{"too many ellipsoids", vol, many, 0, 4, driver.ErrInvalidValue},
		{"zero axis", vol, []kernels.Ellipsoid{{Value: 1, A: 0, B: 1, C: 1}}, 0, 4, driver.ErrInvalidValue},
		{"NaN value", vol, []kernels.Ellipsoid{{Value: math.NaN(), A: 1, B: 1, C: 1}}, 0, 4, driver.ErrInvalidValue},
		{"infinite angle", vol, []kernels.Ellipsoid{{Value: 1, A: 1, B: 1, C: 1, Psi: math.Inf(1)}}, 0, 4, driver.ErrInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, k.Phantom(tc.vol, tc.table, tc.first, tc.total), tc.err)
		})
	}
}

// TestProjectDisk projects the central slice of a sphere, a disk of radius
// r: at every angle the exact projection is 2 sqrt(r² - t²) (away from the
// rim, which is in partial-volume voxels), and every angle carries the
// image's whole mass.
func TestProjectDisk(t *testing.T) {
	dev, k := setup(t)
	const n, angles, slices = 48, 37, 2
	const r = 0.6 // phantom units: 0.6 n/2 pixels
	sphere := []kernels.Ellipsoid{{Value: 1, A: r, B: r, C: r}}
	for _, dt := range floatTypes {
		img, err := devarray.Empty(dev, dt, slices, n, n)
		require.NoError(t, err)
		require.NoError(t, k.Phantom(img, sphere, n/2-1, n))
		sino, err := devarray.Empty(dev, dt, slices, angles, n)
		require.NoError(t, err)
		before := dev.Ledger().Snapshot()
		require.NoError(t, k.Project(sino, img, nil))
		moved := accounting.Diff(before, dev.Ledger().Snapshot())
		assert.Zero(t, moved.CopyTotal(accounting.HtoD).Bytes+moved.CopyTotal(accounting.DtoH).Bytes, "projection stays on the device")
		pix, got := download(t, img), download(t, sino)
		var mass float64
		for _, v := range pix[:n*n] {
			mass += v
		}
		rp := r * n / 2
		for a := range angles {
			row := got[a*n : (a+1)*n]
			var sum float64
			for j, v := range row {
				sum += v
				tt := float64(j) - float64(n-1)/2
				switch at := math.Abs(tt); { // the rim's bins see the voxels' partial volumes: left to the mass check
				case at < rp-1.5:
					assert.InDelta(t, 2*math.Sqrt(rp*rp-tt*tt), v, 0.5, "%v angle %d bin %d", dt, a, j)
				case at > rp+1.5:
					assert.Zero(t, v, "%v angle %d bin %d", dt, a, j)
				}
			}
			assert.InEpsilon(t, mass, sum, 0.005, "%v angle %d: the mass of the image", dt, a)
		}
		assert.Equal(t, got[:angles*n], got[angles*n:], "%v: both slices of the sphere's centre are one disk", dt)
		require.NoError(t, sino.Free())
		require.NoError(t, img.Free())
	}
}

// TestProjectRandom: on random images, every angle's projection still sums
// to the image's mass, and the projector is linear.
func TestProjectRandom(t *testing.T) {
	dev, k := setup(t)
	const n, angles = 20, 9
	data := randomFloats[float64](2 * n * n)
	for i := range data {
		data[i] = 3 + data[i]/2 // positive, so that the mass is not a sum of cancelling terms // zero outside the inscribed circle, where every ray sees all of it
		y, x := float64(i/n%n)-float64(n-1)/2, float64(i%n)-float64(n-1)/2
		if math.Hypot(x, y) > float64(n)/2-2 {
			data[i] = 0
		}
	}
	img := upload(t, k, devarray.Float64, data, []int{2, n, n})
	defer img.Free()
	sino, err := devarray.Empty(dev, devarray.Float64, 2, angles, n+5)
	require.NoError(t, err)
	defer sino.Free()
	require.NoError(t, k.Project(sino, img, nil))
	got := download(t, sino)
	require.NoError(t, k.Scale(img, 3))
	require.NoError(t, k.Project(sino, img, nil))
	tripled := download(t, sino)
	for s := range 2 {
		var mass float64
		for _, v := range data[s*n*n : (s+1)*n*n] {
			mass += v
		}
		for a := range angles {
			var sum float64
			for j := range n + 5 {
				i := (s*angles+a)*(n+5) + j
				sum += got[i]
				assert.InDelta(t, 3*got[i], tripled[i], 1e-9)
			}
			assert.InEpsilon(t, mass, sum, 0.01, "slice %d angle %d", s, a)
		}
	}
}

func TestProjectErrors(t *testing.T) {
	dev, k := setup(t)
	img, err := devarray.Empty(dev, devarray.Float32, 2, 8, 8)
	require.NoError(t, err)
	defer img.Free()
	sino, err := devarray.Empty(dev, devarray.Float32, 2, 5, 8)
	require.NoError(t, err)
	defer sino.Free()
	other, err := devarray.Empty(dev, devarray.Float64, 2, 5, 8)
	require.NoError(t, err)
	defer other.Free()
	short, err := devarray.Empty(dev, devarray.Float32, 1, 5, 8)
	require.NoError(t, err)
	defer short.Free()
	stepped, err := sino.Slice(2, 0, 8, 2)
	require.NoError(t, err)
	ro, err := sino.AsReadOnly()
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		sino, img *devarray.DevArray
		err       error
	}{
		{"dtypes differ", other, img, devarray.ErrShape},
		{"slices differ", short, img, devarray.ErrShape},
		{"strided", stepped, img, devarray.ErrNotViewable},
		{"read-only output", ro, img, devarray.ErrReadOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, k.Project(tc.sino, tc.img, nil), tc.err)
		})
	}
	ws := accounting.NewWorkspace(dev)
	defer func() { require.NoError(t, ws.Free()) }()
	require.NoError(t, ws.StartQuery())
	assert.Same(t, accounting.SizeIncreased, k.Project(sino, img, ws), "query mode asks for the angle table")
	size, err := ws.Preallocate()
	require.NoError(t, err)
	assert.Equal(t, accounting.AlignUp(kernels.ProjectWorkspace(5, 4)), size)
}
