package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// On a sim device whose host link is modelled as a GPU's (pageable copies
// at a fraction of the pinned rate, a latency per operation), the profile
// that Calibrate measures makes the planner pick, at every size from 4 KiB
// to 64 MiB and both ways, a path no slower than the best one measured
// (within the noise of a shared machine), while sim's defaults, which know
// nothing of the link, stay on the direct path where staging wins.
func TestPlannerOnModelledSim(t *testing.T) {
	if testing.Short() {
		t.Skip("measures copies up to 64 MiB over a modelled link: seconds")
	}
	if device.CUDABuilt {
		t.Skip("measures sim's modelled link by timing it, which make test does; a cuda build's run is about the cuda backend")
	}
	dev, err := sim.New(sim.Config{Memory: 512 << 20, Latency: 50 * time.Microsecond,
		Link: &sim.Link{PinnedGBps: 0.5, PageableGBps: 0.2}})
	require.NoError(t, err)
	defer dev.Close()
	// The profile is measured, then the run: when the machine's load
	// changes during the calibration or between the two (a shared CI
	// machine's does), the profile describes another machine. The
	// comparison gets a second try, with a fresh profile, and fails only if
	// both tries find a profile off the link or a slow pick.
	var r *bench.Report
	var slow []string
	for try := 1; try <= 2; try++ {
		r, slow = calibrateAndRun(t, dev)
		if r == nil && try == 2 {
			require.Fail(t, "the profile missed the modelled link on both tries", strings.Join(slow, "\n"))
		}
		if len(slow) == 0 {
			break
		}
		t.Logf("try %d: %d picks slower than the best measured:\n%s", try, len(slow), strings.Join(slow, "\n"))
	}
	assert.Empty(t, slow, "the planner's picks against the best path, on both tries:\n%s", r.Table())
	for _, pl := range r.Plans {
		if pl.Size >= 16<<20 && pl.Host == "pageable" {
			assert.Equal(t, "staged", pl.Best, "the link makes staging pay: %s", r.Table())
		}
	}
	assert.Contains(t, r.Table(), "planner's pick against the best path measured")

	// sim's defaults, without the calibration, keep to direct.
	c, err := transfer.New(dev, transfer.WithProfile(transfer.DefaultProfile(dev.Info())))
	require.NoError(t, err)
	defer c.Close()
	ch, err := c.PlanHost(transfer.InPageable, false, accounting.HtoD, 64<<20)
	require.NoError(t, err)
	assert.Equal(t, transfer.PathDirect, ch.Path)
}

// calibrateAndRun measures a profile of dev's modelled link, runs the bench
// with it, and returns the report with each pick that is slower than the
// best path measured by more than 25 % and two late wake-ups, in both its
// median and its fastest repeat; or, with no report, a profile whose fitted
// lines missed the modelled link.
func calibrateAndRun(t *testing.T, dev device.Device) (*bench.Report, []string) {
	t.Helper()
	var progress bytes.Buffer
	prof, err := bench.Calibrate(dev, bench.CalibrateConfig{
		Sizes: []int64{4 << 10, 256 << 10, 4 << 20, 16 << 20}, Repeats: 3, Progress: &progress,
		Paths: []transfer.Path{transfer.PathDirect, transfer.PathStaged, transfer.PathPinned},
	})
	require.NoError(t, err, progress.String())
	require.NoError(t, prof.Validate())
	assert.Equal(t, dev.Info().Model, prof.Model)
	assert.NotNil(t, prof.Ring, "the ring was chosen by measurement")
	assert.NotEmpty(t, prof.HostCopy, "the host's memcpy was measured")
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		direct, ok := prof.Cost(transfer.PathDirect, dir)
		require.True(t, ok)
		pinned, ok := prof.Cost(transfer.PathPinned, dir)
		require.True(t, ok)
		// The fitted lines find the modelled link: 0.2 and 0.5 GB/s.
		if math.Abs(direct.GBps-0.2) > 0.05 || math.Abs(pinned.GBps-0.5) > 0.15 {
			return nil, []string{fmt.Sprintf("%v: the fit is direct %v and pinned %v, not 0.2 ± 0.05 and 0.5 ± 0.15 GB/s\n%s",
				dir, direct, pinned, progress.String())}
		}
	}

	r, err := bench.Run(dev, bench.Config{
		Sizes:  []int64{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20},
		Paths:  []transfer.Path{transfer.PathDirect, transfer.PathStaged},
		Budget: 64 << 20, MinRepeats: 3, MaxRepeats: 7,
		Copier: []transfer.Option{transfer.WithProfile(prof)},
	})
	require.NoError(t, err)
	pageable := 0
	for _, pl := range r.Plans {
		if pl.Host == "pageable" {
			pageable++
		}
	}
	require.Equal(t, 5*2, pageable, "a pick per size and direction for pageable memory:\n%s", r.Table())
	// sim's latency and link are sleeps: on a busy machine a wake-up comes
	// late, and a small copy's time is mostly that. The load changes while
	// the run goes on (a clean-clone CI run, with another package's tests
	// beside it, saw 4 KiB copies take 1.1 to 2.2 ms where a wake-up had
	// measured 54 µs after the run), so the pick's fastest repeat counts too:
	// a pick whose repeats are all slower is slower.
	slack := 2 * wakeup()
	var slow []string
	for _, pl := range r.Plans {
		pickTime := time.Duration(float64(pl.Size) / pl.PickGBps)
		bestTime := time.Duration(float64(pl.Size) / pl.BestGBps)
		fastest := time.Duration(float64(pl.Size) / find(t, r, pl.Pick, pl.Direction, pl.Size).MaxGBps)
		if min(pickTime, fastest) > bestTime*5/4 && pickTime-bestTime >= slack {
			slow = append(slow, fmt.Sprintf("%s %s: the planner picks %s (%v), the best is %s (%v), slack %v: %s",
				pl.Direction, accounting.FormatBytes(pl.Size), pl.Pick, pickTime, pl.Best, bestTime, slack, pl.Reason))
		}
	}
	return r, slow
}

