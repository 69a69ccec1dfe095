package bench_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// A calibration size larger than the device is refused before anything
// is measured or allocated (it made the host side first, filled with
// random bytes: -sizes 1TiB asked the host for a terabyte); sizes of 0 or
// less are refused too.
func TestCalibrateRefusesImpossibleSizes(t *testing.T) {
	dev, err := device.Open("sim:0?mem=16MiB")
	require.NoError(t, err)
	defer dev.Close()
	for _, n := range []int64{16<<20 + 1 + rand.Int64N(1<<30), 1 << 40, 1<<63 - 1, 0, -1} {
		_, err := bench.Calibrate(dev, bench.CalibrateConfig{Sizes: []int64{4 << 10, n}, Paths: []transfer.Path{transfer.PathDirect}})
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "size %d", n)
		assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Device].Allocs, "size %d: nothing allocated on the device", n)
	}
}

// On a sim device that models its host link (link=, as `bench -pcie`
// sets it), the calibrated figures are the link's: a 0.05 GB/s link gives
// about 0.05 GB/s, within the ceiling the link sets. The sizes are three
// decades apart and the larger takes tens of milliseconds over the link,
// so that a loaded machine's late wake-ups from sleep do not tilt the
// fitted line.
func TestCalibrateMeasuresTheModelledLink(t *testing.T) {
	rate := 0.02 + 0.03*rand.Float64() // GB/s: 2 MiB in 42 to 105 ms
	dev, err := device.Open(fmt.Sprintf("sim:0?mem=16MiB&link=%g", rate))
	require.NoError(t, err)
	defer dev.Close()
	var progress strings.Builder
	p, err := bench.Calibrate(dev, bench.CalibrateConfig{Sizes: []int64{4 << 10, 2 << 20}, Paths: []transfer.Path{transfer.PathDirect, transfer.PathPinned},
		Repeats: 3, Progress: &progress})
	require.NoError(t, err, "honest figures pass their ceiling")
	require.Len(t, p.Costs, 4)
	for _, c := range p.Costs {
		// the link's rate, not above it; below it by a loaded machine's late wake-ups from sleep
		assert.LessOrEqual(t, c.GBps, rate*(1+bench.FitTolerance), "%s %s: the link's %.3g GB/s", c.Path, c.Direction, rate)
		assert.GreaterOrEqual(t, c.GBps, rate*0.4, "%s %s: the link's %.3g GB/s, not memory speed", c.Path, c.Direction, rate)
	}
	assert.Contains(t, progress.String(), "calibrate: the host link of ", "the time a slow link takes is said first")
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "every device byte freed")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "every pinned byte freed")
}

// A calibrated figure above its ceiling is refused with every such figure
// and its ceiling named, and no profile is returned: on sim without a
// link with a -pcie far below its copies, and on a device whose Info
// claims a memory slower than its d2d copies. What was allocated is freed.
// The sizes span three decades, so that an honest fit on a loaded machine
// is not refused.
func TestCalibrateRefusesFiguresAboveTheCeiling(t *testing.T) {
	sim, err := device.Open("sim:0?mem=16MiB")
	require.NoError(t, err)
	defer sim.Close()
	for _, tc := range []struct {
		name    string
		dev     device.Device
		pcie    float64
		paths   []transfer.Path
		refused []string // in the error
		passed  []string // not in it
	}{
		{"-pcie below sim's copies", sim, 0.001 * (1 + rand.Float64()), []transfer.Path{transfer.PathDirect, transfer.PathPinned, transfer.PathD2D},
			[]string{"direct HtoD: the median at 4.00 KiB of ", "direct DtoH: ", "pinned HtoD: ", "pinned DtoH: ", "(given as the PCIe bandwidth, -pcie)"},
			[]string{"d2d DtoD", "and 1 more"}},
		{"memory from Info", tinyCeilings{sim, 0, 2e6}, 0, []transfer.Path{transfer.PathPinned, transfer.PathD2D},
			[]string{"d2d DtoD: the median at 4.00 KiB of ", "are above the device memory's ceiling of 0.001 GB/s"},
			[]string{"pinned HtoD", "pinned DtoH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := bench.Calibrate(tc.dev, bench.CalibrateConfig{Sizes: []int64{4 << 10, int64(rand.IntN(2<<20) + 2<<20)}, Paths: tc.paths, Repeats: 3, PCIe: tc.pcie})
			assert.Nil(t, p, "no profile to save")
			require.ErrorIs(t, err, bench.ErrImpossible)
			for _, s := range tc.refused {
				assert.Contains(t, err.Error(), s)
			}
			for _, s := range tc.passed {
				assert.NotContains(t, err.Error(), s)
			}
			assert.Zero(t, sim.Ledger().Current(accounting.Device), "every device byte freed")
			assert.Zero(t, sim.Ledger().Current(accounting.Pinned), "every pinned byte freed")
		})
	}
	for _, pcie := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := bench.Calibrate(sim, bench.CalibrateConfig{Sizes: []int64{4 << 10}, PCIe: pcie})
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "PCIe %v", pcie)
	}
}

// With managed paths asked for, Calibrate fits each managed path and
// direction as it does a path and saves it under its route's name
// (read-mostly HtoD only), so that the planner's PlanRoutes uses the
// measured cost; the routes it did not measure have no cost. An unknown
// managed path is refused before anything is measured.
func TestCalibrateManaged(t *testing.T) {
	dev, err := device.Open("sim:0?mem=32MiB")
	require.NoError(t, err)
	defer dev.Close()
	// about three decades apart, as TestCalibrateMeasuresTheModelledLink's: sizes
	// close in time let a loaded machine's noise tilt the fitted lines
	sizes := []int64{2<<10 + rand.Int64N(2<<10), 2<<20 + rand.Int64N(1<<20)}
	var progress strings.Builder
	p, err := bench.Calibrate(dev, bench.CalibrateConfig{Sizes: sizes, Paths: []transfer.Path{transfer.PathPinned},
		Managed: bench.ManagedPaths, Repeats: 3, Progress: &progress})
	require.NoError(t, err, progress.String())
	require.Len(t, p.Costs, 2+5, "pinned both ways, managed and managed-prefetch both ways, managed-read-mostly HtoD")
	c, err := transfer.New(dev, transfer.WithProfile(p))
	require.NoError(t, err)
	defer c.Close()
	n := sizes[0] + rand.Int64N(sizes[1])
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		plan, err := c.PlanRoutes(dir, n, false)
		require.NoError(t, err)
		for _, rt := range []transfer.Route{transfer.RouteManaged, transfer.RouteManagedPrefetch, transfer.RouteManagedReadMostly} {
			cost, ok := p.RouteCost(rt, dir)
			require.Equal(t, rt.Moves(dir), ok, "%v %v", rt, dir)
			if !ok {
				continue
			}
			assert.Contains(t, progress.String(), fmt.Sprintf("calibrate: %-6s %-4s latency", rt, dir))
			got, ok := plan.Time(rt)
			require.True(t, ok, "%v %v", rt, dir)
			assert.Equal(t, cost.Time(n), got, "the planner's time is the measured cost's")
		}
		assert.Contains(t, plan.Uncosted, transfer.RouteDirect, "not measured: no cost")
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "every device byte freed")
	assert.Zero(t, dev.Ledger().Current(accounting.Managed), "every managed byte freed")

	_, err = bench.Calibrate(dev, bench.CalibrateConfig{Sizes: sizes, Paths: []transfer.Path{transfer.PathPinned}, Managed: []bench.ManagedPath{"managed-teleport"}})
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}
