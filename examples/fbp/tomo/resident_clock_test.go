package tomo_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// clockRuns are the pipelined runs whose clock the tests below watch: the
// path left to choose (the host's arrays page-locked, every chunk ordered
// by events) and a path asked for, whose copies the host drives through
// the copier's staging ring (reserved before the clock).
var clockRuns = []struct {
	streams int
	path    transfer.Path
}{{2, transfer.PathAuto}, {3, transfer.PathAuto}, {2, transfer.PathStaged}}

// clockGeometry is a volume of 64 MiB (16384 pages of 4 KiB) in 128 chunks
// of 2 slices, 512 KiB of images each. The device's memory is host memory
// on sim and the emulated driver, whose pages a run's first write maps,
// where a GPU backs cuMemAlloc's memory at once: a first run on the same
// device maps them, and the chunks stay under 1 MiB, as sim gives a freed
// range of 1 MiB or more back to the system (Device.Free punches a hole in
// its memory file). One angle keeps the work of sim's kernels, and the Go
// memory they allocate for it, small beside the volume.
var clockGeometry = tomo.Geometry{Size: 256, Angles: 1, Slices: 256}

// clockOptions are the options of a run of clockRuns on clockGeometry.
func clockOptions(streams int, path transfer.Path) tomo.Options {
	return tomo.Options{Streams: streams, Path: path, MinChunks: 128}
}

// clockedRuns is how many runs TestResidentClockTakesNoVolumeFaults
// watches.
const clockedRuns = 3

// watchClock makes a first run of opt on g on a fresh test device and then
// runs more, calling start and stop as each one's clock starts and stops,
// and checks their volumes against the first run's and the ledger after
// them. Every volume is held to the end and the Go runtime's free
// memory is given back to the system before the first run, so that each
// run's volume is memory that no one has written: the first run maps
// again what the runtime takes back.
func watchClock(t *testing.T, g tomo.Geometry, opt tomo.Options, runs int, start func(res *tomo.Result), stop func()) {
	t.Helper()
	sino := randomSinograms(g)
	dev := testdev.Open(t)
	debug.FreeOSMemory()
	want, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
	require.NoError(t, err, "the first run")
	require.Less(t, int64(g.Slices/len(want.Plan.Chunks)+1)*g.SliceBytes(), int64(1<<20), "chunks under 1 MiB")
	clocked := 0
	restore := tomo.OnClock(func(running bool, res *tomo.Result) {
		if running {
			start(res)
			return
		}
		stop()
		clocked++
	})
	defer restore()
	held := []*tomo.Result{want}
	for run := range runs {
		runtime.GC() // the first run's garbage collected before the clock
		res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
		require.NoError(t, err, "run %d", run)
		require.Equal(t, run+1, clocked, "one clock a run")
		assert.Equal(t, want.Volume, res.Volume, "run %d: the first run's bits", run)
		assert.Zero(t, res.Traffic.DeviceCurrent, "run %d frees what it allocates", run)
		for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Registered} {
			assert.Zero(t, dev.Ledger().Current(k), "run %d: %v memory after it", run, k)
		}
		held = append(held, res)
	}
	runtime.KeepAlive(held)
}

// TestResidentVolumeMappedBeforeClock: when the pipelined resident run's
// clock starts, every page of the volume it returns is in memory (mincore),
// so no download maps one while the clock runs. A volume of 8 MiB in 32
// chunks keeps it short under the race detector.
func TestResidentVolumeMappedBeforeClock(t *testing.T) {
	if _, _, ok := residentPages(make([]float32, 1)); !ok {
		t.Skip("the pages' residency is read with Linux's mincore")
	}
	for _, tc := range clockRuns {
		t.Run(fmt.Sprintf("%d/%v", tc.streams, tc.path), func(t *testing.T) {
			g := tomo.Geometry{Size: 128, Angles: 3, Slices: 128}
			watchClock(t, g, tomo.Options{Streams: tc.streams, Path: tc.path, MinChunks: 32}, 2, func(res *tomo.Result) {
				resident, pages, ok := residentPages(res.Volume)
				require.True(t, ok, "mincore")
				assert.Equal(t, pages, resident, "every page of the volume in memory as the clock starts")
			}, func() {})
		})
	}
}

// freshFaults returns the minor faults that writing one byte into each
// page of n bytes of fresh anonymous memory takes: what a run's downloads
// take when they are the first to write the volume.
func freshFaults(t *testing.T, n int64) int64 {
	fresh, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	defer func() { require.NoError(t, syscall.Munmap(fresh)) }()
	before, _ := minorFaults()
	for i := 0; i < len(fresh); i += os.Getpagesize() {
		fresh[i] = 1
	}
	after, _ := minorFaults()
	return after - before
}

// TestResidentClockTakesNoVolumeFaults: the pipelined resident run's clock
// (Result.Seconds) takes under 1 % of the volume's pages as minor faults,
// counted with getrusage over the whole process from the clock's start to
// its stop. The count is the process's, the Go runtime's (a collection, the
// memory it gives back and takes again) and sim's kernels' (Go code whose
// allocations come and go) included, which add up to a few hundred faults
// in some runs and a dozen in others: the bound holds the fewest of three
// runs, each of which would take a fault for every page of its volume if
// its downloads were the first to write it. The control, fresh memory of
// the volume's size written once a page, shows the count seeing every
// page: a system that maps such memory in huge pages skips the test. So
// does a race-instrumented build, whose runtime maps and gives back the
// shadow memory of what the run writes (tens of thousands of faults a run,
// whatever the run does); TestResidentVolumeMappedBeforeClock runs there.
func TestResidentClockTakesNoVolumeFaults(t *testing.T) {
	if _, ok := minorFaults(); !ok {
		t.Skip("minor faults are read from getrusage's ru_minflt, on Linux only")
	}
	if raceEnabled {
		t.Skip("the race detector's runtime faults in its shadow memory as the run writes: run without -race")
	}
	g := clockGeometry
	pages := g.VolumeBytes() / int64(os.Getpagesize())
	if control := freshFaults(t, g.VolumeBytes()); control < pages/2 {
		t.Skipf("fresh memory of %s took %d minor faults for its %d pages (mapped in huge pages?): the count cannot tell the volume's pages",
			accounting.FormatBytes(g.VolumeBytes()), control, pages)
	}
	for _, tc := range clockRuns {
		t.Run(fmt.Sprintf("%d/%v", tc.streams, tc.path), func(t *testing.T) {
			var faults []int64
			var at int64
			watchClock(t, g, clockOptions(tc.streams, tc.path), clockedRuns, func(*tomo.Result) {
				at, _ = minorFaults()
			}, func() {
				n, _ := minorFaults()
				faults = append(faults, n-at)
			})
			require.Len(t, faults, clockedRuns)
			t.Logf("minor faults on the clock %v, volume %d pages (%s)", faults, pages, accounting.FormatBytes(g.VolumeBytes()))
			assert.Less(t, slices.Min(faults), pages/100, "the fewest minor faults of %d runs' clocks under 1 %% of the volume's %d pages", clockedRuns, pages)
		})
	}
}
