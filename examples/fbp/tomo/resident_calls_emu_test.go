//go:build cuda && cudaemu && linux

package tomo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// callsSince returns the driver calls made since before, by function.
func callsSince(before map[string]int64) map[string]int64 {
	diff := map[string]int64{}
	for name, n := range emulated.Calls() {
		if d := n - before[name]; d > 0 {
			diff[name] = d
		}
	}
	return diff
}

// notOnTheClock are the driver functions that make or free what a run
// needs: the pipelined resident run calls them before its clock starts or
// after it stops, never while it runs.
var notOnTheClock = []string{
	"cuMemHostAlloc", "cuMemFreeHost", // pinned staging memory
	"cuMemHostRegister_v2", "cuMemHostUnregister", // page-locking the host's arrays
	"cuStreamCreate", "cuStreamDestroy_v2",
	"cuMemAlloc_v2", "cuMemFree_v2",
}

// TestResidentClockDriverCalls counts, on the emulated CUDA driver, the
// driver calls the pipelined resident run makes between its clock's start
// and stop: none that allocates or frees pinned or device memory,
// page-locks host memory or makes a stream (the run makes them all
// before, and frees them after, where the count sees them). On the clock
// are the work: each chunk's upload and download. With the transfer path
// left to choose they are queued on streams, and by the time the run
// reports its first chunk done it has queued every chunk's (no host wait
// on an upload, nor on another chunk's download); on the staged path they
// go through the copier's ring, whose pinned chunks and streams the run
// reserved before the clock.
func TestResidentClockDriverCalls(t *testing.T) {
	for _, tc := range []struct {
		g       tomo.Geometry
		streams int
		path    transfer.Path
	}{
		{tomo.Geometry{Size: 32, Angles: 24, Slices: 16}, 2, transfer.PathAuto},
		{tomo.Geometry{Size: 21, Angles: 13, Slices: 19}, 3, transfer.PathAuto},
		{tomo.Geometry{Size: 32, Angles: 24, Slices: 16}, 2, transfer.PathStaged},
	} {
		t.Run(fmt.Sprintf("%v/%d/%v", tc.g, tc.streams, tc.path), func(t *testing.T) {
			dev := testdev.Open(t)
			sino := randomSinograms(tc.g)
			var start, onClock, firstChunk map[string]int64
			restore := tomo.OnClock(func(running bool, _ *tomo.Result) {
				if running {
					start = emulated.Calls()
					return
				}
				onClock = callsSince(start)
			})
			defer restore()
			whole := emulated.Calls()
			res, err := tomo.ReconstructWith(dev, tc.g, sino, tomo.Resident, tomo.Options{Streams: tc.streams, Path: tc.path, Progress: func(_ string, _, _ int) {
				if firstChunk == nil {
					firstChunk = callsSince(start)
				}
			}})
			require.NoError(t, err)
			all := callsSince(whole)
			require.NotNil(t, onClock, "the clock started and stopped")
			t.Logf("on the clock: %v", onClock)
			for _, name := range notOnTheClock {
				assert.Zero(t, onClock[name], "%s on the clock", name)
			}
			assert.Positive(t, all["cuStreamCreate"], "the run makes its streams, off the clock")
			assert.Positive(t, all["cuMemAlloc_v2"], "the run allocates its buffers, off the clock")
			chunks := int64(len(res.Plan.Chunks))
			require.Greater(t, chunks, int64(tc.streams), "more chunks than streams: slots are reused")
			for _, sync := range []string{"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"} {
				assert.Zero(t, onClock[sync], "no copy that waits (%s) on the clock", sync)
			}
			if tc.path == transfer.PathStaged {
				assert.Positive(t, all["cuMemHostAlloc"], "the run reserves the staging ring, off the clock")
				assert.GreaterOrEqual(t, onClock["cuMemcpyHtoDAsync_v2"], chunks, "the uploads through the ring, on the clock")
				assert.GreaterOrEqual(t, onClock["cuMemcpyDtoHAsync_v2"], chunks, "the downloads through the ring, on the clock")
				return
			}
			assert.Equal(t, int64(2), all["cuMemHostRegister_v2"], "the run page-locks the sinograms and the volume, off the clock")
			assert.Equal(t, chunks, onClock["cuMemcpyHtoDAsync_v2"], "one upload a chunk, queued on a stream, on the clock")
			assert.Equal(t, chunks, onClock["cuMemcpyDtoHAsync_v2"], "one download a chunk, queued on a stream, on the clock")
			assert.Equal(t, chunks, firstChunk["cuMemcpyHtoDAsync_v2"], "every chunk's upload queued when the first chunk is reported done")
			assert.Equal(t, chunks, firstChunk["cuMemcpyDtoHAsync_v2"], "every chunk's download queued when the first chunk is reported done")
		})
	}
}
