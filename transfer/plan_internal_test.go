package transfer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

// The planner picks from the sides' kinds, the size and the device, and
// says why in one line.
func TestChoose(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.Empty(dev, devarray.Uint8, 8<<20)
	require.NoError(t, err)
	defer a.Free()
	buf, err := pinned.Alloc(dev, 8<<20, 0)
	require.NoError(t, err)
	defer buf.Free()
	small, big := make([]byte, 4096), make([]byte, 8<<20)
	o := Options{}.withDefaults()
	for _, tc := range []struct {
		name     string
		dst, src Endpoint
		backend  string
		want     Path
		reason   string
	}{
		{"device to device", Dev(a), Dev(a), "cuda", PathD2D, "inside device memory"},
		{"pinned to device", Dev(a), Pinned(buf, devarray.Uint8), "cuda", PathPinned, "page-locked"},
		{"device to pinned", Pinned(buf, devarray.Uint8), Dev(a), "sim", PathPinned, "DMA engine"},
		{"large pageable on a GPU", Dev(a), HostBytes(big, devarray.Uint8), "cuda", PathStaged, "4 pinned chunks of 4.00 MiB"},
		{"small pageable on a GPU", Dev(slice(t, a, 4096)), HostBytes(small, devarray.Uint8), "cuda", PathDirect, "under 1.00 MiB"},
		{"large pageable on sim", Dev(a), HostBytes(big, devarray.Uint8), "sim", PathDirect, "no DMA engine"},
		{"host to host", HostBytes(big, devarray.Uint8), Pinned(buf, devarray.Uint8), "cuda", PathDirect, "no device involved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := choose(tc.dst, tc.src, tc.src.nbytes(), tc.backend, o)
			assert.Equal(t, tc.want, c.Path)
			assert.Contains(t, c.Reason, tc.reason)
			assert.NotContains(t, c.String(), "\n", "one line")
			assert.NoError(t, fits(c.Path, tc.dst, tc.src), "the planner only picks paths that fit")
		})
	}
}

func slice(t *testing.T, a *devarray.DevArray, n int) *devarray.DevArray {
	v, err := a.Slice(0, 0, n)
	require.NoError(t, err)
	return v
}
