package transfer_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// PlanRoutes lists every route the kinds of memory offer for a direction
// (read-mostly HtoD only, pageable-in-place only where the device can
// access pageable memory), each at the time its cost models, picks the
// cheapest, and within pageable and (mapped) pinned memory picks what
// PlanHost picks.
func TestPlanRoutes(t *testing.T) {
	r := rand.For(t)
	dev := testdev.Open(t)
	profiles := map[string]*transfer.Profile{
		"H100":    transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"}),
		"generic": transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"}),
		"sim":     transfer.DefaultProfile(driver.Info{Backend: "sim", Model: "sim"}),
	}
	sizes := []int64{0, 1 + r.Int64N(4<<10), 64<<10 + r.Int64N(1<<20), 16<<20 + r.Int64N(1<<30)}
	for name, prof := range profiles {
		c, err := transfer.New(dev, transfer.WithProfile(prof))
		require.NoError(t, err)
		defer c.Close()
		for _, n := range sizes {
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				for _, inPlace := range []bool{false, true} {
					p, err := c.PlanRoutes(dir, n, inPlace)
					require.NoError(t, err)
					want := []transfer.Route{transfer.RouteDirect, transfer.RouteStaged, transfer.RouteRegistered, transfer.RoutePinned,
						transfer.RouteMapped, transfer.RouteManaged, transfer.RouteManagedPrefetch}
					if dir == accounting.HtoD {
						want = append(want, transfer.RouteManagedReadMostly)
					}
					if inPlace {
						want = append(want, transfer.RoutePageableInPlace)
					}
					var got []transfer.Route
					for _, rt := range p.Times {
						got = append(got, rt.Route)
					}
					got = append(got, p.Uncosted...)
					slices.Sort(got)
					assert.Equal(t, want, got, "%s %v %d", name, dir, n)
					require.True(t, p.Picked())
					for _, rt := range p.Times {
						assert.GreaterOrEqual(t, rt.Time, p.Pick.Time, "%s %v %d: %v cheaper than the pick", name, dir, n, rt.Route)
						if _, copied := rt.Route.Path(); !copied {
							cost, ok := prof.RouteCost(rt.Route, dir)
							require.True(t, ok)
							assert.Equal(t, cost.Time(n), rt.Time, "%v", rt.Route)
						}
					}
					assert.Contains(t, p.Reason, p.Pick.Route.String()+" is the cheapest")
					for _, host := range []struct {
						kinds  []transfer.Memory
						side   transfer.Side
						mapped bool
					}{
						{[]transfer.Memory{transfer.MemoryPageable}, transfer.InPageable, false},
						{[]transfer.Memory{transfer.MemoryPinned}, transfer.InPinned, false},
						{[]transfer.Memory{transfer.MemoryPinned, transfer.MemoryMapped}, transfer.InPinned, true},
					} {
						if inPlace && host.side == transfer.InPageable {
							continue // PlanHost knows no in-place route
						}
						ch, err := c.PlanHost(host.side, host.mapped, dir, n)
						require.NoError(t, err)
						among := p.Among(host.kinds...)
						if !among.Picked() {
							continue // no figure for any (mapped on a GPU's defaults): PlanHost falls back
						}
						pick, ok := among.Pick.Route.Path()
						require.True(t, ok)
						assert.Equal(t, ch.Path, pick, "%s %v %d %v", name, dir, n, host.kinds)
					}
				}
			}
		}
	}
}

// The managed routes' costs decide: a profile in which a prefetch is the
// cheapest way picks it overall and among the managed routes; a route
// without a cost is listed as such and never picked; a profile without
// any cost has no pick and says so; StagedMin leaves staged and
// registered out as PlanHost does.
func TestPlanRoutesPicks(t *testing.T) {
	r := rand.For(t)
	dev := testdev.Open(t)
	n := 1<<20 + r.Int64N(64<<20)
	fast := transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	require.NoError(t, fast.SetRouteCost(transfer.RouteManagedPrefetch, accounting.HtoD, transfer.Cost{Latency: time.Microsecond, GBps: 1000}, 0))
	onlyPinned := &transfer.Profile{Format: transfer.ProfileFormat, Version: transfer.ProfileVersion, Model: "m", Source: "test"}
	require.NoError(t, onlyPinned.SetCost(transfer.PathPinned, accounting.HtoD, transfer.Cost{Latency: time.Microsecond, GBps: 1 + r.Float64()*50}, 0))
	for _, tc := range []struct {
		name     string
		prof     *transfer.Profile
		opts     []transfer.Option
		pick     transfer.Route
		managed  transfer.Route // the pick among the managed routes; RouteDirect: none
		uncosted []transfer.Route
		reason   string
	}{
		{name: "prefetch cheapest", prof: fast, pick: transfer.RouteManagedPrefetch, managed: transfer.RouteManagedPrefetch,
			uncosted: []transfer.Route{transfer.RouteMapped}, reason: "managed-prefetch is the cheapest, its data held in managed memory"},
		{name: "only pinned costed", prof: onlyPinned, pick: transfer.RoutePinned, managed: transfer.RouteDirect,
			uncosted: []transfer.Route{transfer.RouteDirect, transfer.RouteStaged, transfer.RouteRegistered, transfer.RouteMapped,
				transfer.RouteManaged, transfer.RouteManagedPrefetch, transfer.RouteManagedReadMostly},
			reason: "no cost for direct, staged, registered, mapped, managed, managed-prefetch, managed-read-mostly"},
		{name: "under StagedMin", prof: fast, opts: []transfer.Option{transfer.WithOptions(transfer.Options{StagedMin: 2 * n})}, pick: transfer.RouteManagedPrefetch,
			managed: transfer.RouteManagedPrefetch, uncosted: []transfer.Route{transfer.RouteMapped}, reason: "staged and registered left out under"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := transfer.New(dev, transfer.WithProfile(tc.prof))
			require.NoError(t, err)
			defer c.Close()
			p, err := c.PlanRoutes(accounting.HtoD, n, false, tc.opts...)
			require.NoError(t, err)
			assert.Equal(t, tc.pick, p.Pick.Route)
			assert.Equal(t, tc.uncosted, p.Uncosted)
			assert.Contains(t, p.Reason, tc.reason)
			if len(tc.opts) > 0 {
				for _, left := range []transfer.Route{transfer.RouteStaged, transfer.RouteRegistered} {
					_, ok := p.Time(left)
					assert.False(t, ok, "%v", left)
				}
			}
			m := p.Among(transfer.MemoryManaged)
			if tc.managed == transfer.RouteDirect {
				assert.False(t, m.Picked())
				assert.Contains(t, m.Reason, "no route has a cost")
				return
			}
			require.True(t, m.Picked())
			assert.Equal(t, tc.managed, m.Pick.Route)
			for _, rt := range m.Times {
				assert.Equal(t, transfer.MemoryManaged, rt.Route.Memory())
			}
		})
	}
	empty, err := transfer.New(dev, transfer.WithProfile(onlyPinned))
	require.NoError(t, err)
	defer empty.Close()
	p, err := empty.PlanRoutes(accounting.DtoH, n, true)
	require.NoError(t, err)
	assert.False(t, p.Picked(), "no DtoH cost at all")
	assert.Contains(t, p.Reason, "no route has a cost")
}

