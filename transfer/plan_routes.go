package transfer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// RouteTime is one route's modelled time for a transfer.
type RouteTime struct {
	Route Route
	Time  time.Duration
}

// RoutePlan is the planner's comparison of the routes a transfer of Bytes
// in Direction could take across the kinds of memory its host side could
// be held in (PlanRoutes): each route's modelled time, and the cheapest.
type RoutePlan struct {
	Direction accounting.Direction
	Bytes     int64
	// Times are the candidates the profile has a cost for, in route
	// order, each with its modelled time.
	Times []RouteTime
	// Uncosted are the candidates the profile has no cost for: never picked.
	Uncosted []Route
	// Pick is the cheapest of Times (a tie goes to the earlier route); the
	// zero RouteTime when Times is empty (Picked is false).
	Pick   RouteTime
	Reason string
	// Profile names the profile the times come from (Profile.Name).
	Profile string
	// stagedMin is the Copier's StagedMin that left the staged and
	// registered routes out
	// (0 when it did not).
	stagedMin int64
}

// Picked reports whether the plan has a pick: a candidate with a cost.
func (p RoutePlan) Picked() bool { return len(p.Times) > 0 }

// Time returns route r's modelled time, and false when it is not one of
// the plan's costed candidates.
func (p RoutePlan) Time(r Route) (time.Duration, bool) {
	for _, t := range p.Times {
		if t.Route == r {
			return t.Time, true
		}
	}
	return 0, false
}

// PlanRoutes compares every route that n bytes in direction dir (HtoD or
// DtoH) could take, across the ways the host side could hold them:
// pageable memory (direct, staged, registered: registering it first),
// pinned (pinned), mapped pinned (mapped), managed (on demand, prefetch,
// and read-mostly for HtoD), and, only where pageableAccess says the
// device can access pageable memory, pageable memory read or written in
// place. Each route's modelled time comes from the Copier's profile, as
// PlanHost's do; the pick is the cheapest, each route taken as holding
// the data in its kind of memory already. Within pageable, pinned and
// mapped pinned memory the pick is PlanHost's: a pageable transfer under
// the Copier's StagedMin leaves the staged and registered routes out
// (PlanHost takes direct then). Copy takes only
// the first five routes (managed memory is not copied by Copy).
func (c *Copier) PlanRoutes(dir accounting.Direction, n int64, pageableAccess bool, opts ...Option) (RoutePlan, error) {
	if c == nil {
		return RoutePlan{}, fmt.Errorf("transfer: nil Copier; make one with New: %w", driver.ErrInvalidValue)
	}
	if (dir != accounting.HtoD && dir != accounting.DtoH) || n < 0 {
		return RoutePlan{}, fmt.Errorf("transfer: plan the routes of %d bytes %v: want HtoD or DtoH, a size of 0 or more: %w", n, dir, driver.ErrInvalidValue)
	}
	opt, err := apply(c.opt, opts)
	if err != nil {
		return RoutePlan{}, err
	}
	if opt.Profile == nil {
		opt.Profile = c.opt.Profile
	}
	plan := RoutePlan{Direction: dir, Bytes: n, Profile: opt.Profile.Name()}
	if opt.StagedMin > 0 && n < opt.StagedMin {
		plan.stagedMin = opt.StagedMin
	}
	for _, r := range Routes() {
		if !r.Moves(dir) || (r == RoutePageableInPlace && !pageableAccess) || ((r == RouteStaged || r == RouteRegistered) && plan.stagedMin > 0) {
			continue
		}
		if t, ok := routeTime(opt.Profile, r, dir, n); ok {
			plan.Times = append(plan.Times, RouteTime{r, t})
		} else {
			plan.Uncosted = append(plan.Uncosted, r)
		}
	}
	return plan.picked(), nil
}

// routeTime is route r's modelled time for n contiguous bytes in
// direction dir: a Copier's path's as the Copier's planner models it
// (the registered path registering the memory first), else the route's
// cost.
func routeTime(p *Profile, r Route, dir accounting.Direction, n int64) (time.Duration, bool) {
	if path, ok := r.Path(); ok {
		reg := regNone
		if r == RouteRegistered {
			reg = regFresh
		}
		var buf [1]estimate
		es := p.estimates(buf[:0], []Path{path}, dir, n, 1, reg)
		if len(es) == 0 {
			return 0, false
		}
		return es[0].t, true
	}
	c, ok := p.RouteCost(r, dir)
	if !ok {
		return 0, false
	}
	return c.Time(n), true
}

// Among returns the plan restricted to the routes whose data is held in
// one of the given kinds of memory, with their pick and its reason: the
// pick of the managed routes alone, say.
func (p RoutePlan) Among(kinds ...Memory) RoutePlan {
	in := func(r Route) bool { return slices.Contains(kinds, r.Memory()) }
	q := p
	q.Times = nil
	q.Uncosted = nil
	for _, t := range p.Times {
		if in(t.Route) {
			q.Times = append(q.Times, t)
		}
	}
	for _, r := range p.Uncosted {
		if in(r) {
			q.Uncosted = append(q.Uncosted, r)
		}
	}
	if !slices.Contains(kinds, MemoryPageable) {
		q.stagedMin = 0
	}
	return q.picked()
}

// picked sets the plan's pick, the cheapest of its times, and its reason.
func (p RoutePlan) picked() RoutePlan {
	p.Pick = RouteTime{}
	for i, t := range p.Times {
		if i == 0 || t.Time < p.Pick.Time {
			p.Pick = t
		}
	}
	p.Reason = p.reason()
	return p
}

// reason says in one line why the pick is the pick: every candidate's
// modelled time, and what was left out.
func (p RoutePlan) reason() string {
	size := accounting.FormatBytes(p.Bytes)
	var notes []string
	if len(p.Uncosted) > 0 {
		var names []string
		for _, r := range p.Uncosted {
			names = append(names, r.String())
		}
		notes = append(notes, "no cost for "+strings.Join(names, ", "))
	}
	if p.stagedMin > 0 {
		notes = append(notes, fmt.Sprintf("staged and registered left out under %s (StagedMin)", accounting.FormatBytes(p.stagedMin)))
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	if !p.Picked() {
		return fmt.Sprintf("%s %v: no route has a cost in the %s%s", size, p.Direction, p.Profile, note)
	}
	var est []string
	for _, t := range p.Times {
		est = append(est, fmt.Sprintf("%v ≈ %v", t.Route, t.Time.Round(100*time.Nanosecond)))
	}
	return fmt.Sprintf("%s %v: %v is the cheapest, its data held in %v memory (%s in the %s)%s",
		size, p.Direction, p.Pick.Route, p.Pick.Route.Memory(), strings.Join(est, ", "), p.Profile, note)
}
