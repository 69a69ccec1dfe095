package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// Tolerance is how far above its ceiling a figure may be before it is
// refused: 5 %, for clock granularity, rounding and a ceiling taken from a
// data sheet's round number.
const Tolerance = 0.05

// SimCeilingFactor is the multiple of the host's own memory copy (see
// Report.HostCopy) taken as the sim backend's ceiling where it models no
// link. Every sim copy is a copy in host memory, so it cannot beat the
// host's copy of the same size: cache-resident sizes at cache speed,
// sizes well above the last-level cache at memory speed. The ceiling
// follows that curve (Ceiling.BySize), so a large copy is held to the
// memory's speed, not the cache's; the factor of 4 leaves room for a busy
// machine's noisy curve (measured while others load the memory, copies
// then run when they do not) and for the staged path's copies on several
// goroutines, while still refusing a copy timed before its work was done.
const SimCeilingFactor = 4

// The bounds taken when nothing better is known: no GPU's host link is
// faster than NVLink-C2C's 450 GB/s per direction (GH200), and no GPU's
// memory moves more than 8 TB/s (B200's HBM3e).
const (
	fastestHostLinkGBps = 450
	fastestMemoryGBps   = 8000
)

// Ceiling is the most a figure can physically be.
type Ceiling struct {
	GBps   float64 `json:"GB_per_s"` // 10^9 bytes per second, one direction; with BySize, the largest of its ceilings
	Limit  string  `json:"limit"`    // what bounds the figure: "host link", "device memory"
	Source string  `json:"source"`   // where the number comes from
	// BySize, when set, makes the ceiling depend on the copy's size: a
	// copy of n bytes is bounded by the last entry whose FromBytes is at
	// most n (the first is from 0). On sim, the host's memory copy curve.
	BySize []SizeCeiling `json:"by_size,omitempty"`
}

// SizeCeiling is the ceiling of copies of at least FromBytes bytes, up to
// the next entry's.
type SizeCeiling struct {
	FromBytes int64   `json:"from_bytes"`
	GBps      float64 `json:"GB_per_s"`
}

// At returns the ceiling of a copy of n bytes: c itself when c does not
// depend on the size, else its entry for n, without BySize.
func (c Ceiling) At(n int64) Ceiling {
	if len(c.BySize) == 0 {
		return c
	}
	out := c
	out.BySize = nil
	for _, s := range c.BySize {
		if s.FromBytes <= n {
			out.GBps = s.GBps
		}
	}
	return out
}

func (c Ceiling) String() string {
	if len(c.BySize) > 0 {
		parts := make([]string, len(c.BySize))
		for i, s := range c.BySize {
			parts[i] = fmt.Sprintf("%s GB/s from %s", gbpsText(s.GBps), accounting.FormatBytes(s.FromBytes))
		}
		return fmt.Sprintf("the %s's ceiling by copy size of %s (%s)", c.Limit, strings.Join(parts, ", "), c.Source)
	}
	return fmt.Sprintf("the %s's ceiling of %s GB/s (%s)", c.Limit, gbpsText(c.GBps), c.Source)
}

// simCeiling is the ceiling of sim copies where no link is modelled:
// SimCeilingFactor × the host's copy curve, each size held to the
// fastest copy measured at that size or above (a slow measurement at one
// size, on a loaded machine, does not lower its ceiling below a larger
// size's).
func simCeiling(limit string, curve []MemoryCopy) Ceiling {
	c := Ceiling{Limit: limit, BySize: make([]SizeCeiling, len(curve))}
	fastest := 0.0
	for i := len(curve) - 1; i >= 0; i-- {
		fastest = max(fastest, curve[i].GBps)
		c.BySize[i] = SizeCeiling{curve[i].Bytes, SimCeilingFactor * fastest}
	}
	c.BySize[0].FromBytes = 0
	c.GBps = c.BySize[0].GBps
	last := curve[len(curve)-1]
	c.Source = fmt.Sprintf("sim: %d × this host's memory copy at the copy's size, %s GB/s at %s (out of cache) to %s GB/s at %s",
		SimCeilingFactor, gbpsText(last.GBps), accounting.FormatBytes(last.Bytes), gbpsText(curve[0].GBps), accounting.FormatBytes(curve[0].Bytes))
	return c
}

