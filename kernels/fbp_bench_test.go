package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

// FBP256 is the geometry of the scikit-image comparison
// (bench/peers/skimage_fbp.py): one 256×256 slice from 360 angles over
// [0, π) and 256 detector bins.
const (
	fbp256N      = 256
	fbp256Angles = 360
)

// BenchmarkFBP256 reconstructs one 256×256 slice of the Shepp–Logan
// phantom from its 360×256 sinogram on the test device (sim: the Go
// references on all cores), with the data already on the device:
// "fbp" is what scikit-image's iradon does (a fresh copy of the sinogram
// filtered, then backprojected), "ramp" and "backproject" its two steps.
// bench/peers/skimage_fbp.py runs it beside iradon and prints the ratio.
func BenchmarkFBP256(b *testing.B) {
	dev := testdev.Open(b)
	k, err := kernels.New(dev)
	require.NoError(b, err)
	defer k.Close()
	for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64} {
		img, err := devarray.Empty(dev, dt, 1, fbp256N, fbp256N)
		require.NoError(b, err)
		raw, err := devarray.Empty(dev, dt, 1, fbp256Angles, fbp256N)
		require.NoError(b, err)
		sino, err := devarray.Empty(dev, dt, 1, fbp256Angles, fbp256N)
		require.NoError(b, err)
		ws := accounting.NewWorkspace(dev)
		require.NoError(b, k.Phantom(img, kernels.SheppLogan3D, fbp256N/2, fbp256N))
		require.NoError(b, k.Project(raw, img, ws))
		require.NoError(b, dev.CopyDtoD(sino.Ptr(), raw.Ptr(), raw.NBytes()))
		require.NoError(b, k.RampFilter(sino, ws))

		b.Run(dt.String()+"/fbp", func(b *testing.B) {
			work, err := devarray.Empty(dev, dt, 1, fbp256Angles, fbp256N)
			require.NoError(b, err)
			defer work.Free()
			for b.Loop() {
				if err := dev.CopyDtoD(work.Ptr(), raw.Ptr(), raw.NBytes()); err != nil {
					b.Fatal(err)
				}
				if err := k.RampFilter(work, ws); err != nil {
					b.Fatal(err)
				}
				if err := k.Backproject(img, work, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(dt.String()+"/ramp", func(b *testing.B) {
			work, err := devarray.Empty(dev, dt, 1, fbp256Angles, fbp256N)
			require.NoError(b, err)
			defer work.Free()
			for b.Loop() {
				b.StopTimer() // filtering in place again and again would end in subnormals
				if err := dev.CopyDtoD(work.Ptr(), raw.Ptr(), raw.NBytes()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := k.RampFilter(work, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(dt.String()+"/backproject", func(b *testing.B) {
			for b.Loop() {
				if err := k.Backproject(img, sino, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
		require.NoError(b, ws.Free())
		for _, a := range []*devarray.DevArray{img, raw, sino} {
			require.NoError(b, a.Free())
		}
	}
}
