package kernel_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// A kernel runs on virtual memory across the boundary of two chunks mapped
// one after the other, as on one allocation: saxpy over arrays whose
// elements straddle it gives nvcc's bits, on sim and the emulated driver
// (and a GPU). The chunks are released after mapping: their memory stays
// until the test unmaps it.
func TestKernelAcrossMappings(t *testing.T) {
	dev := testdev.Open(t)
	g, err := dev.MemGranularity()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no virtual memory here: %v", err)
	}
	require.NoError(t, err)
	size := g.Minimum
	p, err := dev.ReserveAddress(2*size, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, dev.FreeAddress(p, 2*size)) })
	for i := range int64(2) {
		h, err := dev.CreatePhysical(size)
		require.NoError(t, err)
		at := p + devarray.Ptr(i*size)
		require.NoError(t, dev.MapMemory(at, size, 0, h))
		t.Cleanup(func() { assert.NoError(t, dev.UnmapMemory(at, size)) })
		require.NoError(t, dev.ReleasePhysical(h))
	}
	require.NoError(t, dev.SetAccess(p, 2*size, true))

	n := 32 * (2 + rand.IntN(16))
	wrap := func(at devarray.Ptr, vals []float32) *devarray.DevArray {
		a, err := devarray.Wrap(dev, devarray.Descriptor{Ptr: at, Shape: []int{n}, DType: devarray.Float32, Device: dev.DeviceID()},
			devarray.WithBounds(p, 2*size))
		require.NoError(t, err)
		require.NoError(t, devarray.CopyFromHost(a, vals))
		return a
	}
	xs, ys := randomFloats(n), randomFloats(n)
	y := wrap(p+devarray.Ptr(size)-devarray.Ptr(2*n), ys) // read and written: n/2 floats before the boundary, n/2 after
	x := wrap(p+devarray.Ptr(size)-devarray.Ptr(6*n), xs) // read: the n floats before y
	a := rand.Float32()*4 - 2
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	require.NoError(t, saxpy.Launch(kernel.Grid1D(int64(n), 32), kernel.F32(a), kernel.In(x), kernel.InOut(y), kernel.I32(int32(n))))
	got, err := devarray.ToHost[float32](y)
	require.NoError(t, err)
	for i := range n {
		require.Equal(t, fma32(a, xs[i], ys[i]), got[i], "element %d", i)
	}
}
