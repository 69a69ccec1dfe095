package tomo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

// TestResidentCopiesPageLocked: on a sim device whose every stream
// operation completes 2 ms after it is queued, the pipelined resident run
// with the transfer path left to choose moves every chunk by DMA from the
// page-locked sinograms and into the page-locked volume (the ledger's
// pinned path: no staging copy, no driver copy of pageable memory), once
// each, gives the unpipelined run's volume bit for bit, and leaves no
// device, page-locked or registered memory behind.
func TestResidentCopiesPageLocked(t *testing.T) {
	for _, tc := range []struct {
		g       tomo.Geometry
		streams int
	}{
		{tomo.Geometry{Size: 24, Angles: 20, Slices: 11}, 2},
		{tomo.Geometry{Size: 17, Angles: 9, Slices: 13}, 3},
	} {
		t.Run(fmt.Sprintf("%v/%d", tc.g, tc.streams), func(t *testing.T) {
			g := tc.g
			sino := randomSinograms(g)
			dev := openSim(t, "&latency=2ms", g, 2, tc.streams)
			want, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: 1})
			require.NoError(t, err)
			res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: tc.streams})
			require.NoError(t, err)
			chunks := int64(len(res.Plan.Chunks))
			require.Greater(t, chunks, int64(tc.streams), "more chunks than streams: slots are reused")
			assert.Equal(t, want.Volume, res.Volume, "the unpipelined run's bits")
			assert.Equal(t, chunks, res.Traffic.HtoDCopies, "one upload a chunk")
			assert.Equal(t, chunks, res.Traffic.DtoHCopies, "one download a chunk")
			assert.Equal(t, map[string]int64{"pinned": g.SinogramBytes()}, res.Traffic.HtoDByPath, "DMA from the page-locked sinograms")
			assert.Equal(t, map[string]int64{"pinned": g.VolumeBytes()}, res.Traffic.DtoHByPath, "DMA into the page-locked volume")
			assert.Positive(t, res.PrepareSeconds, "the run's making is timed apart")
			for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Registered} {
				assert.Zero(t, dev.Ledger().Current(k), "%v memory after the run", k)
			}
		})
	}
}
