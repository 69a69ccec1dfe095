package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// A pitched copy into host-resident managed memory (cuMemcpy2D, cuMemcpy3D)
// migrates the pages its rows touch, each once, and none between them: a
// fault and a page of HtoD bytes on "migrated" per row when every row lies
// in a page of its own, pitch pages apart. The bytes arrive where the rows
// say.
func TestManagedPitchedCopyMigratesItsRows(t *testing.T) {
	dev := testdev.Open(t)
	requireResidency(t, dev)
	r := rand.For(t)
	for _, tc := range []struct {
		name          string
		depth         int64
		height        int64
		pitchPages    int64
		threeAxes     bool
		sliceRowsPlus int64 // the destination's slice height beyond the rows copied
	}{
		{"2-D, rows two pages apart", 1, 2 + int64(r.IntN(5)), 2, false, 0},
		{"2-D, rows three pages apart", 1, 2 + int64(r.IntN(4)), 3, false, 0},
		{"3-D, two slices", 2, 2 + int64(r.IntN(3)), 2, true, 1 + int64(r.IntN(2))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pitch := tc.pitchPages * managedPage
			sliceHeight := tc.height + tc.sliceRowsPlus
			pages := int((tc.depth*sliceHeight + 1) * tc.pitchPages)
			a, _ := managedOnHost(t, r, dev, pages)
			off := int64(r.IntN(managedPage / 2))
			width := 1 + int64(r.IntN(managedPage/2))
			src := testdev.RandomBytes(int(width * tc.height * tc.depth))
			dst := devarray.Place{Dev: a.Ptr() + devarray.Ptr(off)}
			run := measureManaged(t, dev, func() {
				if tc.threeAxes {
					require.NoError(t, dev.Memcpy3D(devarray.Memcpy3D{Dst: dst, Src: devarray.Place{Host: src},
						DstPitch: pitch, SrcPitch: width, DstHeight: sliceHeight, SrcHeight: tc.height,
						Width: width, Height: tc.height, Depth: tc.depth}))
					return
				}
				require.NoError(t, dev.Memcpy2D(devarray.Memcpy2D{Dst: dst, Src: devarray.Place{Host: src},
					DstPitch: pitch, SrcPitch: width, Width: width, Height: tc.height}))
			})
			rows := tc.height * tc.depth
			assert.Equal(t, managedDiff{migratedHtoD: rows * managedPage, faults: rows}, run,
				"%d rows of %d bytes, %d pages apart: a page each", rows, width, tc.pitchPages)

			b, err := a.HostView(false)
			require.NoError(t, err)
			for z := range tc.depth {
				for y := range tc.height {
					at := off + z*sliceHeight*pitch + y*pitch
					from := (z*tc.height + y) * width
					require.Equal(t, src[from:from+width], b[at:at+width], "slice %d row %d", z, y)
				}
			}
		})
	}
}
