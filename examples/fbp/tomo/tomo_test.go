package tomo_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
)

// TestRMSEBound is the quality bound, relative RMSE ≤ 0.15 at
// size 256 with 360 angles, on the middle slices of the phantom (two, so
// that the test stays short on sim); and a bound at a small size, where
// the edges' blur weighs more (0.25 measured).
func TestRMSEBound(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		g     tomo.Geometry
		bound float64
	}{
		{tomo.Geometry{Size: 256, Angles: 360, Slices: 2}, 0.15},
		{tomo.Geometry{Size: 64, Angles: 90, Slices: 8}, 0.27},
	} {
		scan, err := tomo.Acquire(dev, tc.g, nil)
		require.NoError(t, err)
		res, err := tomo.Reconstruct(dev, tc.g, scan.Sinograms, tomo.Resident, nil)
		require.NoError(t, err)
		rmse, err := tomo.RelativeRMSE(res.Volume, scan.Phantom)
		require.NoError(t, err)
		t.Logf("%v: relative RMSE %.4f (bound %.2f), %.2f s", tc.g, rmse, tc.bound, res.Seconds)
		assert.LessOrEqual(t, rmse, tc.bound, "%v", tc.g)
		assert.Greater(t, rmse, 0.0, "a reconstruction is not the phantom itself")
	}
}

// limited opens the test device with a limit that leaves room for a
// quarter of the geometry's slices in each of the DefaultStreams chunks a
// resident run keeps in flight (as the estimator counts them), so that the
// plans make chunks.
func limited(t *testing.T, g tomo.Geometry) device.Device {
	dev := testdev.Open(t)
	require.NoError(t, dev.Ledger().SetLimit(accounting.Device, limitFor(t, dev, g)))
	return dev
}

func limitFor(t *testing.T, dev device.Device, g tomo.Geometry) int64 {
	return limitForChunks(t, dev, g, (g.Slices+3)/4, tomo.DefaultStreams)
}

// limitForChunks is the smallest device limit, above what dev holds now,
// under which a plan for streams chunks in flight takes want slices a chunk.
func limitForChunks(t *testing.T, dev device.Device, g tomo.Geometry, want, streams int) int64 {
	other := [2]int{g.Angles, g.Detectors()}
	fits := func(avail int64) bool {
		s, _, err := kernels.ReconstructMethod.MaxSlices(0, other, tomo.DType, avail/int64(streams), plan.Params{"size": g.Size})
		require.NoError(t, err)
		return s >= want
	}
	lo, hi := int64(0), int64(1)<<40
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return dev.Ledger().Current(accounting.Device) + int64(math.Ceil(float64(hi)*dev.Ledger().Overhead()))
}

// TestModesAgree: resident, pipelined (the default) or not, and staged give
// the same volume, bit for bit, on random sinograms (fresh each run) and
// on a scan, in several chunks (not the same ones: a pipelined plan gives
// each chunk in flight a share of the memory).
func TestModesAgree(t *testing.T) {
	g := tomo.Geometry{Size: 40, Angles: 30, Slices: 13}
	dev := limited(t, g)
	scan, err := tomo.Acquire(dev, g, nil)
	require.NoError(t, err)
	random := make([]float32, len(scan.Sinograms))
	for i := range random {
		random[i] = rand.Float32()*10 - 2
	}
	for name, sino := range map[string][]float32{"scan": scan.Sinograms, "random": random} {
		res, err := tomo.Reconstruct(dev, g, sino, tomo.Resident, nil)
		require.NoError(t, err, name)
		assert.Equal(t, tomo.DefaultStreams, res.Streams, name)
		assert.Greater(t, len(res.Plan.Chunks), 2, "%s: the limit makes chunks", name)
		assert.NotEqual(t, make([]float32, len(res.Volume)), res.Volume, "%s: not all zeros", name)
		for _, other := range []struct {
			mode    tomo.Mode
			streams int
		}{{tomo.Resident, 1}, {tomo.Resident, 3}, {tomo.Staged, 0}} {
			o, err := tomo.ReconstructWith(dev, g, sino, other.mode, tomo.Options{Streams: other.streams})
			require.NoError(t, err, "%s: %v", name, other)
			assert.Equal(t, res.Volume, o.Volume, "%s: %v gives the pipelined run's bits", name, other)
			assert.Equal(t, max(other.streams, 1), o.Streams, name)
		}
	}
}

