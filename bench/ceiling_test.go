package bench_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// h100 is the device of the first GPU run: memory clock 2619 MHz × 5120
// bits × 2 / 8 = 3352 GB/s.
var h100 = driver.Info{Name: "cuda:0", Backend: "cuda", Model: "NVIDIA H100 80GB HBM3 (compute capability 9.0)", MemoryBandwidth: 2619e6 * 5120 * 2 / 8}

func TestCeilingsFor(t *testing.T) {
	sim := driver.Info{Backend: "sim", Model: "cuarray simulated device (host memory)"}
	for _, tc := range []struct {
		name             string
		info             driver.Info
		pcie, hostCopy   float64
		link, dtod       float64 // GB/s
		linkFrom, dtodIn string  // in the sources
	}{
		{"H100 by model and attributes", h100, 0, 10, 64, 1676, "known model NVIDIA H100", "half of the device's 3352 GB/s"},
		{"-pcie wins", h100, 32, 10, 32, 1676, "-pcie", "half"},
		{"the device's own link", driver.Info{Backend: "cuda", Model: "NVIDIA H200", HostLinkBandwidth: 55e9, MemoryBandwidth: 4.8e12}, 0, 10, 55, 2400, "Info", "half"},
		{"GH200 is not a PCIe H200", driver.Info{Backend: "cuda", Model: "NVIDIA GH200 480GB"}, 0, 10, 450, 4000, "GH200", "no GPU's memory is faster"},
		{"unknown GPU", driver.Info{Backend: "cuda", Model: "NVIDIA Future 1"}, 0, 10, 450, 4000, "no GPU's host link is faster", "no GPU's memory is faster"},
		{"sim", sim, 0, 20, 80, 80, "4 × this host's peak memory copy of 20.00 GB/s", "4 ×"},
		{"sim with -pcie", sim, 3, 20, 3, 80, "-pcie", "4 ×"},
		{"sim with its own figures", driver.Info{Backend: "sim", HostLinkBandwidth: 7e9, MemoryBandwidth: 10e9}, 0, 20, 7, 5, "Info", "half"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bench.CeilingsFor(tc.info, tc.pcie, tc.hostCopy)
			assert.InDelta(t, tc.link, c.HostLink.GBps, 0.5, "host link")
			assert.InDelta(t, tc.dtod, c.DtoD.GBps, 0.5, "device to device")
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
			r := &bench.Report{Device: "cuda:0", Model: h100.Model, Ceilings: bench.CeilingsFor(h100, 0, 10), Results: []bench.Result{
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
			"the host link's ceiling of 0.001 GB/s (the device's Info)"},
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
// host's own peak memory copy, which the run measures.
func TestRunOnSimHasCeilings(t *testing.T) {
	dev := testdev.Open(t)
	r, err := bench.Run(dev, bench.Config{Sizes: []int64{int64(rand.IntN(1<<20) + 1<<20)}, Budget: 8 << 20})
	require.NoError(t, err, "no honest figure is refused")
	require.True(t, r.CountsOK())
	assert.True(t, r.Possible())
	assert.Positive(t, r.HostCopyGBps, "the host's memory copy is measured")
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
			assert.InDelta(t, bench.SimCeilingFactor*r.HostCopyGBps, q.Ceiling.GBps, 1e-9)
			assert.Contains(t, q.Ceiling.Source, "sim: ")
		}
	}
	assert.Contains(t, r.Table(), "ceiling: host link")
	assert.NoError(t, r.Check())
}
