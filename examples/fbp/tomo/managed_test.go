package tomo_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/plan"
)

// volumeBits is a volume's values as their bits, to compare exactly.
func volumeBits(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}

// pagesOf is n bytes in whole managed pages.
func pagesOf(n int64) int64 {
	return (n + sim.ManagedPageSize - 1) / sim.ManagedPageSize * sim.ManagedPageSize
}

// requireManagedRun checks what the ledger says of a run in managed memory
// of g: both arrays allocated in managed memory, every byte that crossed
// on the driver's own paths (no copy call), the sinograms prefetched up
// and the volume down (a page two chunks share may go twice), and nothing
// left allocated on dev.
func requireManagedRun(t *testing.T, dev device.Device, g tomo.Geometry, res *tomo.Result) *tomo.ManagedTraffic {
	t.Helper()
	tr := res.Traffic
	m := tr.Managed
	require.NotNil(t, m, "a run in managed memory reports its managed figures")
	assert.Equal(t, tomo.ManagedMemory, res.Memory)
	assert.GreaterOrEqual(t, m.Bytes, g.SinogramBytes()+g.VolumeBytes(), "the sinograms and the volume, whole, in managed memory")
	for _, byPath := range []map[string]int64{tr.HtoDByPath, tr.DtoHByPath} {
		for path := range byPath {
			assert.Contains(t, []string{"prefetch", "migrated"}, path, "only the driver moves bytes: no copy call")
		}
	}
	assert.Equal(t, tr.HtoD, m.PrefetchHtoD+m.MigratedHtoD)
	assert.Equal(t, tr.DtoH, m.PrefetchDtoH+m.MigratedDtoH)
	shared := 2 * int64(len(res.Plan.Chunks)) * sim.ManagedPageSize // pages at chunk boundaries
	if dev.ConcurrentManagedAccess() {
		assert.GreaterOrEqual(t, m.PrefetchHtoD, g.SinogramBytes(), "each chunk's sinograms prefetched to the device")
		assert.LessOrEqual(t, m.PrefetchHtoD, pagesOf(g.SinogramBytes())+shared)
	}
	assert.GreaterOrEqual(t, m.PrefetchDtoH, g.VolumeBytes(), "each chunk's images prefetched to the host")
	assert.LessOrEqual(t, m.PrefetchDtoH, pagesOf(g.VolumeBytes())+shared)
	assert.Zero(t, m.Duplicates, "no read-mostly advice")
	assert.Empty(t, m.Uncounted)
	assert.Zero(t, tr.DeviceCurrent, "the run frees all it allocates")
	for _, k := range []accounting.Kind{accounting.Device, accounting.Managed} {
		assert.Zero(t, dev.Ledger().Current(k), "%v bytes after the run", k)
	}
	return m
}

// TestManagedEqualsResident: a resident run with the sinograms and the
// volume in managed memory, its chunks' kernels in place on views of them,
// gives the bits of the run in device memory, for every count of streams
// and with chunks that share pages; with prefetches, on one stream, no
// page faults at all, and on several at most a few a chunk (a page two
// chunks in flight share).
func TestManagedEqualsResident(t *testing.T) {
	for _, tc := range []struct {
		g         tomo.Geometry
		streams   int
		minChunks int
		exclusive bool // a sim device without concurrent managed access: no prefetch to it
	}{
		{tomo.Geometry{Size: 24, Angles: 20, Slices: 7}, 1, 0, false},
		{tomo.Geometry{Size: 24, Angles: 20, Slices: 11}, 2, 0, false},
		{tomo.Geometry{Size: 17, Angles: 9, Slices: 13}, 3, 0, false},
		{tomo.Geometry{Size: 8, Angles: 5, Slices: 5}, 2, 5, false}, // chunks of one slice, each less than a page
		{tomo.Geometry{Size: 16, Angles: 12, Slices: 9}, 2, 0, true},
	} {
		t.Run(fmt.Sprintf("%v/%d streams/exclusive %v", tc.g, tc.streams, tc.exclusive), func(t *testing.T) {
			g := tc.g
			dev := testdev.Open(t)
			if tc.exclusive {
				var err error
				dev, err = device.Open("sim:0?mem=64MiB&managed=exclusive")
				require.NoError(t, err)
				defer dev.Close()
			}
			sino := randomSinograms(g)
			want, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{})
			require.NoError(t, err)
			assert.Equal(t, tomo.DeviceMemory, want.Memory)
			assert.Nil(t, want.Traffic.Managed, "a run in device memory has no managed figures")
			res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{Streams: tc.streams, MinChunks: tc.minChunks, Memory: tomo.ManagedMemory})
			require.NoError(t, err)
			require.Equal(t, volumeBits(want.Volume), volumeBits(res.Volume), "the bits of the run in device memory")
			assert.Equal(t, tc.streams, res.Streams)
			if tc.minChunks > 0 {
				assert.Len(t, res.Plan.Chunks, tc.minChunks)
			}
			m := requireManagedRun(t, dev, g, res)
			assert.Zero(t, m.Evictions, "the device has room for all of it")
			if dev.ConcurrentManagedAccess() && tc.streams == 1 {
				assert.Zero(t, m.Faults, "every page prefetched before it is touched")
			}
			if dev.ConcurrentManagedAccess() {
				assert.LessOrEqual(t, m.Faults, 4*int64(len(res.Plan.Chunks)), "faults only on pages that chunks in flight share")
			} else {
				assert.Zero(t, m.PrefetchHtoD, "no prefetch to a device without concurrent managed access")
				assert.GreaterOrEqual(t, m.MigratedHtoD, g.SinogramBytes(), "its kernels fault the sinograms in")
				assert.Positive(t, m.Faults)
			}
			assert.Positive(t, res.KernelSeconds)
		})
	}
}

