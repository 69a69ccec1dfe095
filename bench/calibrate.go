package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/transfer"
)

// CalibrateSizes are the copy sizes Calibrate fits its lines to by default.
var CalibrateSizes = []int64{4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20}

// CalibrateConfig says what Calibrate measures. Zero fields take the defaults.
type CalibrateConfig struct {
	Sizes []int64 // default CalibrateSizes
	// Paths are the paths measured (default: direct, pinned, staged, d2d,
	// and mapped where the device maps host memory).
	Paths []transfer.Path
	// Managed are the managed paths measured beside Paths (none unless
	// told; ManagedPaths are all of them), each fitted as a path is and
	// saved under its route's name (transfer.RouteManaged, ...), so that
	// the planner's PlanRoutes compares measured costs. A prefetch on a
	// device without concurrent managed access is left out, its default
	// cost with it.
	Managed  []ManagedPath
	Repeats  int       // timed copies per path, direction and size (default 5): their median is fitted
	Progress io.Writer // a line per step, when set
	// PCIe is the host link's bandwidth per direction in GB/s, the ceiling
	// of the host-device figures as Config.PCIe; 0: the device's own (see
	// CeilingsFor).
	PCIe float64
}

// Calibrate measures the cost model of dev's transfer paths and returns it
// as a profile for devices of its model, ready to Save where the planner
// finds it (transfer.ProfilePath):
//
//  1. the host's memory copy from pageable into pinned memory at the
//     largest size (up to 64 MiB) on 1, 2, 4, … GOMAXPROCS goroutines
//     (MemcpyCeiling);
//  2. the staging ring: the shape a Copier sizes from those rates, and a
//     few around it (half and twice as deep, smaller chunks), each timed
//     both ways at that size; the fastest is kept;
//  3. every path and direction at each size, through that ring, the
//     median of Repeats, fitted as latency + bytes/bandwidth (FitCost).
//
// Every figure of the profile is checked against its physical ceiling
// (CeilingsFor, with cfg.PCIe) before it is returned: each size's median
// at its size (Tolerance), and the fitted bandwidth at the largest size
// (FitTolerance). A profile
// with a figure more than Tolerance above its ceiling is not returned:
// the error is an *ImpossibleError (errors.Is ErrImpossible) naming every
// such figure and its ceiling.
func Calibrate(dev driver.Device, cfg CalibrateConfig) (*transfer.Profile, error) {
	if cfg.PCIe < 0 || math.IsNaN(cfg.PCIe) || math.IsInf(cfg.PCIe, 0) {
		return nil, fmt.Errorf("bench: calibrate: PCIe bandwidth %v GB/s: want a positive figure, or 0 for the device's: %w", cfg.PCIe, driver.ErrInvalidValue)
	}
	info := dev.Info()
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = CalibrateSizes
	}
	if cfg.Repeats <= 0 {
		cfg.Repeats = 5
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = []transfer.Path{transfer.PathDirect, transfer.PathPinned, transfer.PathStaged, transfer.PathD2D}
		if info.CanMapHost {
			cfg.Paths = append(cfg.Paths, transfer.PathMapped)
		}
	}
	_, total, err := dev.MemInfo()
	if err != nil {
		return nil, fmt.Errorf("bench: calibrate: %w", err)
	}
	for _, n := range cfg.Sizes {
		if n <= 0 {
			return nil, fmt.Errorf("bench: calibrate: size %d: %w", n, driver.ErrInvalidValue)
		}
		if n > total { // refused before the host side (as large, filled with random bytes) is made
			return nil, fmt.Errorf("bench: calibrate: size %s is more than the device's %s: %w",
				accounting.FormatBytes(n), accounting.FormatBytes(total), driver.ErrInvalidValue)
		}
	}
	for _, p := range cfg.Paths {
		if p == transfer.PathAuto || p == transfer.PathPeer {
			return nil, fmt.Errorf("bench: calibrate: path %v is not measured: %w", p, driver.ErrInvalidValue)
		}
	}
	for _, p := range cfg.Managed {
		if _, err := ParseManagedPath(string(p)); err != nil {
			return nil, fmt.Errorf("bench: calibrate: %w", err)
		}
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "calibrate: "+format+"\n", args...)
		}
	}
	sizes := slices.Clone(cfg.Sizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	large := min(sizes[len(sizes)-1], 64<<20)

	if info.HostLinkBandwidth > 0 { // a slow modelled link (sim's link=, -pcie) takes its time: say how long
		var sum int64
		for _, n := range sizes {
			sum += n
		}
		moved := 2 * int64(cfg.Repeats) * sum * int64(len(cfg.Paths))
		if slices.Contains(cfg.Paths, transfer.PathStaged) {
			moved += 4 * 2 * int64(cfg.Repeats) * large // the ring's shapes, both ways
		}
		say("the host link of %s GB/s moves the %s of this calibration in at least %v", gbpsText(info.HostLinkBandwidth/1e9),
			accounting.FormatBytes(moved), time.Duration(float64(moved)/info.HostLinkBandwidth*1e9).Round(time.Second))
	}
	prof := transfer.DefaultProfile(info)
	prof.Source = fmt.Sprintf("cuarray bench -calibrate: %d sizes from %s to %s, the median of %d copies each",
		len(sizes), accounting.FormatBytes(sizes[0]), accounting.FormatBytes(sizes[len(sizes)-1]), cfg.Repeats)
	prof.Date = time.Now().UTC()
	curve, err := measureHostCopy(info.Backend == "sim")
	if err != nil {
		return nil, err
	}
	ceilings := CeilingsFor(info, cfg.PCIe, curve)
	var impossible []string
	var refused []error // figures the profile refused (out of its range)
	if prof.HostCopy, err = MemcpyCeiling(dev, max(large, 1<<20), ThreadCounts(), cfg.Repeats); err != nil {
		return nil, err
	}
	for _, h := range prof.HostCopy {
		say("host memcpy pageable→pinned, %d goroutine(s): %.2f GB/s", h.Threads, h.GBps)
	}
	if slices.Contains(cfg.Paths, transfer.PathStaged) {
		if prof.Ring, err = bestRing(dev, prof, large, cfg.Repeats, say); err != nil {
			return nil, err
		}
	}
	base := *prof // the Copier keeps its profile: prof's costs change below
	c, err := transfer.New(dev, transfer.WithProfile(&base))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	prof.Costs = nil
	for _, p := range cfg.Paths {
		for _, dir := range directions(p) {
			times := make([]time.Duration, len(sizes))
			for i, n := range sizes {
				res, err := measurePath(c, p, dir, randomBytes(n), cfg.Repeats, false)
				if err != nil {
					return nil, fmt.Errorf("bench: calibrate %v %v %s: %w", p, dir, accounting.FormatBytes(n), err)
				}
				times[i] = time.Duration(res.MedianSeconds * 1e9)
			}
			cost, fitErr, err := FitCost(sizes, times)
			if err != nil {
				return nil, fmt.Errorf("bench: calibrate %v %v: %w", p, dir, err)
			}
			if err := prof.SetCost(p, dir, cost, fitErr); err != nil {
				refused = append(refused, fmt.Errorf("%v %v: %w", p, dir, err))
			}
			say("%-6s %-4s latency %v, %.3g GB/s (fit within %.0f%%)", p, dir, cost.Latency.Round(100*time.Nanosecond), cost.GBps, fitErr*100)
			if ceil, ok := ceilings.For(dir.String()); ok {
				if s := calibratedAboveCeiling(p.String(), dir, sizes, times, cost, ceil); s != "" {
					impossible = append(impossible, s)
				}
			}
		}
	}
	if len(cfg.Managed) > 0 {
		more, refusedManaged, err := calibrateManaged(dev, prof, cfg.Managed, sizes, cfg.Repeats, ceilings, say)
		if err != nil {
			return nil, err
		}
		impossible, refused = append(impossible, more...), append(refused, refusedManaged...)
	}
	if len(impossible) > 0 {
		return nil, fmt.Errorf("bench: calibrate: %w", &ImpossibleError{Figures: impossible, all: true})
	}
	if err := errors.Join(refused...); err != nil { // a fit out of the profile's range below its ceiling
		return nil, fmt.Errorf("bench: calibrate: %w", err)
	}
	if err := prof.Validate(); err != nil {
		return nil, fmt.Errorf("bench: calibrate: %w", err)
	}
	return prof, nil
}