// TestTraffic holds each mode's ledger to the bytes the issue promises:
// resident moves exactly the sinograms up and the volume down; staged
// moves each step's input up and its output down, 2× the sinograms up,
// and more than 2× resident's bytes in all. Both leave the device as they
// found it, and stay within the limit.
func TestTraffic(t *testing.T) {
	g := tomo.Geometry{Size: 32, Angles: 48, Slices: 10}
	dev := limited(t, g)
	scan, err := tomo.Acquire(dev, g, nil)
	require.NoError(t, err)
	assert.Equal(t, g.VolumeBytes()+g.SinogramBytes(), scan.Traffic.DtoH, "acquisition downloads phantom and sinograms")
	assert.Zero(t, scan.Traffic.HtoD, "the phantom is made on the device: nothing goes up")

	runs := map[string]*tomo.Result{}
	for _, run := range []struct {
		mode    tomo.Mode
		streams int
	}{{tomo.Resident, 0}, {tomo.Resident, 1}, {tomo.Staged, 0}} {
		mode := run.mode
		name := fmt.Sprintf("%s/%d", mode, run.streams)
		var calls, last int
		res, err := tomo.ReconstructWith(dev, g, scan.Sinograms, mode, tomo.Options{Streams: run.streams, Progress: func(stage string, done, total int) {
			assert.Equal(t, string(mode), stage)
			assert.Greater(t, done, last)
			assert.Equal(t, g.Slices, total)
			calls, last = calls+1, done
		}})
		require.NoError(t, err, name)
		runs[name] = res
		chunks := int64(len(res.Plan.Chunks))
		assert.Equal(t, int(chunks), calls, "%s: progress after each chunk", name)
		assert.Equal(t, g.Slices, last, name)
		tr := res.Traffic
		switch mode {
		case tomo.Resident:
			assert.Equal(t, g.SinogramBytes(), tr.HtoD, "resident: only the input goes up")
			assert.Equal(t, g.VolumeBytes(), tr.DtoH, "resident: only the result comes down")
			assert.Equal(t, chunks, tr.HtoDCopies)
			assert.Equal(t, chunks, tr.DtoHCopies)
		case tomo.Staged:
			assert.Equal(t, 2*g.SinogramBytes(), tr.HtoD, "staged: each of the two steps uploads its input")
			assert.Equal(t, g.SinogramBytes()+g.VolumeBytes(), tr.DtoH, "staged: each step downloads its output")
			assert.Equal(t, 2*chunks, tr.HtoDCopies)
			assert.Equal(t, 2*chunks, tr.DtoHCopies)
		}
		assert.Zero(t, tr.DeviceCurrent, "%s frees all it allocates", name)
		assert.LessOrEqual(t, tr.DevicePeak, dev.Ledger().Limit(accounting.Device), name)
		assert.Positive(t, tr.DevicePeak, name)
	}
	pipelined, unpipelined := runs["resident/0"], runs["resident/1"]
	// The same bytes; the pipelined run's async copies of pageable memory
	// go through the staged ring, never the driver's direct path, which
	// would wait for the device.
	assert.Equal(t, unpipelined.Traffic.HtoD, pipelined.Traffic.HtoD, "the pipelined run moves what the unpipelined one does")
	assert.Equal(t, unpipelined.Traffic.DtoH, pipelined.Traffic.DtoH)
	assert.Zero(t, pipelined.Traffic.HtoDByPath["direct"], "no async copy hands pageable memory to the driver")
	assert.Zero(t, pipelined.Traffic.DtoHByPath["direct"], "no async copy hands pageable memory to the driver")
	assert.Positive(t, pipelined.KernelSeconds, "the pipelined run times its kernels")
	assert.LessOrEqual(t, pipelined.KernelSeconds, pipelined.Seconds, "kernels within the run")
	assert.GreaterOrEqual(t, runs["staged/0"].Traffic.Crossed(), 2*unpipelined.Traffic.Crossed(),
		"staged moves at least twice resident's bytes across host↔device")
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}

