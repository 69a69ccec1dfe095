package transfer

import (
	"fmt"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// Choice is the path the planner picked for a copy and why, in one line.
type Choice struct {
	Path   Path
	Reason string
}

func (c Choice) String() string { return c.Path.String() + ": " + c.Reason }

// choose picks a path from the two sides' kinds and the size: of the
// paths that can move between these sides, the one the cost model
// (o.Profile) says is quickest, never a path it has no figure for. The
// reason is written only when explain is set (Plan): a copy needs only
// the path, and writing it costs microseconds.
func choose(dst, src Endpoint, n int64, o Options, explain bool) Choice {
	switch {
	case !explain && dst.side == OnDevice && src.side == OnDevice && dst.arr.Device() == src.arr.Device():
		return Choice{Path: PathD2D}
	case !explain && dst.side == OnDevice && src.side == OnDevice:
		return Choice{Path: PathPeer}
	case !explain && dst.side != OnDevice && src.side != OnDevice:
		return Choice{Path: PathDirect}
	case dst.side == OnDevice && src.side == OnDevice && dst.arr.Device() == src.arr.Device():
		return Choice{PathD2D, fmt.Sprintf("both sides on %v: a copy inside device memory", dst.arr.Device())}
	case dst.side == OnDevice && src.side == OnDevice:
		return Choice{PathPeer, fmt.Sprintf("%v to %v: a peer copy between devices", src.arr.Device(), dst.arr.Device())}
	case dst.side != OnDevice && src.side != OnDevice:
		return Choice{PathDirect, "host to host: a memory copy, no device involved"}
	}
	host, dir := src, accounting.HtoD
	if host.side == OnDevice {
		host, dir = dst, accounting.DtoH
	}
	blocks := 1
	reg := regNone
	switch {
	case !host.contiguous():
		blocks = countBlocks(host.arr, 1<<12)
	case host.side == InPageable && o.reg.holds(host.hostAt(0)[:n]):
		reg = regCached
	case host.side == InPageable:
		reg = regFresh
	}
	return pick(host.side, host.mapped(), dir, n, blocks, reg, o, explain)
}

// pick chooses the path between the device and host memory of the given
// side (mapped: a pinned buffer the device reaches in place) for n bytes
// in direction dir, whose host side takes blocks driver copies; reg says
// what the registered path would cost (regNone: a strided host side,
// which it does not take).
func pick(side Side, mapped bool, dir accounting.Direction, n int64, blocks int, reg regState, o Options, explain bool) Choice {
	paths := candidates(side, mapped, reg)
	staged := side == InPageable && o.StagedMin > 0 && n < o.StagedMin
	if staged && !explain {
		return Choice{Path: PathDirect}
	}
	size := accounting.FormatBytes(n)
	if staged {
		return Choice{PathDirect, fmt.Sprintf("%s of pageable memory, under %s (StagedMin): the driver's own staging",
			size, accounting.FormatBytes(o.StagedMin))}
	}
	var buf [4]estimate
	es := o.Profile.estimates(buf[:0], paths, dir, n, blocks, reg)
	best, ok := fastest(es)
	if !ok {
		best = estimate{path: paths[0]} // no figures at all: the first path that fits
	}
	switch {
	case !explain:
		return Choice{Path: best.path}
	case best.path == PathPinned && len(es) < 2:
		return Choice{PathPinned, fmt.Sprintf("%s of page-locked memory: the DMA engine reaches it directly", size)}
	case best.path == PathDirect && o.Profile != nil && o.Profile.Source == sourceSim:
		return Choice{PathDirect, fmt.Sprintf("%s of pageable memory on sim, which has no DMA engine: staging would only add a copy", size)}
	}
	kind := "pageable"
	if side == InPinned {
		kind = "mapped page-locked"
	}
	var est []string
	for _, e := range es {
		est = append(est, fmt.Sprintf("%v ≈ %v", e.path, e.t.Round(100*time.Nanosecond)))
	}
	why := fmt.Sprintf("%s of %s memory: %s in the %s", size, kind, strings.Join(est, ", "), o.Profile.Name())
	if best.path == PathRegistered && reg == regCached {
		why += "; the memory is registered already (the copier keeps it registered)"
	} else if best.path == PathRegistered {
		why += "; registering the memory pays, and the copier keeps it registered for later copies"
	}
	if best.path == PathStaged {
		why += fmt.Sprintf("; through %d pinned chunks of up to %s, host copies overlapped with DMA on %d streams",
			o.Chunks, accounting.FormatBytes(o.ChunkBytes), o.Streams)
	}
	return Choice{best.path, why}
}

// fits checks that path p can move between these sides.
func fits(p Path, dst, src Endpoint) error {
	host := src
	if src.side == OnDevice {
		host = dst
	}
	bothDev := dst.side == OnDevice && src.side == OnDevice
	bothHost := dst.side != OnDevice && src.side != OnDevice
	var why string
	switch {
	case p == PathD2D && !(bothDev && dst.arr.Device() == src.arr.Device()):
		why = "needs device memory on one device on both sides"
	case p == PathPeer && !(bothDev && dst.arr.Device() != src.arr.Device()):
		why = "needs device memory of two devices"
	case p == PathD2D || p == PathPeer:
	case bothDev:
		why = "cannot move between two device arrays"
	case bothHost && p != PathDirect:
		why = "cannot copy host to host (direct can)"
	case bothHost:
	case p == PathDirect && host.side != InPageable:
		why = "is for pageable memory; page-locked memory takes the pinned path"
	case p == PathPinned && host.side != InPinned:
		why = "needs a pinned buffer on the host side (pageable memory takes direct or staged)"
	case p == PathStaged && host.side != InPageable:
		why = "stages pageable memory; a pinned buffer takes the pinned path"
	case p == PathRegistered && host.side != InPageable:
		why = "registers pageable Go memory; a pinned buffer takes the pinned path"
	case p == PathRegistered && !host.contiguous():
		why = "needs a contiguous host side (a strided one takes direct, staged or pinned)"
	case p == PathMapped && !host.mapped():
		why = "needs a pinned buffer allocated with Mapped on the host side"
	}
	if why != "" {
		return fmt.Errorf("transfer: the %v path %s (copy %v → %v): %w", p, why, src.side, dst.side, ErrPath)
	}
	return nil
}
