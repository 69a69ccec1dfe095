package tomo_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// faultable is a sim device whose nth allocation or copy from now fails
// with driver.ErrInjected.
type faultable interface {
	FailAlloc(n int64)
	FailCopy(n int64)
}

// orderedSpec is a sim device whose stream operations complete 1 ms late
// and whose stream race checker judges each of them by CUDA's ordering
// rules: a wait left out between a slot's chunks (an upload before the
// kernels of the chunk before are done, kernels before its download has
// read the images), or memory let go while a copy uses it, fails the run
// with driver.ErrStreamRace whatever the timing.
const orderedSpec = "&latency=1ms&check=streams"

// failEach runs the reconstruction of opt on a fresh checked device with
// its nth allocation, then its nth copy, failing, for every n up to allocs
// and copies: each run fails with the injected error (or, a workspace that
// could not grow, gives the same bits), never with a stream race, and
// leaves the device, page-locked and registered memory as it found them.
// setup makes on the device, before the failure is armed, the sinograms
// the run takes (what it makes freed on the t it is given).
func failEach(t *testing.T, g tomo.Geometry, streams, allocs, copies int, want []float32, setup func(*testing.T, device.Device) []float32, opt tomo.Options) {
	t.Helper()
	for _, kind := range []struct {
		name string
		n    int
	}{{"fail-alloc", allocs}, {"fail-copy", copies}} {
		for n := 1; n <= kind.n; n++ {
			dev := openSim(t, orderedSpec, g, 1, streams)
			sino := setup(t, dev)
			before := map[accounting.Kind]int64{}
			for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Registered} {
				before[k] = dev.Ledger().Current(k)
			}
			f := dev.(faultable)
			if kind.name == "fail-alloc" {
				f.FailAlloc(int64(n))
			} else {
				f.FailCopy(int64(n))
			}
			res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
			if err != nil {
				assert.NotErrorIs(t, err, driver.ErrStreamRace, "%s=%d", kind.name, n)
				assert.True(t, errors.Is(err, driver.ErrInjected) || errors.Is(err, accounting.ErrOutOfMemory), "%s=%d: %v", kind.name, n, err)
			} else {
				assert.Equal(t, want, res.Volume, "%s=%d: the run went on, with the same bits", kind.name, n)
			}
			for k, b := range before {
				assert.Equal(t, b, dev.Ledger().Current(k), "%s=%d: %v memory after the run", kind.name, n, k)
			}
		}
	}
}

// TestPipelineOrderedByEvents: the event-ordered run (the transfer path
// left to choose: the host's arrays page-locked, every chunk queued at
// once) on random geometries, 2 to 8 chunks in flight and random chunk
// counts (uneven chunks, more chunks than slots), passes the stream race
// checker and gives the unpipelined run's bits; with each allocation and
// each copy failing in turn (chunks after the failing one queued already)
// it fails cleanly (failEach).
func TestPipelineOrderedByEvents(t *testing.T) {
	for range 4 {
		g := tomo.Geometry{Size: 8 + rand.IntN(20), Angles: 4 + rand.IntN(20), Slices: 3 + rand.IntN(20)}
		streams := 2 + rand.IntN(tomo.MaxStreams-1)
		opt := tomo.Options{Streams: streams, MinChunks: rand.IntN(g.Slices + 3)}
		sino := randomSinograms(g)
		t.Run(fmt.Sprintf("%v/%d streams/%d chunks at least", g, streams, opt.MinChunks), func(t *testing.T) {
			want, err := tomo.ReconstructWith(openSim(t, "", g, 1, 1), g, sino, tomo.Resident, tomo.Options{Streams: 1})
			require.NoError(t, err)
			dev := openSim(t, orderedSpec, g, 1+rand.IntN(2), streams)
			got, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
			require.NoError(t, err)
			require.Empty(t, got.NotPageLocked, "the host's arrays page-locked: the event-ordered run")
			assert.Equal(t, want.Volume, got.Volume, "the unpipelined run's bits")
			failEach(t, g, streams, int(got.Traffic.DeviceAllocs), int(got.Traffic.HtoDCopies+got.Traffic.DtoHCopies), want.Volume,
				func(*testing.T, device.Device) []float32 { return sino }, opt)
		})
	}
}

