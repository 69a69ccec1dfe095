package devarray_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// FromHost, Zeros, CopyFrom and the strided writes and reads return with
// their work complete (the copy contract): what they wrote is read the
// instant they return, waiting for no stream. On sim with latency, as on a
// GPU, a call that returned when its copy was only queued fails here.
func TestHostCopiesAreCompleteOnReturn(t *testing.T) {
	dev := newDev(t)
	const rows, cols = 512, 768
	parent, err := devarray.FromHost(dev, randomFloat32(rows*cols), rows, cols)
	require.NoError(t, err)
	defer parent.Free()
	testdev.RequireArrayComplete(t, parent, "FromHost")

	zeros, err := devarray.Zeros(dev, devarray.Float64, rows, cols)
	require.NoError(t, err)
	defer zeros.Free()
	testdev.RequireArrayComplete(t, zeros, "Zeros")

	require.NoError(t, parent.CopyFrom(devarray.AsBytes(randomFloat32(rows*cols))))
	testdev.RequireArrayComplete(t, parent, "CopyFrom")

	view, err := parent.Slice(1, 1, cols, 3) // every third column: a strided write
	require.NoError(t, err)
	require.NoError(t, view.CopyFrom(devarray.AsBytes(randomFloat32(int(view.Size())))))
	testdev.RequireArrayComplete(t, parent, "CopyFrom into a strided view")

	out := devarray.AsBytes(randomFloat32(int(view.Size())))
	require.NoError(t, view.CopyTo(out))
	testdev.RequireHostComplete(t, dev, out, "CopyTo from a strided view")
}
