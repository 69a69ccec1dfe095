package bench

import (
	"fmt"
	"slices"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/transfer"
)

// HostAll is the Plan.Host of the planner's pick across every kind of
// host memory: the whole table's pick for a size and direction.
const HostAll = "all kinds"

// plan asks c's planner for its pick at each size and direction measured,
// for pageable memory (direct or staged), for pinned memory (pinned, or
// mapped where the device maps host memory and mapped was measured), for
// managed memory (the managed paths measured, transfer.PlanRoutes), and
// across all of them (HostAll: every route measured), and notes beside it
// the fastest of those paths measured (Report.Plans, and Result.Planner
// on the pick's row). A pick that was not measured is left out. The
// pageable-in-place route is a candidate where the run measured it.
func (r *Report) plan(c *transfer.Copier, canMap bool) error {
	measured := func(name string) bool {
		return slices.ContainsFunc(r.Results, func(q Result) bool { return q.Path == name })
	}
	mapped := canMap && measured(transfer.PathMapped.String())
	inPlace := measured(transfer.RoutePageableInPlace.String())
	var all, managed []string // the routes' names, and the managed ones'
	for _, rt := range transfer.Routes() {
		all = append(all, rt.String())
		if rt.Memory() == transfer.MemoryManaged {
			managed = append(managed, rt.String())
		}
	}
	for _, size := range sizesOf(r) {
		n := int64(size)
		for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
			for _, host := range []struct {
				name   string
				side   transfer.Side
				mapped bool
				paths  []string
			}{
				{"pageable", transfer.InPageable, false, []string{"direct", "staged"}},
				{"pinned", transfer.InPinned, false, []string{"pinned"}},
				{"mapped pinned", transfer.InPinned, true, []string{"pinned", "mapped"}},
			} {
				if (host.side == transfer.InPinned && host.mapped != mapped) || !slices.ContainsFunc(host.paths, measured) {
					continue
				}
				ch, err := c.PlanHost(host.side, host.mapped, dir, n)
				if err != nil {
					return err
				}
				if pl, pick := r.pickAgainstBest(host.name, ch.Path.String(), ch.Reason, host.paths, dir, n); pick != nil {
					pick.Planner = plannerText(pl)
				}
			}
			routes, err := c.PlanRoutes(dir, n, inPlace)
			if err != nil {
				return err
			}
			if m := routes.Among(transfer.MemoryManaged); m.Picked() && slices.ContainsFunc(managed, measured) {
				if pl, pick := r.pickAgainstBest("managed", m.Pick.Route.String(), m.Reason, managed, dir, n); pick != nil {
					pick.Planner = plannerText(pl)
				}
			}
			if routes.Picked() {
				if _, pick := r.pickAgainstBest(HostAll, routes.Pick.Route.String(), routes.Reason, all, dir, n); pick != nil {
					pick.Planner = joinPlanner(pick.Planner, "overall pick")
				}
			}
		}
	}
	return nil
}

// pickAgainstBest adds to r.Plans the planner's pick for host memory of
// the kind named host, n bytes in direction dir, beside the fastest of
// the paths named candidates measured, and returns the plan and the pick's
// row; a nil row when the pick was not measured (no plan is added).
func (r *Report) pickAgainstBest(host, pickPath, reason string, candidates []string, dir accounting.Direction, n int64) (Plan, *Result) {
	pick := r.Find(pickPath, dir.String(), n)
	if pick == nil {
		return Plan{}, nil
	}
	best := pick
	for _, p := range candidates {
		if q := r.Find(p, dir.String(), n); q != nil && q.GBps > best.GBps {
			best = q
		}
	}
	pl := Plan{Size: n, Direction: dir.String(), Host: host, Pick: pick.Path, Reason: reason,
		PickGBps: pick.GBps, Best: best.Path, BestGBps: best.GBps}
	if best != pick && pick.GBps > 0 {
		pl.Slower = best.GBps/pick.GBps - 1
	}
	r.Plans = append(r.Plans, pl)
	return pl, pick
}

// plannerText is the table's planner column on the pick's row: "pick,
// best", or how much slower it ran than the best path measured ("pick,
// 32% slower"; the list under the table names that path), short enough
// that a row that is the whole table's pick too ("; overall pick") fits
// make run's 120 columns.
func plannerText(pl Plan) string {
	if pl.Best == pl.Pick {
		return "pick, best"
	}
	return fmt.Sprintf("pick, %.0f%% slower", pl.Slower*100)
}

// joinPlanner adds note to a row's planner column.
func joinPlanner(text, note string) string {
	if text == "" {
		return note
	}
	return text + "; " + note
}