// TestFailureFreesEverything fails each allocation of a run in turn. The
// run either fails, or (when the one that failed was the ramp filter's
// workspace growing) recovers with the slower filter and the same volume;
// either way the device holds nothing after it.
func TestFailureFreesEverything(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 12, Slices: 6}
	open := func(failAlloc int) device.Device {
		d, err := device.Open(fmt.Sprintf("sim:0?mem=64MiB&fail-alloc=%d", failAlloc))
		require.NoError(t, err)
		require.NoError(t, d.Ledger().SetLimit(accounting.Device, limitFor(t, d, g)))
		return d
	}
	d := open(0)
	scan, err := tomo.Acquire(d, g, nil)
	require.NoError(t, err)
	acquireAllocs := int(scan.Traffic.DeviceAllocs)
	for _, mode := range tomo.Modes {
		want, err := tomo.Reconstruct(d, g, scan.Sinograms, mode, nil)
		require.NoError(t, err)
		allocs := int(want.Traffic.DeviceAllocs)
		require.Greater(t, allocs, 3, "%s: several chunks", mode)
		failed := 0
		for n := 1; n <= allocs; n++ {
			d := open(n)
			res, err := tomo.Reconstruct(d, g, scan.Sinograms, mode, nil)
			if err != nil {
				failed++
				// A device allocation fails out of memory; the staging ring's
				// page-locked one with the injected fault itself.
				assert.True(t, errors.Is(err, accounting.ErrOutOfMemory) || errors.Is(err, device.ErrInjected), "%s: allocation %d: %v", mode, n, err)
			} else {
				assert.True(t, res.Degraded, "%s: allocation %d failed and the run went on: only the filter's workspace may", mode, n)
				assert.Equal(t, want.Volume, res.Volume, "%s: allocation %d: the slower filter gives the same bits", mode, n)
			}
			assert.Zero(t, d.Ledger().Current(accounting.Device), "%s: allocation %d failed: nothing left", mode, n)
			require.NoError(t, d.Close())
		}
		assert.Greater(t, failed, allocs/2, "%s: most allocations cannot be done without", mode)
	}
	for n := 1; n <= acquireAllocs; n++ {
		d := open(n)
		_, err := tomo.Acquire(d, g, nil)
		assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "acquire: allocation %d", n)
		assert.Zero(t, d.Ledger().Current(accounting.Device), "acquire: allocation %d failed: nothing left", n)
		require.NoError(t, d.Close())
	}
	require.NoError(t, d.Close())
}

func TestBadInput(t *testing.T) {
	dev := testdev.Open(t)
	g := tomo.Geometry{Size: 8, Angles: 4, Slices: 2}
	_, err := tomo.Acquire(dev, tomo.Geometry{Size: 0, Angles: 4, Slices: 2}, nil)
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = tomo.Acquire(dev, tomo.Geometry{Size: 8, Angles: -1, Slices: 2}, nil)
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = tomo.Reconstruct(dev, g, make([]float32, 10), tomo.Resident, nil)
	assert.ErrorIs(t, err, devarray.ErrShape, "wrong number of sinogram values")
	_, err = tomo.Reconstruct(dev, g, make([]float32, 2*4*8), "both", nil)
	assert.ErrorContains(t, err, "want resident or staged")
	_, err = tomo.ParseMode("Resident")
	assert.Error(t, err)
	_, err = tomo.RelativeRMSE([]float32{1}, []float32{1, 2})
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = tomo.RelativeRMSE([]float32{1}, []float32{0})
	assert.ErrorIs(t, err, devarray.ErrShape)

	require.NoError(t, dev.Ledger().SetLimit(accounting.Device, dev.Ledger().Current(accounting.Device)+1024))
	_, err = tomo.Reconstruct(dev, tomo.Geometry{Size: 64, Angles: 64, Slices: 2}, make([]float32, 2*64*64), tomo.Resident, nil)
	assert.ErrorIs(t, err, plan.ErrTooLarge, "not one slice fits in 1 KiB")
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}
