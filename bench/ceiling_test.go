package bench_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// h100 is the device of the first GPU run: memory clock 2619 MHz × 5120
// bits × 2 / 8 = 3352 GB/s.
var h100 = driver.Info{Name: "cuda:0", Backend: "cuda", Model: "NVIDIA H100 80GB HBM3 (compute capability 9.0)", MemoryBandwidth: 2619e6 * 5120 * 2 / 8}

// curve is a host memory copy curve: cache speed at 4 KiB, memory speed
// (outOfCache GB/s) at 256 MiB.
func curve(inCache, outOfCache float64) []bench.MemoryCopy {
	return []bench.MemoryCopy{{Bytes: 4 << 10, GBps: inCache}, {Bytes: 1 << 20, GBps: (inCache + outOfCache) / 2}, {Bytes: 256 << 20, GBps: outOfCache}}
}

func TestCeilingsFor(t *testing.T) {
	sim := driver.Info{Backend: "sim", Model: "cuarray simulated device (host memory)"}
	for _, tc := range []struct {
		name             string
		info             driver.Info
		pcie             float64
		hostCopy         []bench.MemoryCopy
		link, dtod       float64 // GB/s, for a copy of 1 GiB
		linkFrom, dtodIn string  // in the sources
	}{
		{"H100 by model and attributes", h100, 0, curve(100, 10), 64, 1676, "known model NVIDIA H100", "half of the device's 3352 GB/s"},
		{"-pcie wins", h100, 32, curve(100, 10), 32, 1676, "-pcie", "half"},
		{"the device's own link", driver.Info{Backend: "cuda", Model: "NVIDIA H200", HostLinkBandwidth: 55e9, MemoryBandwidth: 4.8e12}, 0, curve(100, 10), 55, 2400, "Info", "half"},
		{"GH200 is not a PCIe H200", driver.Info{Backend: "cuda", Model: "NVIDIA GH200 480GB"}, 0, curve(100, 10), 450, 4000, "GH200", "no GPU's memory is faster"},
		{"unknown GPU", driver.Info{Backend: "cuda", Model: "NVIDIA Future 1"}, 0, curve(100, 10), 450, 4000, "no GPU's host link is faster", "no GPU's memory is faster"},
		{"sim", sim, 0, curve(100, 10), 40, 40, "4 × this host's memory copy at the copy's size, 10.00 GB/s at 256.00 MiB (out of cache) to 100.00 GB/s at 4.00 KiB", "4 ×"},
		{"sim with -pcie", sim, 3, curve(100, 10), 3, 40, "-pcie", "4 ×"},
		{"sim with a modelled link", driver.Info{Backend: "sim", HostLinkBandwidth: 0.001e9}, 0, curve(100, 10), 0.001, 40, "sim's modelled link", "4 ×"},
		{"sim with its own figures", driver.Info{Backend: "sim", HostLinkBandwidth: 7e9, MemoryBandwidth: 10e9}, 0, curve(100, 10), 7, 5, "sim's modelled link", "half"},
		{"sim without a curve", sim, 0, nil, 450, 4000, "model unknown", "bandwidth unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bench.CeilingsFor(tc.info, tc.pcie, tc.hostCopy)
			assert.InDelta(t, tc.link, c.HostLink.At(1<<30).GBps, 1e-9, "host link")
			assert.InDelta(t, tc.dtod, c.DtoD.At(1<<30).GBps, 0.5, "device to device")
			assert.Contains(t, c.HostLink.Source, tc.linkFrom)
			assert.Contains(t, c.DtoD.Source, tc.dtodIn)
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH, accounting.DtoD} {
				got, ok := c.For(dir.String())
				assert.True(t, ok, "%v has a ceiling", dir)
				assert.Positive(t, got.GBps, "%v", dir)
			}
			_, ok := c.For(accounting.HtoH.String())
			assert.False(t, ok, "Go's copy is the reference, not bounded")
		})
	}
}

