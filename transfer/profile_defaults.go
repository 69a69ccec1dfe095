package transfer

import (
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
// The registered path's DMA is the pinned path's (the memory is
// page-locked alike). What registering costs (cuMemHostRegister and the
// cuMemHostUnregister that follows) has not been measured on any GPU yet:
// the defaults are conservative guesses, 50 µs plus 4 GB/s of pages, so
// that the planner registers memory only when it is registered already
// or when a copy is large enough that the guess still pays (on the H100
// defaults, never against staged for one copy: 1 GiB would take about
// 290 ms registered and 35 ms staged); `cuarray bench` figures should
// replace them.
func registrationGuess() Cost { return Cost{Latency: 50 * time.Microsecond, GBps: 4} }
func DefaultProfile(info driver.Info) *Profile {
	p := &Profile{Format: ProfileFormat, Version: ProfileVersion, Device: info.Name, Model: info.Model, Backend: info.Backend}
	us := func(v float64) time.Duration { return time.Duration(v * 1e3) }
	set := func(path Path, lat time.Duration, htod, dtoh float64) {
		p.SetCost(path, accounting.HtoD, Cost{lat, htod}, 0)
		p.SetCost(path, accounting.DtoH, Cost{lat, dtoh}, 0)
	}
	switch {
	case info.Backend == "sim":
		p.Source = sourceSim
		set(PathDirect, us(1), 8, 8)
		set(PathPinned, us(1), 8, 8)
		set(PathStaged, us(20), 4, 4)
		set(PathMapped, us(10), 8, 8)
		set(PathRegistered, us(1), 8, 8)        // as pinned: a tie, so direct (first) wins; sim has no DMA for registering to win
		p.SetRegistrationCost(Cost{us(2), 100}) // sim records a range: cheap
		p.SetCost(PathD2D, accounting.DtoD, Cost{us(1), 8}, 0)
		p.SetCost(PathPeer, accounting.Peer, Cost{us(1), 8}, 0)
	case strings.Contains(info.Model, "H100"):
		p.Source = sourceH100
		p.Date = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		p.SetCost(PathDirect, accounting.HtoD, Cost{us(11.9), 16.06}, 0)
		p.SetCost(PathDirect, accounting.DtoH, Cost{us(11.9), 17.70}, 0)
		p.SetCost(PathPinned, accounting.HtoD, Cost{us(9.7), 55.3}, 0)
		p.SetCost(PathPinned, accounting.DtoH, Cost{us(9.7), 54.97}, 0)
		p.SetCost(PathRegistered, accounting.HtoD, Cost{us(9.7), 55.3}, 0) // the pinned DMA; registering is a guess, not measured
		p.SetCost(PathRegistered, accounting.DtoH, Cost{us(9.7), 54.97}, 0)
		p.SetRegistrationCost(registrationGuess())
		p.SetCost(PathStaged, accounting.HtoD, Cost{us(65.6), 30.3}, 0)
		p.SetCost(PathStaged, accounting.DtoH, Cost{us(65.6), 34.15}, 0)
		p.SetCost(PathD2D, accounting.DtoD, Cost{us(16), 1443}, 0)
		p.HostCopy = []HostCopy{{1, 10.35}, {2, 19.68}, {4, 31.75}, {8, 28.04}, {16, 44.99}}
	default:
		p.Source = sourcePCIe
		set(PathDirect, us(12), 12, 12)
		set(PathPinned, us(10), 25, 25)
		set(PathStaged, us(60), 20, 20)
		set(PathRegistered, us(10), 25, 25)
		p.SetRegistrationCost(registrationGuess())
		p.SetCost(PathD2D, accounting.DtoD, Cost{us(10), 500}, 0)
		p.HostCopy = []HostCopy{{1, 8}}
	}
	if p.Model == "" {
		p.Model = "unknown"
	}
	return p
}