// PlanRoutes refuses what no transfer between host and device is.
func TestPlanRoutesRefuses(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer c.Close()
	for _, bad := range []struct {
		dir accounting.Direction
		n   int64
	}{{accounting.DtoD, 1}, {accounting.Peer, 1}, {accounting.HtoD, -1}, {accounting.NumDirections, 1}} {
		_, err := c.PlanRoutes(bad.dir, bad.n, false)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "%+v", bad)
	}
	_, err = c.PlanRoutes(accounting.HtoD, 1, false, transfer.WithRing(-1, 0, 0))
	assert.Error(t, err)
	var nilCopier *transfer.Copier
	_, err = nilCopier.PlanRoutes(accounting.HtoD, 1, false)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

// Each route has a name that parses back, a kind of memory, and a Copier
// path for the first five only; read-mostly moves HtoD only.
func TestRoutes(t *testing.T) {
	for _, rt := range transfer.Routes() {
		got, err := transfer.ParseRoute(rt.String())
		require.NoError(t, err)
		assert.Equal(t, rt, got)
		path, copied := rt.Path()
		assert.Equal(t, rt <= transfer.RouteMapped, copied, "%v", rt)
		if copied {
			assert.Equal(t, rt.String(), path.String(), "a copied route is named as its path")
		}
		assert.True(t, rt.Moves(accounting.HtoD))
		assert.Equal(t, rt != transfer.RouteManagedReadMostly, rt.Moves(accounting.DtoH), "%v", rt)
		assert.False(t, rt.Moves(accounting.DtoD))
	}
	_, err := transfer.ParseRoute("teleport")
	assert.ErrorIs(t, err, transfer.ErrUnknownName)
	assert.ErrorContains(t, err, `unknown route "teleport" (want one of direct, staged,`)
	afterLast := transfer.Routes()[len(transfer.Routes())-1] + 1
	assert.Equal(t, "Route(9)", afterLast.String())
	assert.False(t, afterLast.Moves(accounting.HtoD))
	for rt, kind := range map[transfer.Route]transfer.Memory{
		transfer.RouteStaged: transfer.MemoryPageable, transfer.RoutePageableInPlace: transfer.MemoryPageable,
		transfer.RoutePinned: transfer.MemoryPinned, transfer.RouteMapped: transfer.MemoryMapped,
		transfer.RouteManagedReadMostly: transfer.MemoryManaged,
	} {
		assert.Equal(t, kind, rt.Memory(), "%v", rt)
	}
	assert.Equal(t, "mapped pinned", transfer.MemoryMapped.String())
	assert.Equal(t, "Memory(4)", (transfer.MemoryManaged + 1).String())
}

// A transfer of nearly every byte int64 can count is modelled as no
// cheaper than its path's DMA alone: the registration a fresh registered
// copy adds, over the pages the bytes span, saturates instead of wrapping
// round to a negative time that would make it the pick.
func TestPlanRoutesHugeSizes(t *testing.T) {
	dev := testdev.Open(t)
	for name, prof := range map[string]*transfer.Profile{
		"H100": transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"}),
		"sim":  transfer.DefaultProfile(driver.Info{Backend: "sim", Model: "sim"}),
	} {
		c, err := transfer.New(dev, transfer.WithProfile(prof))
		require.NoError(t, err)
		defer c.Close()
		for _, n := range []int64{1 << 62, math.MaxInt64 - 4096, math.MaxInt64 - 1, math.MaxInt64} {
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				p, err := c.PlanRoutes(dir, n, true)
				require.NoError(t, err)
				require.True(t, p.Picked())
				for _, rt := range p.Times {
					assert.GreaterOrEqual(t, rt.Time, time.Duration(0), "%s %v %d: %v", name, dir, n, rt.Route)
					path, copied := rt.Route.Path()
					if !copied {
						continue
					}
					cost, ok := prof.Cost(path, dir)
					require.True(t, ok)
					assert.GreaterOrEqual(t, rt.Time, cost.Time(n), "%s %v %d: %v cheaper than its DMA", name, dir, n, rt.Route)
				}
			}
		}
	}
}