// On sim without a link, the ceiling follows the host's copy curve: a
// cache-resident copy may go at cache speed, a copy well above the cache
// only at memory speed; a size's ceiling is never below a larger size's
// (a slow measurement on a loaded machine does not lower it), and both
// directions at once get twice the one-way ceiling.
func TestSimCeilingFollowsTheCopyCurve(t *testing.T) {
	in, mid, out := 50+100*rand.Float64(), 20+10*rand.Float64(), 3+5*rand.Float64()
	hc := []bench.MemoryCopy{{Bytes: 4 << 10, GBps: in}, {Bytes: 1 << 20, GBps: out / 2}, {Bytes: 8 << 20, GBps: mid}, {Bytes: 512 << 20, GBps: out}}
	c := bench.CeilingsFor(driver.Info{Backend: "sim"}, 0, hc)
	f := float64(bench.SimCeilingFactor)
	for _, tc := range []struct {
		size int64
		gbps float64
	}{
		{1, f * in},
		{4 << 10, f * in},
		{1<<20 - 1, f * in},
		{1 << 20, f * mid}, // the 1 MiB figure is slower than 8 MiB's: held to 8 MiB's
		{64 << 20, f * mid},
		{512 << 20, f * out},
		{4 << 30, f * out},
	} {
		assert.InDelta(t, tc.gbps, c.HostLink.At(tc.size).GBps, 1e-9, "host link at %d bytes", tc.size)
		assert.InDelta(t, tc.gbps, c.DtoD.At(tc.size).GBps, 1e-9, "d2d at %d bytes", tc.size)
		both, ok := c.For(bench.BidirDirection)
		require.True(t, ok)
		assert.InDelta(t, 2*tc.gbps, both.At(tc.size).GBps, 1e-9, "both ways at %d bytes", tc.size)
		assert.Empty(t, c.HostLink.At(tc.size).BySize, "a ceiling at a size is one figure")
	}
	assert.InDelta(t, f*in, c.HostLink.GBps, 1e-9, "GBps is the largest")
	assert.Contains(t, c.HostLink.String(), " GB/s from 512.00 MiB")
}

