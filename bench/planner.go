package bench

import (
	"fmt"
	"slices"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/transfer"
)

// plan asks c's planner for its pick at each size and direction measured,
// for pageable memory (direct or staged) and for pinned memory (pinned, or
// mapped where the device maps host memory and mapped was measured), and
// notes beside it the fastest of those paths measured (Report.Plans, and
// Result.Planner on the pick's row).
func (r *Report) plan(c *transfer.Copier, canMap bool) error {
	find := r.Find
	measured := func(p transfer.Path) bool {
		return slices.ContainsFunc(r.Results, func(q Result) bool { return q.Path == p.String() })
	}
	mapped := canMap && measured(transfer.PathMapped)
	for _, size := range sizesOf(r) {
		n := int64(size)
		for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
			for _, host := range []struct {
				name   string
				side   transfer.Side
				mapped bool
				paths  []transfer.Path
			}{
				{"pageable", transfer.InPageable, false, []transfer.Path{transfer.PathDirect, transfer.PathStaged}},
				{"pinned", transfer.InPinned, false, []transfer.Path{transfer.PathPinned}},
				{"mapped pinned", transfer.InPinned, true, []transfer.Path{transfer.PathPinned, transfer.PathMapped}},
			} {
				if (host.side == transfer.InPinned && host.mapped != mapped) || !slices.ContainsFunc(host.paths, measured) {
					continue
				}
				ch, err := c.PlanHost(host.side, host.mapped, dir, n)
				if err != nil {
					return err
				}
				pick := find(ch.Path.String(), dir.String(), n)
				if pick == nil {
					continue // the pick was not measured
				}
				best := pick
				for _, p := range host.paths {
					if q := find(p.String(), dir.String(), n); q != nil && q.GBps > best.GBps {
						best = q
					}
				}
				pl := Plan{Size: n, Direction: dir.String(), Host: host.name, Pick: pick.Path, Reason: ch.Reason,
					PickGBps: pick.GBps, Best: best.Path, BestGBps: best.GBps}
				if best != pick && pick.GBps > 0 {
					pl.Slower = best.GBps/pick.GBps - 1
				}
				r.Plans = append(r.Plans, pl)
				pick.Planner = plannerText(pl)
			}
		}
	}
	return nil
}

// plannerText is the table's planner column on the pick's row.
func plannerText(pl Plan) string {
	if pl.Best == pl.Pick {
		return "pick, best"
	}
	return fmt.Sprintf("pick, %.0f%% slower than %s", pl.Slower*100, pl.Best)
}
