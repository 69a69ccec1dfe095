package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// routeTable is `cuarray plan -paths`' comparison of the routes one
// transfer of the job could take: the largest chunk's input to the device
// or its output back, each route with its modelled time, and the
// planner's pick (transfer.Copier.PlanRoutes).
type routeTable struct {
	Transfer  string     `json:"transfer"`  // "input" or "output"
	Direction string     `json:"direction"` // "HtoD" or "DtoH"
	Slices    int        `json:"slices"`    // the chunk's
	Bytes     int64      `json:"bytes"`
	Profile   string     `json:"profile"` // the profile the times come from
	Routes    []routeRow `json:"routes"`
	Pick      string     `json:"pick,omitempty"` // absent when no route has a cost
	Reason    string     `json:"reason"`
}

// routeRow is one route of a routeTable.
type routeRow struct {
	Route   string  `json:"route"`
	Memory  string  `json:"memory"` // the kind of host memory the data is held in
	Seconds float64 `json:"seconds,omitempty"`
	GBps    float64 `json:"GB_per_s,omitempty"`
	NoCost  bool    `json:"no_cost,omitempty"` // the profile has no cost for it: never picked
}

// routeTables compares the routes of the transfers of plan p's largest
// chunk of method m: its input (HtoD) and, where the method says its
// output's size (plan.Outputs), its output (DtoH), from the profile at
// profilePath (default: the device's, transfer.ProfileFor). notice says
// why a saved profile was not used, when one was not. The
// pageable-in-place route is offered where the device accesses pageable
// memory (driver.PageableMemory.PageableAccess).
func routeTables(dev driver.Device, m plan.Method, p plan.Plan, params plan.Params, profilePath string) (tables []routeTable, notice error, err error) {
	var opts []transfer.Option
	if profilePath != "" {
		prof, err := transfer.LoadProfile(profilePath)
		if err == nil {
			err = prof.Matches(dev.Info())
		}
		if err != nil {
			return nil, nil, fmt.Errorf("-profile: %w", err)
		}
		opts = append(opts, transfer.WithProfile(prof))
	}
	c, err := transfer.New(dev, opts...)
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	_, notice = c.Profile()
	chunk := 0
	for _, ch := range p.Chunks {
		chunk = max(chunk, ch.Len)
	}
	other := [2]int{p.Shape[(p.SliceDim+1)%3], p.Shape[(p.SliceDim+2)%3]}
	transfers := []chunkTransfer{{"input", accounting.HtoD, plan.InputBytes(int64(chunk), other, p.DType)}}
	out, hasOut, err := plan.OutputBytes(m, p.SliceDim, other, p.DType, int64(chunk), params)
	if err != nil {
		return nil, nil, err
	}
	if hasOut {
		transfers = append(transfers, chunkTransfer{"output", accounting.DtoH, out})
	}
	for _, tr := range transfers {
		if tr.bytes < 0 {
			return nil, nil, fmt.Errorf("the chunk's %s is past int64 bytes: %w", tr.name, accounting.ErrInvalidArgument)
		}
		rp, err := c.PlanRoutes(tr.dir, tr.bytes, dev.PageableAccess().Supported())
		if err != nil {
			return nil, nil, err
		}
		tables = append(tables, routeTableOf(tr.name, chunk, rp))
	}
	return tables, notice, nil
}

// chunkTransfer is one transfer of a chunk: its input or its output.
type chunkTransfer struct {
	name  string
	dir   accounting.Direction
	bytes int64
}

// routeTableOf is the table of the routes of plan rp, in route order.
func routeTableOf(name string, chunk int, rp transfer.RoutePlan) routeTable {
	t := routeTable{Transfer: name, Direction: rp.Direction.String(), Slices: chunk, Bytes: rp.Bytes, Profile: rp.Profile, Reason: rp.Reason}
	if rp.Picked() {
		t.Pick = rp.Pick.Route.String()
	}
	for _, r := range transfer.Routes() {
		row := routeRow{Route: r.String(), Memory: r.Memory().String()}
		if d, ok := rp.Time(r); ok {
			row.Seconds = d.Seconds()
			if d > 0 {
				row.GBps = float64(rp.Bytes) / d.Seconds() / 1e9
			}
		} else if row.NoCost = slices.Contains(rp.Uncosted, r); !row.NoCost {
			continue // not a candidate: read-mostly DtoH, pageable-in-place
		}
		t.Routes = append(t.Routes, row)
	}
	return t
}

// writeRouteTables prints the tables as text: a heading naming the chunk
// and the profile, then per transfer its size and pick and a row per
// route, the pick marked; a note where the method does not say its
// output's size (no output table).
func writeRouteTables(w io.Writer, tables []routeTable) error {
	if len(tables) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "transfer paths of the largest chunk (%d slices), as the planner models them\n  profile: %s\n", tables[0].Slices, tables[0].Profile)
	for _, t := range tables {
		pick := "no route has a cost"
		if t.Pick != "" {
			pick = "pick " + t.Pick
		}
		fmt.Fprintf(&b, "  %s %s %s: %s\n", t.Transfer, t.Direction, accounting.FormatBytes(t.Bytes), pick)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "    route\tmemory\ttime\tGB/s\t")
		for _, r := range t.Routes {
			mark := ""
			if r.Route == t.Pick {
				mark = "pick"
			}
			if r.NoCost {
				fmt.Fprintf(tw, "    %s\t%s\tno cost\t-\t%s\n", r.Route, r.Memory, mark)
				continue
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%.2f\t%s\n", r.Route, r.Memory, secondsText(r.Seconds), r.GBps, mark)
		}
		tw.Flush()
	}
	if len(tables) < 2 {
		b.WriteString("  output: the method does not say its output's size (plan.Outputs)\n")
	}
	var out strings.Builder
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		out.WriteString(strings.TrimRight(l, " \n"))
		if strings.HasSuffix(l, "\n") {
			out.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// secondsText is a modelled time in µs, ms or s, four figures or so.
func secondsText(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.1f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.3f ms", s*1e3)
	}
	return fmt.Sprintf("%.3f s", s)
}
