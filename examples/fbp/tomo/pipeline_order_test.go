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

// pipelineCase is a geometry, a count of streams and of chunks at least
// that the pipeline tests run; faults runs failEach on it too.
type pipelineCase struct {
	g         tomo.Geometry
	streams   int
	minChunks int
	faults    bool
}

func (c pipelineCase) String() string {
	return fmt.Sprintf("%v/%d streams/%d chunks at least", c.g, c.streams, c.minChunks)
}

// subPageSlices is a geometry whose slices' sinograms are 256 B each
// (8 angles of 8 detectors, float32): several chunks share a page of the
// caller's memory, and with a chunk a slice, pieces of one page are in
// flight on several streams at once.
var subPageSlices = tomo.Geometry{Size: 8, Angles: 8, Slices: 6}

// orderedCases are the corners that TestPipelineOrderedByEvents's random
// draw (Size 8 to 27, Angles 4 to 23, Slices 3 to 22, 2 to MaxStreams
// streams, 0 to Slices+2 chunks at least) can reach: the smallest
// geometry, pieces below a page on every stream count, uneven chunks, more
// chunks than slots, more streams than slices, and the largest draw.
func orderedCases() []pipelineCase {
	cases := []pipelineCase{
		{tomo.Geometry{Size: 8, Angles: 4, Slices: 3}, 2, 0, true},
		{tomo.Geometry{Size: 8, Angles: 4, Slices: 3}, tomo.MaxStreams, 5, false},
		{tomo.Geometry{Size: 8, Angles: 8, Slices: 7}, 3, 3, true},
		{tomo.Geometry{Size: 9, Angles: 5, Slices: 21}, 2, 16, false},
		{tomo.Geometry{Size: 27, Angles: 23, Slices: 22}, tomo.MaxStreams, 24, false},
	}
	for s := 2; s <= tomo.MaxStreams; s++ {
		cases = append(cases, pipelineCase{subPageSlices, s, subPageSlices.Slices, s == 3 || s == tomo.MaxStreams})
	}
	return cases
}

// TestPipelineOrderedByEvents: the event-ordered run (the transfer path
// left to choose: the host's arrays page-locked, every chunk queued at
// once), on the corners of orderedCases and on one random draw (its seed
// in the log of a failure), passes the stream race checker and gives the
// unpipelined run's bits; with each allocation and each copy failing in
// turn (chunks after the failing one queued already) it fails cleanly
// (failEach).
func TestPipelineOrderedByEvents(t *testing.T) {
	r := rand.For(t)
	g := tomo.Geometry{Size: 8 + r.IntN(20), Angles: 4 + r.IntN(20), Slices: 3 + r.IntN(20)}
	drawn := pipelineCase{g, 2 + r.IntN(tomo.MaxStreams-1), r.IntN(g.Slices + 3), true}
	for _, tc := range append(orderedCases(), drawn) {
		t.Run(tc.String(), func(t *testing.T) {
			g, opt := tc.g, tomo.Options{Streams: tc.streams, MinChunks: tc.minChunks}
			sino := randomSinograms(g)
			want, err := tomo.ReconstructWith(openSim(t, "", g, 1, 1), g, sino, tomo.Resident, tomo.Options{Streams: 1})
			require.NoError(t, err)
			dev := openSim(t, orderedSpec, g, 1+r.IntN(2), tc.streams)
			got, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
			require.NoError(t, err)
			require.Empty(t, got.NotPageLocked, "the host's arrays page-locked: the event-ordered run")
			assert.Equal(t, want.Volume, got.Volume, "the unpipelined run's bits")
			if tc.faults {
				failEach(t, g, tc.streams, int(got.Traffic.DeviceAllocs), int(got.Traffic.HtoDCopies+got.Traffic.DtoHCopies), want.Volume,
					func(*testing.T, device.Device) []float32 { return sino }, opt)
			}
		})
	}
}