// TestManagedOversubscribes: on sim devices smaller than the sinograms and
// the volume together, the run in managed memory completes, as the driver
// evicts pages, and gives the bits of the run in device memory on a device
// large enough; the ledger counts the evictions, each a page down on the
// path "migrated", and no device or managed memory is left after. The
// test opens its sim devices itself, also in a build on the emulated CUDA
// driver: that driver's devices all have the memory its configuration
// gives the process, and its cuMemAllocManaged refuses one allocation
// larger than that memory (only several smaller ones may add up past it).
func TestManagedOversubscribes(t *testing.T) {
	for _, tc := range []struct {
		g       tomo.Geometry
		streams int
		mem     string
	}{
		{tomo.Geometry{Size: 32, Angles: 40, Slices: 24}, 1, "96KiB"},
		{tomo.Geometry{Size: 32, Angles: 40, Slices: 24}, 2, "128KiB"},
		{tomo.Geometry{Size: 20, Angles: 64, Slices: 30}, 3, "128KiB"},
	} {
		t.Run(fmt.Sprintf("%v/%d streams/%s", tc.g, tc.streams, tc.mem), func(t *testing.T) {
			g := tc.g
			sino := randomSinograms(g)
			large, err := device.Open("sim:0?mem=64MiB")
			require.NoError(t, err)
			defer large.Close()
			want, err := tomo.ReconstructWith(large, g, sino, tomo.Resident, tomo.Options{Streams: tc.streams})
			require.NoError(t, err)

			small, err := device.Open("sim:0?mem=" + tc.mem)
			require.NoError(t, err)
			defer small.Close()
			_, total, err := small.MemInfo()
			require.NoError(t, err)
			require.Greater(t, g.SinogramBytes()+g.VolumeBytes(), total, "the arrays are larger than the device")
			res, err := tomo.ReconstructWith(small, g, sino, tomo.Resident, tomo.Options{Streams: tc.streams, Memory: tomo.ManagedMemory})
			require.NoError(t, err)
			require.Equal(t, volumeBits(want.Volume), volumeBits(res.Volume), "the bits of the run in device memory on a large device")
			m := requireManagedRun(t, small, g, res)
			assert.Positive(t, m.Evictions, "the device made room by eviction")
			assert.Equal(t, m.Evictions*sim.ManagedPageSize, m.MigratedDtoH, "each eviction a page down on the path migrated")
			assert.LessOrEqual(t, m.Faults, 4*int64(len(res.Plan.Chunks)), "no chunk in flight evicted: faults only on pages that chunks share")
			t.Logf("%s: %d chunks; prefetched up %d B, down %d B; migrated up %d B, down %d B; %d faults, %d evictions",
				tc.mem, len(res.Plan.Chunks), m.PrefetchHtoD, m.PrefetchDtoH, m.MigratedHtoD, m.MigratedDtoH, m.Faults, m.Evictions)
		})
	}
}

