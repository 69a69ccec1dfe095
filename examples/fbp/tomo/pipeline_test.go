package tomo_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// randomSinograms are fresh random sinograms for g, never zeros.
func randomSinograms(g tomo.Geometry) []float32 {
	s := make([]float32, g.Slices*g.Angles*g.Detectors())
	for i := range s {
		s[i] = rand.Float32()*8 - 3
	}
	return s
}

// openSim opens a sim device with the given options and a limit that
// leaves room for want slices in each of streams chunks in flight.
func openSim(t *testing.T, opts string, g tomo.Geometry, want, streams int) device.Device {
	t.Helper()
	dev, err := device.Open("sim:0?mem=64MiB" + opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, dev.Close()) })
	require.NoError(t, dev.Ledger().SetLimit(accounting.Device, limitForChunks(t, dev, g, want, streams)))
	return dev
}

// TestPipelineWithLatency: on a sim device whose every stream operation
// completes 2 ms after it is queued (as on a GPU, where "queued" is not
// "done"), the pipelined run gives the unpipelined run's and staged mode's
// bits: a wait left out (for an upload before the kernels, for a slot's
// download before its buffers take the next chunk, for the downloads
// before the volume is returned) would show as wrong or missing images.
func TestPipelineWithLatency(t *testing.T) {
	g := tomo.Geometry{Size: 24, Angles: 20, Slices: 11}
	sino := randomSinograms(g)
	plain := openSim(t, "", g, 2, tomo.DefaultStreams)
	want, err := tomo.ReconstructWith(plain, g, sino, tomo.Resident, tomo.Options{Streams: 1})
	require.NoError(t, err)
	for _, tc := range []struct {
		streams int
		path    transfer.Path
	}{{2, transfer.PathAuto}, {3, transfer.PathAuto}, {2, transfer.PathDirect}, {2, transfer.PathStaged}, {3, transfer.PathStaged}} {
		streams := tc.streams
		t.Run(fmt.Sprintf("%d/%v", streams, tc.path), func(t *testing.T) {
			dev := openSim(t, "&latency=2ms", g, 2, streams)
			last := 0
			got, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: streams, Path: tc.path, Progress: func(_ string, done, _ int) {
				assert.Greater(t, done, last, "chunks finish in order")
				last = done
			}})
			require.NoError(t, err)
			assert.Equal(t, want.Volume, got.Volume, "%d streams under latency: the unpipelined run's bits", streams)
			assert.Equal(t, g.Slices, last)
			assert.Greater(t, len(got.Plan.Chunks), streams, "more chunks than streams: slots are reused")
			assert.Equal(t, want.Traffic.HtoD, got.Traffic.HtoD)
			assert.Equal(t, want.Traffic.DtoH, got.Traffic.DtoH)
			assert.Zero(t, got.Traffic.DeviceCurrent)
			assert.Zero(t, dev.Ledger().Current(accounting.Device))
			assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
			if tc.path != transfer.PathAuto {
				assert.Equal(t, map[string]int64{tc.path.String(): g.SinogramBytes()}, got.Traffic.HtoDByPath, "the copies took the path asked for")
			}
			staged, err := tomo.Reconstruct(dev, g, sino, tomo.Staged, nil)
			require.NoError(t, err)
			assert.Equal(t, staged.Volume, got.Volume, "staged mode's bits")
		})
	}
}