// hostDrivenCases are the corners that TestPipelineHostDrivenFailsCleanly's
// random draw (Size 8 to 23, Angles 4 to 19, Slices 5 to 14, 2 to 4
// streams) can reach, and pieces below a page on every stream count up to
// MaxStreams: the registered path's chunks then share the pages of the
// caller's memory while several are in flight.
func hostDrivenCases() []pipelineCase {
	cases := []pipelineCase{
		{tomo.Geometry{Size: 8, Angles: 4, Slices: 5}, 2, 0, true},
		{tomo.Geometry{Size: 8, Angles: 8, Slices: 7}, 3, 0, true},
		{tomo.Geometry{Size: 23, Angles: 19, Slices: 14}, 4, 0, false},
	}
	for s := 2; s <= tomo.MaxStreams; s++ {
		cases = append(cases, pipelineCase{subPageSlices, s, 0, s == 3})
	}
	return cases
}

// TestPipelineHostDrivenFailsCleanly: the host-driven run, on each path
// asked for and on the fallback of a run whose sinograms the caller holds
// page-locked, on the corners of hostDrivenCases and on one random draw
// (its seed in the log of a failure), passes the stream race checker with
// the unpipelined run's bits, and fails cleanly with each allocation and
// copy failing in turn (failEach).
func TestPipelineHostDrivenFailsCleanly(t *testing.T) {
	r := rand.For(t)
	g := tomo.Geometry{Size: 8 + r.IntN(16), Angles: 4 + r.IntN(16), Slices: 5 + r.IntN(10)}
	cases := append(hostDrivenCases(), pipelineCase{g, 2 + r.IntN(3), 0, true})
	for _, path := range []struct {
		path   transfer.Path
		locked bool // the sinograms in the caller's pinned buffer
	}{{transfer.PathDirect, false}, {transfer.PathRegistered, false}, {transfer.PathAuto, true}} {
		for _, tc := range cases {
			g, opt := tc.g, tomo.Options{Streams: tc.streams, Path: path.path}
			sino := randomSinograms(g)
			setup := func(t *testing.T, dev device.Device) []float32 {
				if !path.locked {
					return sino
				}
				buf, err := pinned.Alloc(dev, int64(4*len(sino)), 0)
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, buf.Free()) })
				locked := pinned.Slice[float32](buf)
				copy(locked, sino)
				return locked
			}
			t.Run(fmt.Sprintf("%v/locked %v/%v/%d streams", path.path, path.locked, g, tc.streams), func(t *testing.T) {
				want, err := tomo.ReconstructWith(openSim(t, "", g, 1, 1), g, sino, tomo.Resident, tomo.Options{Streams: 1})
				require.NoError(t, err)
				dev := openSim(t, orderedSpec, g, 1, tc.streams)
				got, err := tomo.ReconstructWith(dev, g, setup(t, dev), tomo.Resident, opt)
				require.NoError(t, err)
				assert.Equal(t, path.locked, got.NotPageLocked != "", "host-driven: %q", got.NotPageLocked)
				assert.Equal(t, want.Volume, got.Volume, "the unpipelined run's bits")
				if path.path == transfer.PathRegistered {
					s := dev.Ledger().Snapshot()
					regs := s.Copies[accounting.HtoD][accounting.PathRegistered].Count + s.Copies[accounting.DtoH][accounting.PathRegistered].Count
					assert.Positive(t, regs)
					assert.Equal(t, s.Kinds[accounting.Registered].Allocs, regs, "the ledger shows one registration per range registered")
					staged := accounting.PathStaged.String()
					assert.Zero(t, got.Traffic.HtoDByPath[staged]+got.Traffic.DtoHByPath[staged], "chunks apart in bytes take no staged fallback")
				}
				if tc.faults {
					failEach(t, g, tc.streams, int(got.Traffic.DeviceAllocs), int(got.Traffic.HtoDCopies+got.Traffic.DtoHCopies), want.Volume, setup, opt)
				}
			})
		}
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
