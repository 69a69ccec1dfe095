package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

// Every kernel method returns with its work complete (the copy contract):
// its output is read the instant it returns, waiting for no stream. On sim
// with latency, as on a GPU, a method that returned after queueing its
// launch fails here. Each runs on the default stream and on a stream of
// its own (WithStream).
func TestKernelsAreCompleteOnReturn(t *testing.T) {
	dev, k0 := setup(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const slices, n, angles, det = 2, 32, 24, 40
	random := func(shape ...int) *devarray.DevArray {
		size := 1
		for _, d := range shape {
			size *= d
		}
		a, err := devarray.FromHost(dev, randomFloats[float32](size), shape...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, a.Free()) })
		return a
	}
	for _, stream := range []struct {
		name string
		k    *kernels.Kernels
	}{{"default stream", k0}, {"own stream", k0.WithStream(s)}} {
		k := stream.k
		x, y := random(256, 257), random(256, 257)
		yT, err := y.Transpose()
		require.NoError(t, err)
		packed, fresh := random(257, 256), random(257, 256)
		img, sino := random(slices, n, n), random(slices, angles, det)
		// A workspace kept across calls: a temporary one synchronizes the
		// device when it is freed, which would hide a missing wait.
		ws := accounting.NewWorkspace(dev)
		t.Cleanup(func() { require.NoError(t, ws.Free()) })
		for _, tc := range []struct {
			name string
			out  *devarray.DevArray
			call func() error
		}{
			{"Fill", x, func() error { return k.Fill(x, 0.25) }},
			{"Scale", x, func() error { return k.Scale(x, -3) }},
			{"Axpy", y, func() error { return k.Axpy(y, 2, x) }},
			{"Pack", packed, func() error { return k.Pack(packed, yT) }},
			{"Unpack", y, func() error { return k.Unpack(yT, fresh) }},
			{"RampFilter", sino, func() error { return k.RampFilter(sino, ws) }},
			{"Backproject", img, func() error { return k.Backproject(img, sino, ws) }},
			{"Project", sino, func() error { return k.Project(sino, img, ws) }},
			{"Phantom", img, func() error { return k.Phantom(img, kernels.SheppLogan3D, 0, slices) }},
		} {
			t.Run(stream.name+"/"+tc.name, func(t *testing.T) {
				require.NoError(t, tc.call())
				testdev.RequireArrayComplete(t, tc.out, tc.name)
			})
		}
	}
}

// Async kernels queue their work and return at once: with their stream held
// (testdev.Hold, on every backend) the output is still the old one when the
// call returns, and the new one once the stream has passed it.
func TestAsyncKernelsReturnBeforeTheWorkIsDone(t *testing.T) {
	dev, k := setup(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	a, err := devarray.FromHost(dev, randomFloats[float32](4096), 4096)
	require.NoError(t, err)
	defer a.Free()
	before := peekFloats(t, dev, a)
	// The kernel waits behind the hold, as behind a long one; the peeks run
	// while its host function does, as on the H100, whose peek into a Go
	// slice never returned there (testdev.Peek fails past its deadline).
	resume := testdev.HoldReached(t, s)
	require.NoError(t, k.Async(s).Fill(a, 7))
	assert.Equal(t, before, peekFloats(t, dev, a), "queued, not done")
	resume()
	require.NoError(t, s.Synchronize())
	for _, v := range peekFloats(t, dev, a) {
		require.Equal(t, float32(7), v)
	}
}

func peekFloats(t *testing.T, dev device.Device, a *devarray.DevArray) []float32 {
	b := testdev.Peek(t, dev, a.Ptr(), a.NBytes())
	out := make([]float32, a.Size())
	copy(devarray.AsBytes(out), b)
	return out
}