// TestPipelineFailsCleanly fails, in a pipelined run under latency, each
// allocation and each copy in turn (a copy failing half-way through the
// chunks, with others in flight). The run fails with the injected error, or
// (a workspace that could not grow) recovers with the slower filter and
// the same bits; either way no device or page-locked memory is left, and
// the device still works.
func TestPipelineFailsCleanly(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 12, Slices: 9}
	sino := randomSinograms(g)
	for _, path := range []transfer.Path{transfer.PathAuto, transfer.PathStaged} {
		opt := tomo.Options{Path: path}
		base := openSim(t, "&latency=1ms", g, 2, tomo.DefaultStreams)
		want, err := tomo.ReconstructWith(base, g, sino, tomo.Resident, opt)
		require.NoError(t, err)
		require.Greater(t, len(want.Plan.Chunks), 3)
		copies := int(want.Traffic.HtoDCopies + want.Traffic.DtoHCopies)
		allocs := int(want.Traffic.DeviceAllocs)
		for _, kind := range []struct {
			opt string
			n   int
		}{{"fail-alloc", allocs}, {"fail-copy", copies}} {
			failed := 0
			for n := 1; n <= kind.n; n++ {
				dev := openSim(t, fmt.Sprintf("&latency=1ms&%s=%d", kind.opt, n), g, 2, tomo.DefaultStreams)
				res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
				if err != nil {
					failed++
					assert.True(t, errors.Is(err, driver.ErrInjected) || errors.Is(err, accounting.ErrOutOfMemory), "%v %s=%d: %v", path, kind.opt, n, err)
				} else {
					assert.True(t, res.Degraded, "%v %s=%d: the run went on: only the filter's workspace may fail", path, kind.opt, n)
					assert.Equal(t, want.Volume, res.Volume, "%v %s=%d: the same bits", path, kind.opt, n)
				}
				assert.Zero(t, dev.Ledger().Current(accounting.Device), "%v %s=%d: nothing left on the device", path, kind.opt, n)
				assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "%v %s=%d: nothing left pinned", path, kind.opt, n)
				// the device still works: the same run without a failure
				again, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
				require.NoError(t, err, "%v %s=%d: a run after the failure", path, kind.opt, n)
				assert.Equal(t, want.Volume, again.Volume)
			}
			t.Logf("%v %s: %d of %d runs failed", path, kind.opt, failed, kind.n)
			assert.Greater(t, failed, kind.n/2, "%v %s: most failures fail the run", path, kind.opt)
		}
	}
}

// TestPipelinePlanPeak: with the device limit set to what the plan counts
// for two chunks in flight of a given size, the pipelined run makes chunks
// of that size and its peak (the ledger's) stays within the limit, and
// takes most of it: the plan counts what the run holds.
func TestPipelinePlanPeak(t *testing.T) {
	for _, tc := range []struct {
		g    tomo.Geometry
		want int
	}{
		{tomo.Geometry{Size: 32, Angles: 40, Slices: 12}, 3},
		{tomo.Geometry{Size: 48, Angles: 17, Slices: 7}, 2},
		{tomo.Geometry{Size: 20, Angles: 64, Slices: 10}, 1},
	} {
		t.Run(tc.g.String(), func(t *testing.T) {
			dev := openSim(t, "&latency=500us", tc.g, tc.want, 2)
			limit := dev.Ledger().Limit(accounting.Device)
			res, err := tomo.ReconstructWith(dev, tc.g, randomSinograms(tc.g), tomo.Resident, tomo.Options{Streams: 2, MinChunks: 1})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Plan.MaxSlices, "the plan takes the slices the limit was set for")
			assert.LessOrEqual(t, res.Traffic.DevicePeak, limit, "the peak stays within the limit")
			// what two chunks of tc.want slices need, as the method counts it
			other := [2]int{tc.g.Angles, tc.g.Detectors()}
			lo, hi := int64(0), int64(1)<<40
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				s, _, err := kernels.ReconstructMethod.MaxSlices(0, other, tomo.DType, mid, plan.Params{"size": tc.g.Size})
				require.NoError(t, err)
				if s >= tc.want {
					hi = mid
				} else {
					lo = mid
				}
			}
			t.Logf("peak %d bytes, two chunks counted %d, limit %d", res.Traffic.DevicePeak, 2*hi, limit)
			assert.LessOrEqual(t, res.Traffic.DevicePeak, 2*hi, "the run holds no more than the plan counts")
			assert.GreaterOrEqual(t, float64(res.Traffic.DevicePeak), 0.8*float64(2*hi), "the plan counts what the run holds, within 80-100%")
			assert.Zero(t, res.Traffic.DeviceCurrent)
		})
	}
}

// TestMinChunks: a pipelined run is cut into at least MinChunks chunks
// (ChunksPerStream per stream by default), never more than the slices, even
// where one chunk would fit; the bits stay the same.
func TestMinChunks(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 10, Slices: 11}
	dev := testdev.Open(t)
	sino := randomSinograms(g)
	want, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: 1})
	require.NoError(t, err)
	require.Len(t, want.Plan.Chunks, 1, "it all fits at once")
	for _, tc := range []struct{ streams, min, chunks int }{
		{2, 0, 8}, {3, 0, 11}, {2, 1, 1}, {2, 5, 5}, {2, 40, 11},
	} {
		res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: tc.streams, MinChunks: tc.min})
		require.NoError(t, err, "%+v", tc)
		require.Len(t, res.Plan.Chunks, tc.chunks, "%+v", tc)
		covered := 0
		for _, ch := range res.Plan.Chunks {
			assert.Equal(t, covered, ch.Start)
			assert.LessOrEqual(t, ch.Len, (g.Slices+tc.chunks-1)/tc.chunks, "as even as can be")
			covered += ch.Len
		}
		assert.Equal(t, g.Slices, covered)
		assert.Equal(t, want.Volume, res.Volume, "%+v: the same bits", tc)
	}
	_, err = tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{MinChunks: -1})
	assert.ErrorIs(t, err, accounting.ErrInvalidArgument)
}