// FitTolerance is how far above its ceiling a calibration's fitted
// bandwidth may be before it is refused: 25 %. The fit extrapolates from
// the medians, so their noise moves it more than it moves them (a late
// wake-up from a sleep of sim's modelled link on a loaded machine lengthens
// a small copy's time and steepens the line); a fit that is wrong, as
// hundreds of GB/s on a link of 0.001, is still refused.
const FitTolerance = 0.25

// calibratedAboveCeiling names the figures of the path named p in direction dir
// above ceil: the median rate at each size (sizes[i] bytes in times[i])
// against the ceiling at that size, and the fitted bandwidth against the
// ceiling at the largest size. It returns "" when every figure is
// possible.
func calibratedAboveCeiling(p string, dir accounting.Direction, sizes []int64, times []time.Duration, cost transfer.Cost, ceil Ceiling) string {
	var figures []string
	bySize := func(c Ceiling) string { // each figure's own ceiling, where it depends on the size
		if len(ceil.BySize) == 0 {
			return ""
		}
		return fmt.Sprintf(" (ceiling %.3g GB/s)", c.GBps)
	}
	for i, n := range sizes {
		if g, at := float64(n)/times[i].Seconds()/1e9, ceil.At(n); g > at.GBps*(1+Tolerance) {
			figures = append(figures, fmt.Sprintf("the median at %s of %.3g GB/s%s", accounting.FormatBytes(n), g, bySize(at)))
		}
	}
	largest := ceil.At(sizes[len(sizes)-1])
	if cost.GBps > largest.GBps*(1+FitTolerance) {
		hint := ""
		if len(figures) == 0 { // every median is possible: the fit is not
			hint = " (the sizes are too close in time to fit a bandwidth: measure larger ones)"
		}
		figures = append(figures, fmt.Sprintf("the fitted %.3g GB/s%s%s", cost.GBps, bySize(largest), hint))
	}
	if len(figures) == 0 {
		return ""
	}
	list, verb := figures[0], "is"
	if n := len(figures); n > 1 {
		list, verb = strings.Join(figures[:n-1], ", ")+" and "+figures[n-1], "are"
	}
	return fmt.Sprintf("%s %s: %s %s above %v", p, dir, list, verb, ceil)
}

