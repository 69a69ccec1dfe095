package transfer

import (
	"fmt"
	"strings"

	"github.com/cuarray/cuarray/accounting"
)

// Path is a way of moving bytes; each is recorded in the ledger under the
// accounting.Path of the same name.
type Path uint8

// The paths. PathAuto lets the planner choose.
const (
	PathAuto   Path = iota
	PathDirect      // the driver copies from or to pageable memory (it stages through its own buffer)
	PathPinned      // DMA from or to page-locked memory
	PathStaged      // pageable memory through a ring of pinned chunks: host copies by several goroutines overlapped with DMA on several streams
	PathMapped      // a kernel reads or writes mapped host memory in place
	PathD2D         // within one device
	PathPeer        // between two devices
	// PathRegistered page-locks the caller's own Go memory
	// (cuMemHostRegister, through pinned.Register) and DMAs from or to it
	// in one driver copy, as the pinned path does, without a memory copy.
	// The Copier keeps the registration for later copies of the same
	// memory (see Copier.Unregister); contiguous host sides only. The
	// copier registers no page twice (an H100 registered by bytes, and no
	// driver documents which): a buffer that shares a page with another
	// registration is registered after that one is unregistered; while a
	// copy still uses that one, a copy that asked for this path is refused
	// (pinned.ErrBusy), and one the planner picked it for takes the path
	// the planner picks without it.
	PathRegistered
	numPaths
)

var pathNames = [numPaths]string{"auto", "direct", "pinned", "staged", "mapped", "d2d", "peer", "registered"}

// String returns the path's name.
func (p Path) String() string {
	if p >= numPaths {
		return fmt.Sprintf("Path(%d)", p)
	}
	return pathNames[p]
}

// Ledger returns the ledger path a copy along p records its bytes under:
// the one of the same name (PathAuto has none: PathDirect), but
// accounting.PathPinned for PathRegistered, whose DMA is from or to
// page-locked memory like the pinned path's; its registrations are
// recorded under accounting.PathRegistered (0 bytes each, their time).
func (p Path) Ledger() accounting.Path {
	switch p {
	case PathPinned:
		return accounting.PathPinned
	case PathStaged:
		return accounting.PathStaged
	case PathMapped:
		return accounting.PathMapped
	case PathD2D:
		return accounting.PathD2D
	case PathPeer:
		return accounting.PathPeer
	case PathRegistered:
		return accounting.PathPinned
	}
	return accounting.PathDirect
}

// ParsePath returns the path with the given name.
func ParsePath(s string) (Path, error) {
	for p := Path(0); p < numPaths; p++ {
		if pathNames[p] == s {
			return p, nil
		}
	}
	return 0, &labelled{msg: fmt.Sprintf("transfer: unknown path %q (want one of %s)", s, strings.Join(pathNames[:], ", ")), err: ErrUnknownName}
}

// Paths returns every path but Auto.
func Paths() []Path {
	return []Path{PathDirect, PathPinned, PathStaged, PathMapped, PathD2D, PathPeer, PathRegistered}
}