// TestManagedTooSmall: a device too small for one chunk's working set (a
// slice's sinograms, images and workspace) fails the run in managed memory
// with the planner's error, however much managed memory it could
// allocate, and leaves no device or managed memory allocated.
func TestManagedTooSmall(t *testing.T) {
	for _, tc := range []struct {
		g    tomo.Geometry
		spec string
	}{
		{tomo.Geometry{Size: 64, Angles: 90, Slices: 4}, "sim:0?mem=16KiB"},
		{tomo.Geometry{Size: 64, Angles: 90, Slices: 4}, "sim:0?mem=16KiB&managed=exclusive"},
		{tomo.Geometry{Size: 128, Angles: 30, Slices: 2}, "sim:0?mem=64KiB"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			dev, err := device.Open(tc.spec)
			require.NoError(t, err)
			defer dev.Close()
			_, err = tomo.ReconstructWith(dev, tc.g, randomSinograms(tc.g), tomo.Resident, tomo.Options{Memory: tomo.ManagedMemory})
			require.Error(t, err)
			if dev.ConcurrentManagedAccess() {
				assert.ErrorIs(t, err, plan.ErrTooLarge)
				assert.ErrorContains(t, err, "not even one slice fits")
			} else {
				assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "managed memory is device memory here: the arrays do not fit")
			}
			for _, k := range []accounting.Kind{accounting.Device, accounting.Managed} {
				assert.Zero(t, dev.Ledger().Current(k), "%v bytes after the failed run", k)
			}
		})
	}
}

// TestManagedRefuses: managed memory is for the resident mode, and a
// memory must be one of Memories.
func TestManagedRefuses(t *testing.T) {
	dev := testdev.Open(t)
	g := tomo.Geometry{Size: 8, Angles: 6, Slices: 2}
	sino := randomSinograms(g)
	for _, tc := range []struct {
		mode   tomo.Mode
		memory tomo.Memory
		msg    string
	}{
		{tomo.Staged, tomo.ManagedMemory, "managed memory is for the resident mode"},
		{tomo.Resident, "unified", `memory "unified": want device or managed`},
		{tomo.Resident, "Managed", `memory "Managed": want device or managed`},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.mode, tc.memory), func(t *testing.T) {
			_, err := tomo.ReconstructWith(dev, g, sino, tc.mode, tomo.Options{Memory: tc.memory})
			assert.ErrorIs(t, err, accounting.ErrInvalidArgument)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	for _, s := range []string{"device", "managed"} {
		m, err := tomo.ParseMemory(s)
		require.NoError(t, err)
		assert.Equal(t, s, string(m))
	}
}

// TestManagedFailureFreesEverything fails each allocation of a run in
// managed memory in turn (the managed arrays', the workspaces'): the run
// fails, or (the workspace too small for the filter's fast algorithm)
// gives the same bits, degraded; either way no device or managed memory
// is left.
func TestManagedFailureFreesEverything(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 12, Slices: 6}
	sino := randomSinograms(g)
	open := func(failAlloc int) device.Device {
		d, err := device.Open(fmt.Sprintf("sim:0?mem=64MiB&fail-alloc=%d", failAlloc))
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return d
	}
	opt := tomo.Options{Streams: 2, Memory: tomo.ManagedMemory}
	want, err := tomo.ReconstructWith(open(0), g, sino, tomo.Resident, opt)
	require.NoError(t, err)
	allocs := 2 + int(want.Traffic.DeviceAllocs) // the managed arrays, the workspaces
	failed := 0
	for n := 1; n <= allocs; n++ {
		dev := open(n)
		res, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, opt)
		if err != nil {
			failed++
			assert.ErrorIs(t, err, device.ErrInjected, "allocation %d", n)
		} else {
			assert.True(t, res.Degraded, "allocation %d failed and the run went on: only a workspace may", n)
			assert.Equal(t, volumeBits(want.Volume), volumeBits(res.Volume), "allocation %d", n)
		}
		for _, k := range []accounting.Kind{accounting.Device, accounting.Managed} {
			assert.Zero(t, dev.Ledger().Current(k), "allocation %d failed: %v bytes left", n, k)
		}
	}
	assert.GreaterOrEqual(t, failed, 2, "the managed arrays cannot be done without")
}