// bestRing times staged copies of n bytes both ways through the ring a
// Copier sizes from prof's host copy rates and a few shapes around it,
// and returns the fastest.
func bestRing(dev driver.Device, prof *transfer.Profile, n int64, reps int, say func(string, ...any)) (*transfer.RingShape, error) {
	c, err := transfer.New(dev, transfer.WithProfile(prof))
	if err != nil {
		return nil, err
	}
	auto := c.Ring()
	if err := c.Close(); err != nil {
		return nil, err
	}
	shapes := []transfer.RingShape{auto}
	add := func(chunk int64, chunks int) {
		s := transfer.RingShape{ChunkBytes: chunk, Chunks: min(max(chunks, 2), 64), Streams: auto.Streams}
		s.Streams = min(s.Streams, s.Chunks)
		if chunk >= 64<<10 && !slices.Contains(shapes, s) {
			shapes = append(shapes, s)
		}
	}
	add(auto.ChunkBytes/4, auto.Chunks)
	add(auto.ChunkBytes, auto.Chunks/2)
	add(auto.ChunkBytes/2, 2*auto.Chunks)
	var best *transfer.RingShape
	bestTime := time.Duration(0)
	pattern := randomBytes(n)
	for _, s := range shapes {
		p := *prof
		p.Ring = &s
		t, err := stagedTime(dev, &p, pattern, reps)
		if err != nil {
			return nil, err
		}
		say("staged ring of %d × %s on %d streams: %s both ways in %v", s.Chunks, accounting.FormatBytes(s.ChunkBytes), s.Streams,
			accounting.FormatBytes(n), t.Round(time.Microsecond))
		if best == nil || t < bestTime {
			best, bestTime = &s, t
		}
	}
	return best, nil
}

// stagedTime returns the medians of staged copies of pattern to the
// device and back through the ring of prof, added.
func stagedTime(dev driver.Device, prof *transfer.Profile, pattern []byte, reps int) (total time.Duration, err error) {
	c, err := transfer.New(dev, transfer.WithProfile(prof))
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		res, err := measurePath(c, transfer.PathStaged, dir, pattern, reps, false)
		if err != nil {
			return 0, err
		}
		total += time.Duration(res.MedianSeconds * 1e9)
	}
	return total, nil
}

// calibrateManaged measures each managed path of paths in each direction
// it moves at each size (reps moves each, measureManaged), fits its line
// and sets it in prof under the path's route; it returns the figures above
// their ceilings, as Calibrate names them, and the figures the profile
// refused (transfer.ErrProfile: out of its range).
func calibrateManaged(dev driver.Device, prof *transfer.Profile, paths []ManagedPath, sizes []int64, reps int, ceilings Ceilings,
	say func(string, ...any)) (impossible []string, refused []error, err error) {
	k, err := kernels.New(dev)
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	for _, p := range paths {
		route, err := transfer.ParseRoute(string(p))
		if err != nil {
			return nil, nil, fmt.Errorf("bench: calibrate: %w", err)
		}
		for _, dir := range p.directions() {
			if p == ManagedPrefetch && !dev.ConcurrentManagedAccess() {
				say("%s %v: not measured, this device has no concurrent managed access (which a prefetch needs)", p, dir)
				continue
			}
			times := make([]time.Duration, len(sizes))
			for i, n := range sizes {
				res, err := measureManaged(dev, k, p, dir, randomBytes(n), reps)
				if err != nil {
					return nil, nil, fmt.Errorf("bench: calibrate %s %v %s: %w", p, dir, accounting.FormatBytes(n), err)
				}
				times[i] = time.Duration(res.MedianSeconds * 1e9)
			}
			cost, fitErr, err := FitCost(sizes, times)
			if err != nil {
				return nil, nil, fmt.Errorf("bench: calibrate %s %v: %w", p, dir, err)
			}
			if err := prof.SetRouteCost(route, dir, cost, fitErr); err != nil {
				refused = append(refused, fmt.Errorf("%s %v: %w", p, dir, err))
			}
			say("%-6s %-4s latency %v, %.3g GB/s (fit within %.0f%%)", p, dir, cost.Latency.Round(100*time.Nanosecond), cost.GBps, fitErr*100)
			if ceil, ok := ceilings.For(dir.String()); ok {
				if s := calibratedAboveCeiling(string(p), dir, sizes, times, cost, ceil); s != "" {
					impossible = append(impossible, s)
				}
			}
		}
	}
	return impossible, refused, nil
}