// The figures of the first GPU run, where d2d and mapped copies returned
// before their work was done, are refused with the figure and the ceiling;
// the honest ones pass.
func TestCheckRefusesImpossibleFigures(t *testing.T) {
	size := int64(64 << 20)
	reps := rand.IntN(10) + 3
	counts := func(gbps float64) *bench.Counts {
		c := &bench.Counts{Requested: size * int64(reps), Bytes: size * int64(reps), OK: true}
		if gbps > 0 {
			c.Seconds = float64(c.Bytes) / gbps / 1e9
		}
		return c
	}
	for _, tc := range []struct {
		name       string
		path, dir  string
		gbps, max  float64
		event      float64 // the event-timed median; 0: not timed by events
		ledger     *bench.Counts
		want       []string // in the error, in order; none: possible
		wantLedger bool     // the ledger column says ok
	}{
		{"pinned as measured", "pinned", "HtoD", 54.9, 55.2, 0, counts(54.9), nil, true},
		{"within the tolerance", "pinned", "DtoH", 66, 67, 0, counts(66), nil, true},
		{"event-timed within the tolerance", "pinned", "HtoD", 60, 62, 66, counts(60), nil, true},
		{"event-timed just above it", "pinned", "HtoD", 60, 62, 67.3, counts(60),
			[]string{"pinned HtoD 64.00 MiB: the event-timed median's 67.30 GB/s is above the host link's ceiling of 64.00 GB/s (known model NVIDIA H100"}, false},
		{"just above it", "pinned", "DtoH", 60, 67.3, 0, counts(60),
			[]string{"pinned DtoH 64.00 MiB: the fastest repeat's 67.30 GB/s is above the host link's ceiling of 64.00 GB/s (known model NVIDIA H100"}, false},
		{"d2d returned early", "d2d", "DtoD", 10113, 10200, 0, counts(8016),
			[]string{"d2d DtoD 64.00 MiB: the median of 10113.00 GB/s, the fastest repeat's 10200.00 GB/s and the ledger's 8016.00 GB/s (",
				") are above the device memory's ceiling of 1676.16 GB/s (half of the device's 3352 GB/s"}, false},
		{"mapped returned early", "mapped", "HtoD", 2952, 7460, 0, counts(3756),
			[]string{"mapped HtoD 64.00 MiB: the median of 2952.00 GB/s, the fastest repeat's 7460.00 GB/s and the ledger's 3756.00 GB/s",
				"are above the host link's ceiling of 64.00 GB/s"}, false},
		{"staged recorded in no time", "staged", "HtoD", 29.4, 30, 0, counts(0),
			[]string{"staged HtoD 64.00 MiB: the ledger's ", " recorded in 0 s is above the host link's ceiling of 64.00 GB/s"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &bench.Report{Device: "cuda:0", Model: h100.Model, Ceilings: bench.CeilingsFor(h100, 0, curve(100, 10)), Results: []bench.Result{
				{Path: bench.GoCopy, Direction: "HtoH", Size: size, Repeats: reps, GBps: 1e6, MaxGBps: 1e6}, // the reference has no ceiling
				{Path: tc.path, Direction: tc.dir, Size: size, Repeats: reps, GBps: tc.gbps, MinGBps: tc.gbps / 2, MaxGBps: tc.max, EventGBps: tc.event, Ledger: tc.ledger},
			}}
			err := r.Check()
			q := r.Results[1]
			require.NotNil(t, q.Ceiling, "every path has a ceiling")
			assert.Nil(t, r.Results[0].Ceiling)
			assert.Equal(t, tc.wantLedger, q.LedgerOK(), "the ledger column")
			if tc.want == nil {
				assert.NoError(t, err)
				assert.True(t, r.Possible())
				assert.Contains(t, r.Table(), " ok\n")
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, bench.ErrImpossible)
			var ie *bench.ImpossibleError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, []string{q.Impossible}, ie.Figures, "one line per measurement")
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				require.GreaterOrEqual(t, i, 0, "%q in order in %q", w, msg)
				at += i + len(w)
			}
			assert.False(t, r.Possible())
			table := r.Table()
			assert.Contains(t, table, "IMPOSSIBLE")
			assert.Contains(t, table, "figures that cannot be true:\n  "+ie.Figures[0])
		})
	}
}

// tinyCeilings is a device whose Info claims a host link and a memory far
// slower than any copy it makes: every figure of a bench on it is impossible.
type tinyCeilings struct {
	device.Device
	link, memory float64 // bytes per second
}

func (d tinyCeilings) Info() driver.Info {
	i := d.Device.Info()
	i.HostLinkBandwidth, i.MemoryBandwidth = d.link, d.memory
	return i
}

func TestRunRefusesFiguresAboveTheCeiling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		link    float64 // Info.HostLinkBandwidth, bytes/s
		memory  float64 // Info.MemoryBandwidth, bytes/s
		pcie    float64 // Config.PCIe, GB/s
		paths   []transfer.Path
		refused []string // rows refused, "path dir"
		ceiling string
	}{
		{"host link from Info", 1e6, 0, 0, []transfer.Path{transfer.PathDirect, transfer.PathStaged}, []string{"direct HtoD", "direct DtoH", "staged HtoD", "staged DtoH"},
			"the host link's ceiling of 0.001 GB/s (the device's Info"},
		{"memory from Info", 0, 2e6, 0, []transfer.Path{transfer.PathPinned, transfer.PathD2D}, []string{"d2d DtoD"},
			"the device memory's ceiling of 0.001 GB/s (half of the device's 0 GB/s"},
		{"host link from Config.PCIe", 1e12, 0, 1e-6, []transfer.Path{transfer.PathPinned}, []string{"pinned HtoD", "pinned DtoH"},
			"the host link's ceiling of 1e-06 GB/s (given as the PCIe bandwidth, -pcie)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := tinyCeilings{testdev.Open(t), tc.link, tc.memory}
			size := int64(rand.IntN(64<<10) + 64<<10)
			r, err := bench.Run(dev, bench.Config{Sizes: []int64{size}, Paths: tc.paths, PCIe: tc.pcie, Budget: 1 << 20})
			require.Error(t, err)
			require.ErrorIs(t, err, bench.ErrImpossible)
			require.NotNil(t, r, "the report comes with the error, its impossible rows marked")
			assert.True(t, r.CountsOK(), "the bytes were right; only the figures are impossible")
			assert.Contains(t, err.Error(), tc.ceiling)
			var refused []string
			for _, q := range r.Results {
				if len(q.Impossible) > 0 {
					refused = append(refused, q.Path+" "+q.Direction)
					assert.False(t, q.LedgerOK(), "%s %s: the ledger column is not ok", q.Path, q.Direction)
					assert.Contains(t, q.Impossible, q.Path+" "+q.Direction+" "+accounting.FormatBytes(size)+": the median of ")
					assert.Contains(t, q.Impossible, tc.ceiling)
				} else if q.Ledger != nil {
					assert.True(t, q.LedgerOK(), "%s %s", q.Path, q.Direction)
				}
			}
			assert.Equal(t, tc.refused, refused)
			assert.Contains(t, r.Table(), "IMPOSSIBLE")
		})
	}
	dev := testdev.Open(t)
	for _, pcie := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := bench.Run(dev, bench.Config{Sizes: []int64{4096}, PCIe: pcie})
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "PCIe %v", pcie)
	}
}

