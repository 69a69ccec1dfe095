package transfer

import (
	"fmt"
	"strings"

	"github.com/cuarray/cuarray/accounting"
)

// Route is one way the data of a transfer between host and device can
// go, together with the kind of host memory it is held in: the Copier's
// paths between host memory and the device, and the ways no copy call
// takes, in which the driver or a kernel moves the bytes itself: managed
// memory migrated on demand, prefetched, or advised read-mostly, and
// pageable memory a kernel reads or writes in place. PlanRoutes compares
// them; a Profile holds their costs under their names.
type Route uint8

// The routes, in the order PlanRoutes lists them (a tie goes to the
// earlier one).
const (
	RouteDirect     Route = iota // pageable memory, PathDirect
	RouteStaged                  // pageable memory, PathStaged
	RouteRegistered              // pageable memory, PathRegistered (registered first)
	RoutePinned                  // pinned memory, PathPinned
	RouteMapped                  // mapped pinned memory, PathMapped
	// RouteManaged: managed memory the driver migrates on demand, a page
	// at a time as a kernel (HtoD) or the host (DtoH) touches it
	// (accounting.PathMigrated).
	RouteManaged
	// RouteManagedPrefetch: managed memory moved by cuMemPrefetchAsync
	// before it is touched (accounting.PathPrefetch).
	RouteManagedPrefetch
	// RouteManagedReadMostly: managed memory advised read-mostly; a
	// kernel's first reads make read-only copies on the device. HtoD only.
	RouteManagedReadMostly
	// RoutePageableInPlace: pageable Go memory a kernel reads or writes
	// in place, on a device that can access pageable memory (HMM or ATS);
	// PlanRoutes offers it only where the caller says the device can.
	RoutePageableInPlace
	numRoutes
)

var routeNames = [numRoutes]string{"direct", "staged", "registered", "pinned", "mapped",
	"managed", "managed-prefetch", "managed-read-mostly", "pageable-in-place"}

// String returns the route's name: the Copier's path's for the first five.
func (r Route) String() string {
	if r >= numRoutes {
		return fmt.Sprintf("Route(%d)", r)
	}
	return routeNames[r]
}

// ParseRoute returns the route with the given name.
func ParseRoute(s string) (Route, error) {
	for r := Route(0); r < numRoutes; r++ {
		if routeNames[r] == s {
			return r, nil
		}
	}
	return 0, &labelled{msg: fmt.Sprintf("transfer: unknown route %q (want one of %s)", s, strings.Join(routeNames[:], ", ")), err: ErrUnknownName}
}

// Routes returns every route, in order.
func Routes() []Route {
	out := make([]Route, numRoutes)
	for r := range out {
		out[r] = Route(r)
	}
	return out
}

// Path returns the Copier's path of the route, and false for the routes
// no copy call takes (managed memory, pageable memory in place).
func (r Route) Path() (Path, bool) {
	switch r {
	case RouteDirect:
		return PathDirect, true
	case RouteStaged:
		return PathStaged, true
	case RouteRegistered:
		return PathRegistered, true
	case RoutePinned:
		return PathPinned, true
	case RouteMapped:
		return PathMapped, true
	}
	return PathAuto, false
}

// Memory returns the kind of host memory the route's data is held in.
func (r Route) Memory() Memory {
	switch r {
	case RoutePinned:
		return MemoryPinned
	case RouteMapped:
		return MemoryMapped
	case RouteManaged, RouteManagedPrefetch, RouteManagedReadMostly:
		return MemoryManaged
	}
	return MemoryPageable
}

// Moves reports whether the route moves data in direction dir: every
// route moves HtoD and DtoH but read-mostly, which is advice for data
// the device reads (HtoD only).
func (r Route) Moves(dir accounting.Direction) bool {
	switch {
	case r >= numRoutes:
		return false
	case r == RouteManagedReadMostly:
		return dir == accounting.HtoD
	}
	return dir == accounting.HtoD || dir == accounting.DtoH
}

// Memory is a kind of host memory the data of a transfer is held in.
type Memory uint8

// The kinds of memory, in the order PlanRoutes lists their routes.
const (
	MemoryPageable Memory = iota // Go memory: direct, staged, registered, pageable-in-place
	MemoryPinned                 // a pinned buffer: pinned
	MemoryMapped                 // a pinned buffer allocated with pinned.Mapped: mapped
	MemoryManaged                // managed memory: managed, managed-prefetch, managed-read-mostly
	numMemories
)

var memoryNames = [numMemories]string{"pageable", "pinned", "mapped pinned", "managed"}

// String returns the kind's name, as `cuarray bench` names its host kinds.
func (m Memory) String() string {
	if m >= numMemories {
		return fmt.Sprintf("Memory(%d)", m)
	}
	return memoryNames[m]
}
