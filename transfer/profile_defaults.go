package transfer

import (
	"errors"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// The sources of the default profiles.
const (
	sourceH100 = "defaults: figures of cuarray's H100 run of 2026-11-23"
	sourcePCIe = "defaults: a PCIe 4.0 ×16 GPU assumed, not measured"
	sourceSim  = "defaults: sim, which has no DMA engine"
)

// registrationGuess is what registering memory costs in the default
// profiles of GPUs: a guess (see DefaultProfile).
func registrationGuess() Cost { return Cost{Latency: 50 * time.Microsecond, GBps: 4} }

// DefaultProfile returns the profile of a device model cuarray has figures
// for, and otherwise the generic one of its backend:
//
//   - an H100: the figures of cuarray's run on an H100 80GB HBM3 (PCIe
//     5.0) of 2026-11-23, fitted as latency + bytes/bandwidth (medians:
//     pinned 9.8 µs at 4 KiB and 54.9 GB/s at 64 MiB, direct 13.6 GB/s at
//     1 MiB and 16.0 at 64 MiB, staged 10.5 and 29.4, host memcpy 10.4
//     GB/s on one thread to 45.0 on 16);
//   - another CUDA device: a PCIe 4.0 ×16 link, assumed;
//   - sim: every copy is a memory copy in this process, so staging only
//     adds one.
//
// Paths without a figure (mapped on a GPU: its first figures were not
// honest) are never picked by the planner from a default profile.
//
// The managed routes (RouteManaged, RouteManagedPrefetch,
// RouteManagedReadMostly) and RoutePageableInPlace have guessed costs,
// derived from the pinned path's (setManagedGuesses); PlanRoutes
// compares them with the Copier's paths.
//
// The registered path's DMA is the pinned path's (the memory is
// page-locked alike). What registering costs (cuMemHostRegister and the
// cuMemHostUnregister that follows) has not been measured on any GPU yet:
// the defaults are conservative guesses, 50 µs plus 4 GB/s of pages, so
// that the planner registers memory only when it is registered already
// or when a copy is large enough that the guess still pays (on the H100
// defaults, never against staged for one copy: 1 GiB would take about
// 290 ms registered and 35 ms staged); `cuarray bench` figures should
// replace them.
func DefaultProfile(info driver.Info) *Profile {
	p, _ := defaultProfile(info) // its setters accept every figure: TestDefaultProfileFiguresAccepted
	return p
}

// defaultProfile is DefaultProfile with the figures its setters refused,
// none for any device.
func defaultProfile(info driver.Info) (*Profile, error) {
	var refused []error
	keep := func(err error) {
		if err != nil {
			refused = append(refused, err)
		}
	}
	p := &Profile{Format: ProfileFormat, Version: ProfileVersion, Device: info.Name, Model: info.Model, Backend: info.Backend}
	us := func(v float64) time.Duration { return time.Duration(v * 1e3) }
	set := func(path Path, lat time.Duration, htod, dtoh float64) {
		keep(p.SetCost(path, accounting.HtoD, Cost{lat, htod}, 0))
		keep(p.SetCost(path, accounting.DtoH, Cost{lat, dtoh}, 0))
	}
	switch {
	case info.Backend == "sim":
		p.Source = sourceSim
		set(PathDirect, us(1), 8, 8)
		set(PathPinned, us(1), 8, 8)
		set(PathStaged, us(20), 4, 4)
		set(PathMapped, us(10), 8, 8)
		set(PathRegistered, us(1), 8, 8)              // as pinned: a tie, so direct (first) wins; sim has no DMA for registering to win
		keep(p.SetRegistrationCost(Cost{us(2), 100})) // sim records a range: cheap
		keep(p.SetCost(PathD2D, accounting.DtoD, Cost{us(1), 8}, 0))
		keep(p.SetCost(PathPeer, accounting.Peer, Cost{us(1), 8}, 0))
		keep(setManagedGuesses(p, simPageFault, simPageFault))
		keep(p.SetRouteCost(RoutePageableInPlace, accounting.HtoD, Cost{us(10), 8}, 0)) // a kernel reads host memory, as the mapped path's does
		keep(p.SetRouteCost(RoutePageableInPlace, accounting.DtoH, Cost{us(10), 8}, 0))
	case strings.Contains(info.Model, "H100"):
		p.Source = sourceH100
		p.Date = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		keep(p.SetCost(PathDirect, accounting.HtoD, Cost{us(11.9), 16.06}, 0))
		keep(p.SetCost(PathDirect, accounting.DtoH, Cost{us(11.9), 17.70}, 0))
		keep(p.SetCost(PathPinned, accounting.HtoD, Cost{us(9.7), 55.3}, 0))
		keep(p.SetCost(PathPinned, accounting.DtoH, Cost{us(9.7), 54.97}, 0))
		keep(p.SetCost(PathRegistered, accounting.HtoD, Cost{us(9.7), 55.3}, 0)) // the pinned DMA; registering is a guess, not measured
		keep(p.SetCost(PathRegistered, accounting.DtoH, Cost{us(9.7), 54.97}, 0))
		keep(p.SetRegistrationCost(registrationGuess()))
		keep(p.SetCost(PathStaged, accounting.HtoD, Cost{us(65.6), 30.3}, 0))
		keep(p.SetCost(PathStaged, accounting.DtoH, Cost{us(65.6), 34.15}, 0))
		keep(p.SetCost(PathD2D, accounting.DtoD, Cost{us(16), 1443}, 0))
		p.HostCopy = []HostCopy{{1, 10.35}, {2, 19.68}, {4, 31.75}, {8, 28.04}, {16, 44.99}}
		keep(setManagedGuesses(p, gpuPageFaultHtoD, gpuPageFaultDtoH))
		keep(setPageableInPlaceGuess(p))
	default:
		p.Source = sourcePCIe
		set(PathDirect, us(12), 12, 12)
		set(PathPinned, us(10), 25, 25)
		set(PathStaged, us(60), 20, 20)
		set(PathRegistered, us(10), 25, 25)
		keep(p.SetRegistrationCost(registrationGuess()))
		keep(p.SetCost(PathD2D, accounting.DtoD, Cost{us(10), 500}, 0))
		p.HostCopy = []HostCopy{{1, 8}}
		keep(setManagedGuesses(p, gpuPageFaultHtoD, gpuPageFaultDtoH))
		keep(setPageableInPlaceGuess(p))
	}
	if p.Model == "" {
		p.Model = "unknown"
	}
	return p, errors.Join(refused...)
}

// The managed routes' and pageable-in-place's default costs are guesses:
// no GPU run has measured them yet (`cuarray bench -calibrate -managed
// all` measures the managed ones and replaces them). They follow from the
// pinned path's cost, as setManagedGuesses says, and from what a fault on
// one 4 KiB page costs:
//
//   - gpuPageFaultHtoD, 0.5 µs: a kernel's faults are serviced by the
//     driver in batches, a few hundred pages for some 100 µs;
//   - gpuPageFaultDtoH, 2 µs: the host faults page by page, each a trip
//     through the kernel's fault handler and the driver;
//   - simPageFault, 0.1 µs: without a modelled link, sim's faults are
//     its own bookkeeping of a page's residency (on-demand measured about
//     as fast as pinned at 1 MiB on sim: `cuarray bench -paths pinned
//     -managed all`); a modelled link (sim.Link) charges the GPU guesses
//     above, which calibrating on it measures into the profile.
const (
	gpuPageFaultHtoD = 500 * time.Nanosecond
	gpuPageFaultDtoH = 2 * time.Microsecond
	simPageFault     = 100 * time.Nanosecond
)

// faultPage is the page a managed route's model faults on: 4 KiB, the
// page sim and the emulated driver migrate, and the smallest a GPU's
// driver moves.
const faultPage = 4 << 10

// setManagedGuesses sets p's managed routes from its pinned costs, where
// it has them, a fault on one 4 KiB page costing faultHtoD or faultDtoH
// (guesses, see gpuPageFaultHtoD):
//
//   - managed (on demand) pays a fault per 4 KiB page touched, then moves
//     the page at the pinned path's bandwidth. The fault latency is folded
//     into the bandwidth, so that the cost stays a latency plus bytes over
//     a rate, the line a calibration fits: 4 KiB over (the fault + 4 KiB
//     at the pinned rate). Its latency is the pinned path's plus one fault;
//   - managed-prefetch moves the pages at the pinned bandwidth after one
//     cuMemPrefetchAsync, 10 µs (a guess) added to the pinned latency;
//   - managed-read-mostly (HtoD) costs the first time what on demand
//     costs: each page faults and is copied (a duplicate) to the device.
func setManagedGuesses(p *Profile, faultHtoD, faultDtoH time.Duration) error {
	var refused []error
	for _, d := range []struct {
		dir   accounting.Direction
		fault time.Duration
	}{{accounting.HtoD, faultHtoD}, {accounting.DtoH, faultDtoH}} {
		pinned, ok := p.Cost(PathPinned, d.dir)
		if !ok {
			continue
		}
		onDemand := Cost{Latency: pinned.Latency + d.fault, GBps: faultPage / (float64(d.fault) + faultPage/pinned.GBps)}
		refused = append(refused, p.SetRouteCost(RouteManaged, d.dir, onDemand, 0),
			p.SetRouteCost(RouteManagedPrefetch, d.dir, Cost{Latency: pinned.Latency + 10*time.Microsecond, GBps: pinned.GBps}, 0))
		if RouteManagedReadMostly.Moves(d.dir) {
			refused = append(refused, p.SetRouteCost(RouteManagedReadMostly, d.dir, onDemand, 0))
		}
	}
	return errors.Join(refused...)
}

// setPageableInPlaceGuess sets the cost of a kernel reading or writing
// pageable memory in place on a GPU to on demand's (a guess): where the
// device reaches pageable memory through the kernel's heterogeneous
// memory management, the driver migrates its pages on fault as it does
// managed memory's.
func setPageableInPlaceGuess(p *Profile) error {
	var refused []error
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		if c, ok := p.RouteCost(RouteManaged, dir); ok {
			refused = append(refused, p.SetRouteCost(RoutePageableInPlace, dir, c, 0))
		}
	}
	return errors.Join(refused...)
}