// On sim the ceilings exist too, so the check runs in CI: a multiple of the
// host's own memory copy at the copy's size, which the run measures. No
// honest figure is refused, at sizes from cache-resident to well above
// the L2 cache (the run's own figures, on a loaded 2-core machine).
func TestRunOnSimHasCeilings(t *testing.T) {
	dev := testdev.Open(t)
	sizes := []int64{int64(rand.IntN(60<<10) + 4<<10), int64(rand.IntN(1<<20) + 1<<20), int64(rand.IntN(4<<20) + 16<<20)}
	r, err := bench.Run(dev, bench.Config{Sizes: sizes, Budget: 8 << 20})
	require.NoError(t, err, "no honest figure is refused")
	require.True(t, r.CountsOK())
	assert.True(t, r.Possible())
	require.NotEmpty(t, r.HostCopy, "the host's memory copy curve is measured")
	if testdev.IsSim(dev) {
		assert.Equal(t, bench.OutOfCacheBytes(), r.HostCopy[len(r.HostCopy)-1].Bytes, "up to a size well above the last-level cache")
	}
	assert.Positive(t, r.HostCopyGBps)
	assert.Equal(t, bench.Tolerance, r.Tolerance)
	for _, q := range r.Results {
		if q.Path == bench.GoCopy {
			continue
		}
		require.NotNil(t, q.Ceiling, "%s %s", q.Path, q.Direction)
		assert.True(t, q.LedgerOK(), "%s %s", q.Path, q.Direction)
		assert.Positive(t, q.Ledger.Seconds, "%s %s: the ledger recorded the path's time", q.Path, q.Direction)
		assert.LessOrEqual(t, q.GBps, q.Ceiling.GBps)
		if testdev.IsSim(dev) {
			c, _ := r.Ceilings.For(q.Direction)
			assert.Equal(t, c.At(q.Size), *q.Ceiling, "%s %s %d: the ceiling at its size", q.Path, q.Direction, q.Size)
			assert.Contains(t, q.Ceiling.Source, "sim: ")
		}
	}
	assert.Contains(t, r.Table(), "ceiling: host link")
	assert.NoError(t, r.Check())
	for _, m := range r.HostCopy {
		t.Logf("host copy %s: %.3g GB/s; ceiling %.3g GB/s", accounting.FormatBytes(m.Bytes), m.GBps, r.Ceilings.HostLink.At(m.Bytes).GBps)
	}
}

