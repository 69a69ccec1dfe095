package transfer

import (
	"fmt"
	"math"
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// Cost is what moving bytes along one path in one direction takes: a
// fixed latency plus the bytes over a bandwidth. The planner compares the
// costs of the paths a copy can take (Profile.Cost) and picks the cheapest.
type Cost struct {
	Latency time.Duration
	GBps    float64 // 10^9 bytes per second
}

// Time returns the modelled time of an n-byte copy.
func (c Cost) Time(n int64) time.Duration {
	if c.GBps <= 0 {
		return time.Duration(math.MaxInt64)
	}
	t := float64(c.Latency) + float64(n)/c.GBps // 10^9 bytes/s = 1 byte/ns
	if t >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(t)
}

func (c Cost) String() string {
	return fmt.Sprintf("%v + bytes at %.3g GB/s", c.Latency, c.GBps)
}

// regState is what the registered path would cost a copy: nothing
// (regNone: it cannot take it), a registration first (regFresh), or only
// the DMA (regCached: the memory is registered already).
type regState uint8

const (
	regNone regState = iota
	regFresh
	regCached
)

// candidates returns the paths that can move between host memory of the
// given side and the device (mapped: a pinned buffer the device reaches
// in place), the planner's choices; reg says whether pageable memory may
// take the registered path.
func candidates(side Side, mapped bool, reg regState) []Path {
	switch {
	case side == InPinned && mapped:
		return []Path{PathPinned, PathMapped}
	case side == InPinned:
		return []Path{PathPinned}
	case reg != regNone:
		return []Path{PathDirect, PathStaged, PathRegistered}
	}
	return []Path{PathDirect, PathStaged}
}

// spannedPages returns the bytes of the pages n bytes may span (one more
// page than they fill, when they start inside one), at most the largest
// int64.
func spannedPages(n int64) int64 {
	pg := int64(pageSize)
	if n > math.MaxInt64-2*pg {
		return math.MaxInt64
	}
	return (n + 2*pg - 1) / pg * pg
}

// addTime returns a+b, two modelled times of 0 or more, at most the
// largest Duration (Cost.Time's saturated time), never wrapping round.
func addTime(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulTime returns d*k for d and k of 0 or more, at most the largest Duration.
func mulTime(d time.Duration, k int64) time.Duration {
	if k > 0 && d > math.MaxInt64/time.Duration(k) {
		return math.MaxInt64
	}
	return d * time.Duration(k)
}

// estimate is one path's modelled time for a copy.
type estimate struct {
	path Path
	t    time.Duration
}

// estimates appends to out the modelled time of moving n bytes in
// direction dir along each path in paths, in order, leaving out the paths the profile has no
// cost for. blocks is the number of driver copies a direct or pinned
// copy of a strided host side takes (1 when it is contiguous): each
// pays the path's latency. The registered path costs its DMA, plus the
// registration (Profile.Registration, over the pages covering the n bytes)
// when reg is regFresh; a profile without a registration cost leaves a
// fresh registered copy out.
func (p *Profile) estimates(out []estimate, paths []Path, dir accounting.Direction, n int64, blocks int, reg regState) []estimate {
	for _, path := range paths {
		c, ok := p.Cost(path, dir)
		if !ok {
			continue
		}
		t := c.Time(n)
		if path == PathRegistered && reg == regFresh {
			r, ok := p.RegistrationCost()
			if !ok {
				continue
			}
			t = addTime(t, r.Time(spannedPages(n)))
		}
		if blocks > 1 && (path == PathDirect || path == PathPinned) {
			t = addTime(t, mulTime(c.Latency, int64(blocks-1)))
		}
		out = append(out, estimate{path, t})
	}
	return out
}

// fastest returns the estimate with the least time; ties go to the
// earlier path. ok is false for no estimates.
func fastest(es []estimate) (best estimate, ok bool) {
	for i, e := range es {
		if i == 0 || e.t < best.t {
			best = e
		}
	}
	return best, len(es) > 0
}