// TestPipelineHostDrivenFailsCleanly: the host-driven run, on each path
// asked for and on the fallback of a run whose sinograms the caller holds
// page-locked, passes the stream race checker with the unpipelined run's
// bits, and fails cleanly with each allocation and copy failing in turn
// (failEach).
func TestPipelineHostDrivenFailsCleanly(t *testing.T) {
	for _, tc := range []struct {
		path   transfer.Path
		locked bool // the sinograms in the caller's pinned buffer
	}{{transfer.PathDirect, false}, {transfer.PathRegistered, false}, {transfer.PathAuto, true}} {
		g := tomo.Geometry{Size: 8 + rand.IntN(16), Angles: 4 + rand.IntN(16), Slices: 5 + rand.IntN(10)}
		streams := 2 + rand.IntN(3)
		opt := tomo.Options{Streams: streams, Path: tc.path}
		sino := randomSinograms(g)
		setup := func(t *testing.T, dev device.Device) []float32 {
			if !tc.locked {
				return sino
			}
			buf, err := pinned.Alloc(dev, int64(4*len(sino)), 0)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, buf.Free()) })
			locked := pinned.Slice[float32](buf)
			copy(locked, sino)
			return locked
		}
		t.Run(fmt.Sprintf("%v/locked %v/%v/%d streams", tc.path, tc.locked, g, streams), func(t *testing.T) {
			want, err := tomo.ReconstructWith(openSim(t, "", g, 1, 1), g, sino, tomo.Resident, tomo.Options{Streams: 1})
			require.NoError(t, err)
			dev := openSim(t, orderedSpec, g, 1, streams)
			got, err := tomo.ReconstructWith(dev, g, setup(t, dev), tomo.Resident, opt)
			require.NoError(t, err)
			assert.Equal(t, tc.locked, got.NotPageLocked != "", "host-driven: %q", got.NotPageLocked)
			assert.Equal(t, want.Volume, got.Volume, "the unpipelined run's bits")
			failEach(t, g, streams, int(got.Traffic.DeviceAllocs), int(got.Traffic.HtoDCopies+got.Traffic.DtoHCopies), want.Volume, setup, opt)
		})
	}
}

// TestPipelineClockStopsAfterDownloads: when a pipelined run's clock stops
// (Result.Seconds), every chunk's images are in the volume already, on a
// device whose stream operations complete 3 ms late: a clock that stopped
// before the last download completed, the downloads waited for after it,
// would see a volume not yet whole.
func TestPipelineClockStopsAfterDownloads(t *testing.T) {
	g := tomo.Geometry{Size: 8 + rand.IntN(16), Angles: 4 + rand.IntN(16), Slices: 6 + rand.IntN(10)}
	sino := randomSinograms(g)
	want, err := tomo.ReconstructWith(openSim(t, "", g, 1, 1), g, sino, tomo.Resident, tomo.Options{Streams: 1})
	require.NoError(t, err)
	for _, tc := range clockRuns {
		t.Run(fmt.Sprintf("%d/%v", tc.streams, tc.path), func(t *testing.T) {
			var atStop []float32
			restore := tomo.OnClock(func(running bool, res *tomo.Result) {
				if !running {
					atStop = slices.Clone(res.Volume)
				}
			})
			defer restore()
			dev := openSim(t, "&latency=3ms&check=streams", g, 1, tc.streams)
			got, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: tc.streams, Path: tc.path})
			require.NoError(t, err)
			assert.Equal(t, want.Volume, atStop, "the volume when the clock stops")
			assert.Equal(t, want.Volume, got.Volume)
		})
	}
}