// A figure timed before its work was done is refused on sim too: a copy
// of 16 MiB or more queued on a stream that holds it (latency=) and timed
// when the call returns, not when the copy is done; and a figure just
// above 4 × the out-of-cache copy, which the ceiling of 4 × the in-cache
// copy let pass, at a size above the cache (but not at 4 KiB).
func TestSimCeilingRefusesACopyTimedBeforeItWasDone(t *testing.T) {
	dev, err := device.Open("sim:0?mem=64MiB&latency=200ms")
	require.NoError(t, err)
	defer dev.Close()
	n := int64(rand.IntN(16<<20) + 16<<20)
	a, err := devarray.Empty(dev, devarray.Uint8, int(n))
	require.NoError(t, err)
	defer a.Free()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	// Page-locked, so that each copy is queued: one from pageable memory
	// waits for the stream first, as on a GPU.
	locked, err := dev.HostAlloc(n, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.HostFree(locked)) }() // before the device's Close
	src := locked.Bytes
	copy(src, testdev.RandomBytes(int(n)))
	start := time.Now()
	queued := time.Duration(math.MaxInt64)
	for range 5 { // the quickest of five queueings: a loaded machine's scheduler may stall one
		q := time.Now()
		require.NoError(t, s.CopyHtoDAsync(a.Ptr(), src))
		queued = min(queued, time.Since(q))
	}
	require.NoError(t, s.Synchronize())
	done := time.Since(start)
	require.Greater(t, done, 150*time.Millisecond, "the copies were held by the latency")
	// wrong: one copy over its queueing; honest: the five copies' bytes over the time until they were done
	wrong, honest := float64(n)/queued.Seconds()/1e9, float64(5*n)/done.Seconds()/1e9

	plain, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	defer plain.Close()
	hc, err := bench.Run(plain, bench.Config{Sizes: []int64{4 << 10}, Paths: []transfer.Path{transfer.PathD2D}, Budget: 64 << 10})
	require.NoError(t, err)
	ceilings := bench.CeilingsFor(dev.Info(), 0, hc.HostCopy)
	result := func(gbps float64) bench.Result {
		return bench.Result{Path: "pinned", Direction: "HtoD", Size: n, Repeats: 1, GBps: gbps, MinGBps: gbps, MaxGBps: gbps}
	}
	r := &bench.Report{Device: "sim:0", Ceilings: ceilings, Results: []bench.Result{result(honest)}}
	require.NoError(t, r.Check(), "the copy timed when done, %.3g GB/s, is possible", honest)

	t.Logf("%s: timed when queued %.3g GB/s, when done %.3g GB/s; ceiling %.3g GB/s", accounting.FormatBytes(n), wrong, honest, ceilings.HostLink.At(n).GBps)
	r.Results = []bench.Result{result(wrong)}
	err = r.Check()
	require.ErrorIs(t, err, bench.ErrImpossible, "%s timed in the %v its queueing took: %.3g GB/s against %v", accounting.FormatBytes(n), queued, wrong, ceilings.HostLink.At(n))
	assert.Contains(t, err.Error(), "pinned HtoD "+accounting.FormatBytes(n)+": the median of ")
	assert.Contains(t, err.Error(), "at the copy's size")

	// A figure just above the out-of-cache ceiling is refused at a size
	// above the cache, and passes at a cache-resident size.
	out := ceilings.HostLink.At(bench.OutOfCacheBytes())
	just := out.GBps * (1 + 2*bench.Tolerance)
	r.Results = []bench.Result{{Path: "direct", Direction: "DtoH", Size: bench.OutOfCacheBytes(), Repeats: 3, GBps: just, MinGBps: just, MaxGBps: just}}
	assert.ErrorIs(t, r.Check(), bench.ErrImpossible, "%.3g GB/s above the cache, against %v", just, out)
	if in := ceilings.HostLink.At(4 << 10); in.GBps > just*(1+bench.Tolerance) {
		r.Results[0].Size = 4 << 10
		assert.NoError(t, r.Check(), "%.3g GB/s for a cache-resident copy, against %v", just, in)
	}
	old := bench.SimCeilingFactor * hc.HostCopyGBps // the ceiling before the curve: 4 × the fastest, in-cache copy
	assert.Less(t, just, old, "the figure refused above the cache passed the ceiling of 4 × the in-cache copy")
}
