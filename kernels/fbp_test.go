package kernels_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/kernels"
)

// directRamp filters one row by the textbook formula, in float64: an
// independent computation to hold RampFilter against.
func directRamp(row []float64) []float64 {
	d := len(row)
	out := make([]float64, d)
	for x := range d {
		for j := range d {
			k := x - j
			switch {
			case k == 0:
				out[x] += row[j] / 4
			case k%2 != 0:
				out[x] -= row[j] / (math.Pi * math.Pi * float64(k*k))
			}
		}
	}
	return out
}

func TestRampFilter(t *testing.T) {
	_, k := setup(t)
	for _, tc := range []struct {
		name  string
		shape []int
	}{
		{"one row", []int{1, 1, 64}},
		{"stack", []int{3, 7, 45}},
		{"2-D", []int{20, 33}},
		{"one detector", []int{2, 5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 1
			for _, d := range tc.shape {
				n *= d
			}
			d := tc.shape[len(tc.shape)-1]
			for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64} {
				data := randomFloats[float64](n)
				a := upload(t, k, dt, data, tc.shape)
				require.NoError(t, k.RampFilter(a, nil))
				got := download(t, a)
				tol := 1e-12
				if dt == devarray.Float32 {
					tol = 2e-5 * float64(d)
				}
				for r := 0; r < n/d; r++ {
					want := directRamp(data[r*d : (r+1)*d])
					assert.InDeltaSlice(t, want, got[r*d:(r+1)*d], tol, "%v row %d", dt, r)
				}
				require.NoError(t, a.Free())
			}
		})
	}
}

// upload puts float64 values on the device as dtype dt.
func upload(t *testing.T, k *kernels.Kernels, dt devarray.DType, data []float64, shape []int) *devarray.DevArray {
	t.Helper()
	var a *devarray.DevArray
	var err error
	if dt == devarray.Float32 {
		f := make([]float32, len(data))
		for i, v := range data {
			f[i] = float32(v)
		}
		a, err = devarray.FromHost(k.Device(), f, shape...)
	} else {
		a, err = devarray.FromHost(k.Device(), data, shape...)
	}
	require.NoError(t, err)
	return a
}

// download reads a float32 or float64 array as float64.
func download(t *testing.T, a *devarray.DevArray) []float64 {
	t.Helper()
	if a.DType() == devarray.Float32 {
		f, err := devarray.ToHost[float32](a)
		require.NoError(t, err)
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	f, err := devarray.ToHost[float64](a)
	require.NoError(t, err)
	return f
}

// diskSinogram is the exact parallel-beam sinogram of a disk of radius r
// and value 1 at the centre: 2*sqrt(r²-t²) at every angle.
func diskSinogram(slices, angles, det int, r float64) []float64 {
	s := make([]float64, slices*angles*det)
	for i := range s {
		t := float64(i%det) - float64(det-1)/2
		if t*t < r*r {
			s[i] = 2 * math.Sqrt(r*r-t*t)
		}
	}
	return s
}

// TestFilteredBackprojectionOfADisk reconstructs a disk from its exact
// sinogram: inside it the image is 1, outside it (within the detector's
// field of view) 0, to within the error that discretization leaves.
func TestFilteredBackprojectionOfADisk(t *testing.T) {
	dev, k := setup(t)
	const slices, angles, det, n, r = 2, 180, 96, 96, 30.0
	for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64} {
		sino := upload(t, k, dt, diskSinogram(slices, angles, det, r), []int{slices, angles, det})
		img, err := devarray.Empty(dev, dt, slices, n, n)
		require.NoError(t, err)
		ws := accounting.NewWorkspace(dev)
		require.NoError(t, k.RampFilter(sino, ws))
		require.NoError(t, k.Backproject(img, sino, ws))
		got := download(t, img)
		var inSum, outSum float64
		var inN, outN int
		for i, v := range got {
			y, x := float64(i/n%n)-float64(n-1)/2, float64(i%n)-float64(n-1)/2
			switch rr := math.Hypot(x, y); {
			case rr < 0.8*r:
				inSum += v
				inN++
				assert.InDelta(t, 1, v, 0.08, "%v pixel (%v, %v) inside", dt, x, y)
			case rr > 1.2*r && rr < float64(det-1)/2: // outside the disk, inside the field of view
				outSum += v
				outN++
				assert.InDelta(t, 0, v, 0.08, "%v pixel (%v, %v) outside", dt, x, y)
			}
		}
		assert.InDelta(t, 1, inSum/float64(inN), 0.01, "%v mean inside", dt)
		assert.InDelta(t, 0, outSum/float64(outN), 0.01, "%v mean outside", dt)
		require.NoError(t, errors.Join(ws.Free(), img.Free(), sino.Free()))
	}
}