// wakeup returns how late a short sleep wakes up on this machine now: the
// median of a few.
func wakeup() time.Duration {
	late := make([]time.Duration, 9)
	for i := range late {
		start := time.Now()
		time.Sleep(20 * time.Microsecond)
		late[i] = time.Since(start)
	}
	slices.Sort(late)
	return late[len(late)/2]
}

// The report marks the planner's pick among the managed paths measured
// (host "managed") and its pick across every kind of host memory
// (bench.HostAll), each beside the fastest of its candidates measured, in
// Report.Plans, in the JSON and on the pick's row; with a profile in which
// a prefetch is the cheapest way to the device, the whole table's HtoD pick
// is managed-prefetch.
func TestPlannerManagedAndOverall(t *testing.T) {
	dev := testdev.Open(t)
	r := rand.For(t)
	prof := transfer.DefaultProfile(dev.Info())
	require.NoError(t, prof.SetRouteCost(transfer.RouteManagedPrefetch, accounting.HtoD, transfer.Cost{Latency: time.Nanosecond, GBps: 1e4}, 0))
	sizes := []int64{16<<10 + r.Int64N(16<<10), 64<<10 + r.Int64N(64<<10)}
	rep, err := bench.Run(dev, bench.Config{Sizes: sizes, Budget: 256 << 10, MaxRepeats: 4, PCIe: 1000,
		Paths: []transfer.Path{transfer.PathDirect, transfer.PathPinned}, Managed: bench.ManagedPaths,
		Copier: []transfer.Option{transfer.WithProfile(prof)}})
	require.NoError(t, err)
	fastest := func(dir string, n int64, managedOnly bool) float64 {
		gbps := 0.0
		for _, q := range rep.Results {
			rt, err := transfer.ParseRoute(q.Path)
			if err != nil || q.Direction != dir || q.Size != n || (managedOnly && rt.Memory() != transfer.MemoryManaged) {
				continue
			}
			gbps = max(gbps, q.GBps)
		}
		return gbps
	}
	for _, n := range sizes {
		for _, dir := range []string{"HtoD", "DtoH"} {
			for _, host := range []string{"managed", bench.HostAll} {
				var plans []bench.Plan
				for _, pl := range rep.Plans {
					if pl.Size == n && pl.Direction == dir && pl.Host == host {
						plans = append(plans, pl)
					}
				}
				require.Len(t, plans, 1, "%s %s %d:\n%s", host, dir, n, rep.Table())
				pl := plans[0]
				assert.Equal(t, fastest(dir, n, host == "managed"), pl.BestGBps, "%s %s %d: the fastest of the candidates measured", host, dir, n)
				assert.Equal(t, pl.BestGBps, rep.Find(pl.Best, dir, n).GBps)
				if pl.Best == pl.Pick {
					assert.Zero(t, pl.Slower)
				} else {
					assert.InDelta(t, pl.BestGBps/pl.PickGBps-1, pl.Slower, 1e-9)
				}
				row := rep.Find(pl.Pick, dir, n)
				require.NotNil(t, row)
				assert.Equal(t, row.GBps, pl.PickGBps)
				if host == "managed" {
					assert.True(t, strings.HasPrefix(pl.Pick, "managed"), pl.Pick)
					assert.True(t, strings.HasPrefix(row.Planner, "pick, "), row.Planner)
					assert.NotContains(t, pl.Reason, "direct ≈", "the managed routes alone")
					continue
				}
				assert.Contains(t, row.Planner, "overall pick")
				assert.Contains(t, pl.Reason, pl.Pick+" is the cheapest")
				if dir == "HtoD" {
					assert.Equal(t, "managed-prefetch", pl.Pick, "the profile's cheapest way to the device")
				}
			}
		}
	}
	out, err := json.Marshal(rep)
	require.NoError(t, err)
	var back bench.Report
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, rep.Plans, back.Plans)
	assert.Contains(t, rep.Table(), "  all kinds ")
}
