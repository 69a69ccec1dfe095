package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// The reserve ratio bounds reserved bytes by ratio times the peak in use,
// the bound included: a medium request whose new 20 MiB segment brings
// the bytes reserved to exactly the bound gets that segment, as when it
// stays under it, and only a segment that would pass the bound is cut to
// the request's own size.
func TestReserveRatioBoundIsReached(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		name     string
		peak     int64 // in use at once before the cache is trimmed
		reserved int64 // after the medium request
	}{
		{"to exactly the bound", 40 << 20, 40 << 20},
		{"under it", 42 << 20, 40 << 20},
		{"past it: the request's own size", 38 << 20, 20<<20 + 8<<20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, dev)
			require.NoError(t, p.SetReserveRatio(1))
			// the peak: two large blocks, then the cache given back
			a, err := p.Alloc(24 << 20)
			require.NoError(t, err)
			b, err := p.Alloc(tc.peak - 24<<20)
			require.NoError(t, err)
			require.NoError(t, p.Free(a))
			require.NoError(t, p.Free(b))
			_, err = p.Trim()
			require.NoError(t, err)
			require.Zero(t, p.Stats().Reserved)
			// a medium segment of 20 MiB, filled by two 10 MiB blocks
			var held []devarray.Ptr
			for range 2 {
				ptr, err := p.Alloc(10 << 20)
				require.NoError(t, err)
				held = append(held, ptr)
			}
			require.Equal(t, int64(20<<20), p.Stats().Reserved)
			released := p.Stats().Released
			// a medium request: a new segment of 20 MiB, or of its own size
			n := int64(8<<20 - 256*rand.IntN(1024))
			ptr, err := p.Alloc(n)
			require.NoError(t, err)
			if tc.reserved < 40<<20 {
				tc.reserved = 20<<20 + (n+2<<20-1)/(2<<20)*(2<<20)
			}
			st := p.Stats()
			assert.Equal(t, tc.reserved, st.Reserved, "peak %d, %d bytes asked", tc.peak, n)
			assert.Equal(t, released, st.Released, "no idle segment to give back")
			data := testdev.RandomBytes(4096)
			end := ptr + devarray.Ptr(n-4096) // the block's last bytes are its own
			require.NoError(t, p.CopyHtoD(end, data))
			got := make([]byte, len(data))
			require.NoError(t, p.CopyDtoH(got, end))
			assert.Equal(t, data, got)
			for _, ptr := range append(held, ptr) {
				require.NoError(t, p.Free(ptr))
			}
		})
	}
}
