package tomo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/transfer"
)

// The pipelined run on every path the copier offers for pageable memory,
// with up to MaxStreams chunks in flight, under latency: the same bits as
// the unpipelined run, nothing left on the device or registered. Images
// of 24 × 24 float32 are 2304 bytes, so neighbouring chunks of the volume
// share a page.
func TestPipelinePaths(t *testing.T) {
	g := tomo.Geometry{Size: 24, Angles: 9, Slices: 13}
	sino := randomSinograms(g)
	plain := openSim(t, "", g, 1, 1)
	want, err := tomo.ReconstructWith(plain, g, sino, tomo.Resident, tomo.Options{Streams: 1})
	require.NoError(t, err)
	for _, path := range []transfer.Path{transfer.PathDirect, transfer.PathStaged, transfer.PathRegistered} {
		for _, streams := range []int{2, 3, tomo.MaxStreams} {
			t.Run(fmt.Sprintf("%v/%d", path, streams), func(t *testing.T) {
				dev := openSim(t, "&latency=2ms", g, 1, streams)
				got, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: streams, Path: path, MinChunks: g.Slices})
				require.NoError(t, err)
				assert.Equal(t, want.Volume, got.Volume)
				assert.Zero(t, dev.Ledger().Current(accounting.Device))
				assert.Zero(t, dev.Ledger().Current(accounting.Registered))
				assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
			})
		}
	}
}
