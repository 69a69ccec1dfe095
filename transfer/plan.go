package transfer

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
)

// Choice is the path the planner picked for a copy and why, in one line.
type Choice struct {
	Path   Path
	Reason string
}

func (c Choice) String() string { return c.Path.String() + ": " + c.Reason }

// choose picks a path from the two sides' kinds, the size and the device.
func choose(dst, src Endpoint, n int64, backend string, o Options) Choice {
	size := accounting.FormatBytes(n)
	switch {
	case dst.side == OnDevice && src.side == OnDevice && dst.arr.Device() == src.arr.Device():
		return Choice{PathD2D, fmt.Sprintf("both sides on %v: a copy inside device memory", dst.arr.Device())}
	case dst.side == OnDevice && src.side == OnDevice:
		return Choice{PathPeer, fmt.Sprintf("%v to %v: a peer copy between devices", src.arr.Device(), dst.arr.Device())}
	case dst.side != OnDevice && src.side != OnDevice:
		return Choice{PathDirect, "host to host: a memory copy, no device involved"}
	}
	host := src
	if host.side == OnDevice {
		host = dst
	}
	switch {
	case host.side == InPinned:
		return Choice{PathPinned, fmt.Sprintf("%s of page-locked memory: the DMA engine reaches it directly", size)}
	case backend == "sim":
		return Choice{PathDirect, fmt.Sprintf("%s of pageable memory on sim, which has no DMA engine: staging would only add a copy", size)}
	case n < o.StagedMin:
		return Choice{PathDirect, fmt.Sprintf("%s of pageable memory, under %s: the driver's own staging starts sooner than a ring",
			size, accounting.FormatBytes(o.StagedMin))}
	}
	return Choice{PathStaged, fmt.Sprintf("%s of pageable memory: through %d pinned chunks of %s, host copies overlapped with DMA on %d streams",
		size, o.Chunks, accounting.FormatBytes(o.ChunkBytes), o.Streams)}
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
	case p == PathMapped && !host.mapped():
		why = "needs a pinned buffer allocated with Mapped on the host side"
	}
	if why != "" {
		return fmt.Errorf("transfer: the %v path %s (copy %v → %v): %w", p, why, src.side, dst.side, ErrPath)
	}
	return nil
}