// TestRampFilterDegradedFallback runs the filter with a workspace of every
// size from one pass down to one row: the slower passes give the very same
// bits and say so with ErrPerfDegraded; a workspace too small for one row
// fails and changes nothing.
func TestRampFilterDegradedFallback(t *testing.T) {
	dev, k := setup(t)
	const slices, angles, det = 3, 10, 64
	data := randomFloats[float64](slices * angles * det)
	shape := []int{slices, angles, det}
	fast := kernels.RampFilterWorkspace(slices*angles, det, 4)
	taps := accounting.AlignUp(int64(2*det-1) * 4)

	ref := upload(t, k, devarray.Float32, data, shape)
	require.NoError(t, k.RampFilter(ref, nil))
	want := download(t, ref)
	require.NoError(t, ref.Free())

	for _, tc := range []struct {
		name     string
		size     int64
		degraded bool
		err      error
	}{
		{"one pass", fast, false, nil},
		{"half the rows", taps + 15*det*4, true, nil},
		{"one row per pass", taps + det*4, true, nil},
		{"not even one row", taps, false, accounting.ErrWorkspaceTooSmall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := accounting.NewWorkspace(dev)
			defer func() { require.NoError(t, ws.Free()) }()
			require.NoError(t, ws.SetManual(tc.size))
			a := upload(t, k, devarray.Float32, data, shape)
			defer a.Free()
			copies := dev.Ledger().Snapshot().Copies[accounting.DtoD][accounting.PathD2D].Count
			err := k.RampFilter(a, ws)
			got := download(t, a)
			switch {
			case tc.err != nil:
				assert.ErrorIs(t, err, tc.err)
				assert.Equal(t, asFloat32(data), got, "a failed call leaves the data alone")
				return
			case tc.degraded:
				assert.ErrorIs(t, err, accounting.ErrPerfDegraded)
			default:
				assert.NoError(t, err)
			}
			assert.Equal(t, want, got, "same bits whatever the pass size")
			passes := dev.Ledger().Snapshot().Copies[accounting.DtoD][accounting.PathD2D].Count - copies
			rows := (tc.size - taps) / (det * 4)
			assert.Equal(t, (slices*angles+rows-1)/rows, passes, "one copy back per pass")
		})
	}
}

// asFloat32 rounds data to float32, as an upload as Float32 does.
func asFloat32(data []float64) []float64 {
	out := make([]float64, len(data))
	for i, v := range data {
		out[i] = float64(float32(v))
	}
	return out
}

func TestRampFilterQueryMode(t *testing.T) {
	dev, k := setup(t)
	data := randomFloats[float64](4 * 9 * 50)
	a := upload(t, k, devarray.Float64, data, []int{4, 9, 50})
	defer a.Free()
	img, err := devarray.Empty(dev, devarray.Float64, 4, 50, 50)
	require.NoError(t, err)
	defer img.Free()

	ws := accounting.NewWorkspace(dev)
	defer func() { require.NoError(t, ws.Free()) }()
	before := dev.Ledger().Current(accounting.Device)
	require.NoError(t, ws.StartQuery())
	assert.Same(t, accounting.SizeIncreased, k.RampFilter(a, ws))
	assert.Same(t, accounting.SizeUnchanged, k.Backproject(img, a, ws), "the angle table is smaller than the filter's need")
	assert.Same(t, accounting.SizeUnchanged, k.RampFilter(a, ws))
	assert.Equal(t, data, download(t, a), "query mode runs nothing")
	size, err := ws.Preallocate()
	require.NoError(t, err)
	assert.Equal(t, accounting.AlignUp(kernels.RampFilterWorkspace(36, 50, 8)), size)
	assert.Equal(t, before+size, dev.Ledger().Current(accounting.Device))

	require.NoError(t, k.RampFilter(a, ws))
	require.NoError(t, k.Backproject(img, a, ws))
	assert.Zero(t, ws.Grows(), "a preallocated workspace never grows")
	assert.Equal(t, before+size, dev.Ledger().Current(accounting.Device))
}