// gbpsText formats a rate in GB/s: two decimals, or three significant
// digits below 0.01.
func gbpsText(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Ceilings are a run's physical limits: the host link bounds the paths
// between host and device (direct, pinned, staged, mapped), the device's
// memory the device-to-device path.
type Ceilings struct {
	HostLink Ceiling `json:"host_link"`
	DtoD     Ceiling `json:"device_to_device"`
}

// For returns the ceiling of a copy in direction dir, and false for a
// direction without one (host to host: Go's own copy, the reference).
func (c Ceilings) For(dir string) (Ceiling, bool) {
	switch dir {
	case accounting.HtoD.String(), accounting.DtoH.String():
		return c.HostLink, true
	case accounting.DtoD.String():
		return c.DtoD, true
	case BidirDirection: // both directions at once: the link's two ways together
		both := c.HostLink
		both.GBps *= 2
		both.BySize = slices.Clone(both.BySize)
		for i := range both.BySize {
			both.BySize[i].GBps *= 2
		}
		both.Limit += " both ways"
		return both, both.GBps > 0
	}
	return Ceiling{}, false
}

// PCIeFor returns the host link bandwidth per direction, in GB/s, of a GPU
// model it knows (PCIe generation × 16 lanes, theoretical; NVLink-C2C for
// the Grace Hopper superchip), else 0.
func PCIeFor(model string) float64 {
	for _, m := range []struct {
		name string
		gbps float64
	}{{"GH200", fastestHostLinkGBps}, {"H200", 64}, {"H100", 64}, {"L40", 32}, {"A100", 32}, {"A10", 32}, {"V100", 16}, {"T4", 16}} {
		if strings.Contains(model, m.name) {
			return m.gbps
		}
	}
	return 0
}

// CeilingsFor returns the ceilings of a run on a device described by info:
//
//   - host link: pcieGBps when positive (Config.PCIe, `-pcie`), else the
//     device's Info.HostLinkBandwidth (on sim, its modelled link), else
//     PCIeFor(info.Model), else on sim SimCeilingFactor × the host's
//     memory copy at the copy's size (hostCopy, measureHostCopy), else the
//     fastest host link there is;
//   - device to device: half of Info.MemoryBandwidth (a copy reads and
//     writes every byte), else on sim SimCeilingFactor × the host's memory
//     copy at the copy's size, else half of the fastest device memory
//     there is.
//
// hostCopy is the host's memory copy curve, sizes ascending.
func CeilingsFor(info driver.Info, pcieGBps float64, hostCopy []MemoryCopy) Ceilings {
	const link, mem = "host link", "device memory"
	sim := info.Backend == "sim" && len(hostCopy) > 0
	var c Ceilings
	switch {
	case pcieGBps > 0:
		c.HostLink = Ceiling{GBps: pcieGBps, Limit: link, Source: "given as the PCIe bandwidth, -pcie"}
	case info.HostLinkBandwidth > 0 && info.Backend == "sim":
		c.HostLink = Ceiling{GBps: info.HostLinkBandwidth / 1e9, Limit: link, Source: "the device's Info: sim's modelled link, link="}
	case info.HostLinkBandwidth > 0:
		c.HostLink = Ceiling{GBps: info.HostLinkBandwidth / 1e9, Limit: link, Source: "the device's Info"}
	case PCIeFor(info.Model) > 0:
		c.HostLink = Ceiling{GBps: PCIeFor(info.Model), Limit: link, Source: "known model " + info.Model}
	case sim:
		c.HostLink = simCeiling(link, hostCopy)
	default:
		c.HostLink = Ceiling{GBps: fastestHostLinkGBps, Limit: link, Source: "model unknown: no GPU's host link is faster (NVLink-C2C)"}
	}
	switch {
	case info.MemoryBandwidth > 0:
		c.DtoD = Ceiling{GBps: info.MemoryBandwidth / 2 / 1e9, Limit: mem,
			Source: fmt.Sprintf("half of the device's %.0f GB/s: a copy reads and writes every byte", info.MemoryBandwidth/1e9)}
	case sim:
		c.DtoD = simCeiling(mem, hostCopy)
	default:
		c.DtoD = Ceiling{GBps: fastestMemoryGBps / 2, Limit: mem,
			Source: fmt.Sprintf("bandwidth unknown: half of %d GB/s, no GPU's memory is faster", fastestMemoryGBps)}
	}
	return c
}

// ErrImpossible is what the error of a run in which a figure is above its
// ceiling matches (errors.Is); the error is an *ImpossibleError.
var ErrImpossible = errors.New("a figure is above its physical ceiling")

// ImpossibleError lists the measurements of a run with figures that
// cannot be true.
type ImpossibleError struct {
	// Figures has a line per measurement (Result.Impossible): what was
	// measured, its figures above the ceiling, and the ceiling.
	Figures []string
	// all names every figure in Error (a calibration has no table to
	// show the rest).
	all bool
}

// Error names the figures and ceilings of the first three measurements
// and counts the rest.
func (e *ImpossibleError) Error() string {
	n := "1 measurement"
	if len(e.Figures) != 1 {
		n = fmt.Sprintf("%d measurements", len(e.Figures))
	}
	shown := 3
	if e.all {
		shown = len(e.Figures)
	}
	list := strings.Join(e.Figures[:min(len(e.Figures), shown)], "; ")
	if len(e.Figures) > shown {
		list += fmt.Sprintf("; and %d more (see the table)", len(e.Figures)-shown)
	}
	return fmt.Sprintf("figures that cannot be true (more than %.0f%% above their ceiling) in %s: %s", Tolerance*100, n, list)
}

// Is makes errors.Is(err, ErrImpossible) true.
func (e *ImpossibleError) Is(target error) bool { return target == ErrImpossible }

// check fills in q's ceiling and, when any of its figures is above it,
// q.Impossible: the median, the fastest repeat and the ledger's (bytes
// over the seconds it recorded for the timed copies; bytes recorded in no
// time at all are refused too).
func (q *Result) check(c Ceilings) {
	q.Impossible = ""
	ceil, ok := c.For(q.Direction)
	if !ok {
		q.Ceiling = nil
		return
	}
	ceil = ceil.At(q.Size)
	q.Ceiling = &ceil
	limit := ceil.GBps * (1 + Tolerance)
	var figures []string
	if q.GBps > limit {
		figures = append(figures, "the median of "+gbpsText(q.GBps)+" GB/s")
	}
	if q.EventGBps > limit {
		figures = append(figures, "the event-timed median's "+gbpsText(q.EventGBps)+" GB/s")
	}
	if q.MaxGBps > limit {
		figures = append(figures, "the fastest repeat's "+gbpsText(q.MaxGBps)+" GB/s")
	}
	if l := q.Ledger; l != nil && l.Bytes > 0 && !l.Untimed {
		switch g := l.GBps(); {
		case l.Seconds <= 0:
			figures = append(figures, fmt.Sprintf("the ledger's %s recorded in 0 s", accounting.FormatBytes(l.Bytes)))
		case g > limit:
			figures = append(figures, fmt.Sprintf("the ledger's %s GB/s (%s in %.6f s)", gbpsText(g), accounting.FormatBytes(l.Bytes), l.Seconds))
		}
	}
	if len(figures) == 0 {
		return
	}
	list, verb := figures[0], "is"
	if n := len(figures); n > 1 {
		list, verb = strings.Join(figures[:n-1], ", ")+" and "+figures[n-1], "are"
	}
	q.Impossible = fmt.Sprintf("%s %s %s: %s %s above %v", q.Path, q.Direction, accounting.FormatBytes(q.Size), list, verb, ceil)
}

// Check compares every figure of the report with its ceiling (r.Ceilings)
// and notes in each result's Impossible the figures above it. It returns
// an *ImpossibleError naming each such figure with its ceiling, or nil
// when every figure is possible.
func (r *Report) Check() error {
	var bad []string
	for i := range r.Results {
		q := &r.Results[i]
		q.check(r.Ceilings)
		if q.Impossible != "" {
			bad = append(bad, q.Impossible)
		}
	}
	if len(bad) > 0 {
		return &ImpossibleError{Figures: bad}
	}
	return nil
}

// Possible reports whether every figure of the report is within its ceiling.
func (r *Report) Possible() bool {
	for _, q := range r.Results {
		if q.Impossible != "" {
			return false
		}
	}
	return true
}