func TestBadStreams(t *testing.T) {
	g := tomo.Geometry{Size: 8, Angles: 4, Slices: 2}
	dev := openSim(t, "", g, 1, 1)
	for _, n := range []int{-1, tomo.MaxStreams + 1} {
		_, err := tomo.ReconstructWith(dev, g, randomSinograms(g), tomo.Resident, tomo.Options{Streams: n})
		assert.ErrorIs(t, err, accounting.ErrInvalidArgument, "%d streams", n)
	}
	res, err := tomo.ReconstructWith(dev, g, randomSinograms(g), tomo.Staged, tomo.Options{Streams: 4})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Streams, "staged runs one chunk at a time")
	assert.Zero(t, res.KernelSeconds, "not measured unpipelined")
}

// linkedSim is a sim device with a modelled host link and latency, on
// which copies take time without taking the CPU, as a GPU's DMA does,
// while sim's kernels (Go on the CPU) take the CPU. The link is slow
// (pinned 0.1 GB/s, pageable 0.05 GB/s) so that, at a size sim's kernels
// run in a benchmark's time, the copies take about as long as the kernels,
// as at the FBP goal's size on an H100 (21 ms of copies beside 46–80 ms of
// kernels).
func linkedSim(b *testing.B, linked bool) *sim.Device {
	cfg := sim.Config{Memory: 256 << 20}
	if linked { // the link off has no latency either: its copies take what a memcpy takes
		cfg.Latency = 200 * time.Microsecond
		cfg.Link = &sim.Link{PinnedGBps: 0.1, PageableGBps: 0.05}
	}
	dev, err := sim.New(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, dev.Close()) })
	return dev
}

// BenchmarkPipelineOverlap reconstructs the same sinograms in 8 chunks,
// one chunk at a time (streams=1) and pipelined (streams=2), on a sim
// device whose host link is modelled (linkedSim): the ratio of their
// ns/op is what the pipeline saves there. On sim that is the copies
// overlapping the kernels, and also the two chunks' kernels (Go on the
// host's cores) overlapping each other, which on a GPU full of one chunk
// gains little: the link=off runs, copies at memory speed and no
// latency on any operation, show that part alone. Each also
// reports wall/kernels, the run's time over its kernels' (pipelined only:
// the goal on a GPU is at most 1.2). The chunk size is the same
// for both (a limit for 8 chunks of the pipelined plan, which the
// unpipelined run is given too).
func BenchmarkPipelineOverlap(b *testing.B) {
	g := tomo.Geometry{Size: 96, Angles: 120, Slices: 32}
	sino := randomSinograms(g)
	for _, tc := range []struct {
		link    bool
		streams int
	}{{true, 1}, {true, 2}, {false, 1}, {false, 2}} {
		streams := tc.streams
		link := map[bool]string{true: "on", false: "off"}[tc.link]
		b.Run(fmt.Sprintf("link=%s/streams=%d", link, streams), func(b *testing.B) {
			dev := linkedSim(b, tc.link)
			other := [2]int{g.Angles, g.Detectors()}
			// the same chunks for both: 4 slices, in memory for `streams` of them
			lo, hi := int64(0), int64(1)<<40
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				s, _, err := kernels.ReconstructMethod.MaxSlices(0, other, tomo.DType, mid, plan.Params{"size": g.Size})
				require.NoError(b, err)
				if s >= 4 {
					hi = mid
				} else {
					lo = mid
				}
			}
			limit := int64(math.Ceil(float64(hi*int64(streams)) * dev.Ledger().Overhead()))
			require.NoError(b, dev.Ledger().SetLimit(accounting.Device, limit))
			var res *tomo.Result
			for b.Loop() {
				var err error
				res, err = tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: streams})
				require.NoError(b, err)
			}
			require.Len(b, res.Plan.Chunks, 8)
			if res.KernelSeconds > 0 {
				b.ReportMetric(res.Seconds/res.KernelSeconds, "wall/kernels")
			}
		})
	}
}
