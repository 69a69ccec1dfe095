package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// planPathsJSON runs `cuarray plan ... -paths -json` and returns its transfers.
func planPathsJSON(t *testing.T, args ...string) []routeTable {
	t.Helper()
	code, out, stderr := runCmd(append(append([]string{"plan"}, args...), "-paths", "-json")...)
	require.Equal(t, 0, code, stderr)
	var rep planReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	return rep.Transfers
}

// routeLine is a route's row of `cuarray plan -paths`' text: route,
// memory (one or two words), time, GB/s, and "pick" on the pick's.
var routeLine = regexp.MustCompile(`^    ([a-z-]+) +(pageable|pinned|mapped pinned|managed) +(no cost|[\d.]+ (?:µs|ms|s)) +([\d.]+|-)(  pick)?$`)

// `cuarray plan -paths` compares, for the largest chunk of a
// reconstruction, its input's (HtoD: the chunk's sinograms) and its
// output's (DtoH: the chunk's size × size images) routes, each at the time
// the planner (transfer.PlanRoutes) models from the device's profile, and
// marks the planner's pick; the text shows the rows the JSON has, in
// route order.
func TestPlanPaths(t *testing.T) {
	for _, spec := range []string{"sim:0?mem=64MiB", "sim:0?mem=64MiB&pageable-access=hmm"} {
		t.Run(spec, func(t *testing.T) { planPaths(t, spec) })
	}
}

// planPaths is TestPlanPaths on the device of spec.
func planPaths(t *testing.T, spec string) {
	t.Setenv(transfer.ProfileEnv, "") // the device's defaults, whatever the environment names
	r := rand.For(t)
	slices, angles, dets, size := 8+r.IntN(56), 90+r.IntN(90), 64+r.IntN(192), 64+r.IntN(192)
	args := []string{"-device", spec, "-method", "fbp.reconstruct", "-shape", fmt.Sprintf("%d,%d,%d", slices, angles, dets),
		"-param", fmt.Sprintf("size=%d", size)}
	tables := planPathsJSON(t, args...)
	require.Len(t, tables, 2)

	dev, err := device.Open(spec)
	require.NoError(t, err)
	defer dev.Close()
	c, err := transfer.New(dev, transfer.WithProfile(transfer.DefaultProfile(dev.Info())))
	require.NoError(t, err)
	defer c.Close()
	chunk := tables[0].Slices
	require.Positive(t, chunk)
	require.LessOrEqual(t, chunk, slices)
	for i, want := range []struct {
		transfer string
		dir      accounting.Direction
		bytes    int64
	}{
		{"input", accounting.HtoD, int64(chunk * angles * dets * 4)},
		{"output", accounting.DtoH, int64(chunk * size * size * 4)},
	} {
		got := tables[i]
		assert.Equal(t, want.transfer, got.Transfer)
		assert.Equal(t, want.dir.String(), got.Direction)
		assert.Equal(t, want.bytes, got.Bytes)
		assert.Equal(t, chunk, got.Slices)
		inPlace := dev.PageableAccess().Supported()
		rp, err := c.PlanRoutes(want.dir, want.bytes, inPlace)
		require.NoError(t, err)
		assert.Equal(t, rp.Pick.Route.String(), got.Pick)
		assert.Equal(t, rp.Reason, got.Reason)
		assert.Equal(t, rp.Profile, got.Profile)
		require.Len(t, got.Routes, len(rp.Times)+len(rp.Uncosted))
		for _, row := range got.Routes {
			rt, err := transfer.ParseRoute(row.Route)
			require.NoError(t, err)
			assert.Equal(t, rt.Memory().String(), row.Memory)
			d, ok := rp.Time(rt)
			require.True(t, ok, "%s: sim's defaults cost every route", row.Route)
			assert.Equal(t, d.Seconds(), row.Seconds, row.Route)
			assert.InDelta(t, float64(want.bytes)/d.Seconds()/1e9, row.GBps, 1e-9, row.Route)
		}
		assert.Equal(t, want.dir == accounting.HtoD, strings.Contains(fmt.Sprint(got.Routes), "managed-read-mostly"), "read-mostly is advice for the input")
		assert.Equal(t, inPlace, strings.Contains(fmt.Sprint(got.Routes), "pageable-in-place"), "offered where the device reads pageable memory in place")
	}

	code, out, stderr := runCmd(append(append([]string{"plan"}, args...), "-paths")...)
	require.Equal(t, 0, code, stderr)
	_, text, ok := strings.Cut(out, "transfer paths of the largest chunk")
	require.True(t, ok, out)
	assert.Contains(t, text, fmt.Sprintf(" (%d slices), as the planner models them\n  profile: %s\n", chunk, tables[0].Profile))
	var rows []string
	for _, l := range strings.Split(text, "\n") {
		if m := routeLine.FindStringSubmatch(l); m != nil {
			rows = append(rows, fmt.Sprintf("%s %s %s%s", m[1], m[2], m[4], m[5]))
		}
	}
	var want []string
	for _, tb := range tables {
		assert.Contains(t, text, fmt.Sprintf("  %s %s %s: pick %s\n", tb.Transfer, tb.Direction, accounting.FormatBytes(tb.Bytes), tb.Pick))
		for _, row := range tb.Routes {
			mark := ""
			if row.Route == tb.Pick {
				mark = "  pick"
			}
			want = append(want, fmt.Sprintf("%s %s %.2f%s", row.Route, row.Memory, row.GBps, mark))
		}
	}
	assert.Equal(t, want, rows, "the text's rows are the JSON's:\n%s", text)
}

// -profile FILE (and $CUARRAY_PROFILE) is the profile the transfers are
// modelled by: one in which a prefetch is the cheapest way to the device
// makes managed-prefetch the input's pick; routes it has no cost for are
// shown as such and never picked; a profile made for another device is an
// error (status 1) and nothing is printed.
func TestPlanPathsProfile(t *testing.T) {
	t.Setenv(transfer.ProfileEnv, "")
	dir := t.TempDir()
	dev, err := device.Open("sim:0?mem=64MiB")
	require.NoError(t, err)
	info := dev.Info()
	require.NoError(t, dev.Close())
	fast := transfer.DefaultProfile(info)
	require.NoError(t, fast.SetRouteCost(transfer.RouteManagedPrefetch, accounting.HtoD, transfer.Cost{Latency: time.Nanosecond, GBps: 5e4}, 0))
	fastPath := filepath.Join(dir, "fast.json")
	require.NoError(t, fast.Save(fastPath))
	pinnedOnly := &transfer.Profile{Format: transfer.ProfileFormat, Version: transfer.ProfileVersion, Model: info.Model, Backend: info.Backend, Source: "pinned only"}
	require.NoError(t, pinnedOnly.SetCost(transfer.PathPinned, accounting.HtoD, transfer.Cost{Latency: time.Microsecond, GBps: 3}, 0))
	require.NoError(t, pinnedOnly.SetCost(transfer.PathPinned, accounting.DtoH, transfer.Cost{Latency: time.Microsecond, GBps: 3}, 0))
	pinnedPath := filepath.Join(dir, "pinned.json")
	require.NoError(t, pinnedOnly.Save(pinnedPath))
	foreign := transfer.DefaultProfile(info)
	foreign.Model = "NVIDIA H100"
	foreignPath := filepath.Join(dir, "foreign.json")
	require.NoError(t, foreign.Save(foreignPath))

	args := []string{"-device", "sim:0?mem=64MiB", "-method", "kernels.transpose", "-shape", "4,256,256", "-axis", "1"}
	tables := planPathsJSON(t, append(args, "-profile", fastPath)...)
	require.Len(t, tables, 2)
	assert.Equal(t, "managed-prefetch", tables[0].Pick)
	assert.NotEqual(t, "managed-prefetch", tables[1].Pick, "the DtoH prefetch keeps its default cost")
	assert.Contains(t, tables[0].Reason, "managed-prefetch is the cheapest, its data held in managed memory")

	t.Setenv(transfer.ProfileEnv, fastPath)
	assert.Equal(t, "managed-prefetch", planPathsJSON(t, args...)[0].Pick, "$CUARRAY_PROFILE names it too")
	t.Setenv(transfer.ProfileEnv, "")

	tables = planPathsJSON(t, append(args, "-profile", pinnedPath)...)
	for _, tb := range tables {
		assert.Equal(t, "pinned", tb.Pick)
		for _, row := range tb.Routes {
			assert.Equal(t, row.Route != "pinned", row.NoCost, row.Route)
		}
	}
	code, out, stderr := runCmd(append(append([]string{"plan"}, args...), "-paths", "-profile", pinnedPath)...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^    managed-prefetch +managed +no cost +-$`, out)
	assert.Regexp(t, `(?m)^    pinned +pinned +[\d.]+ (µs|ms) +[\d.]+  pick$`, out)

	code, out, stderr = runCmd(append(append([]string{"plan"}, args...), "-paths", "-profile", foreignPath)...)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, `cuarray plan: -profile: `)
	assert.Contains(t, stderr, `made for "NVIDIA H100"`)
}

// Without an output table (a method that does not say its output's
// size), the text says so after the input's.
func TestWriteRouteTablesWithoutOutput(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeRouteTables(&b, []routeTable{{Transfer: "input", Direction: "HtoD", Slices: 3, Bytes: 3 << 20, Profile: "p profile",
		Routes: []routeRow{{Route: "pinned", Memory: "pinned", Seconds: 2e-4, GBps: 15.7}}, Pick: "pinned"}}))
	assert.Equal(t, "transfer paths of the largest chunk (3 slices), as the planner models them\n"+
		"  profile: p profile\n"+
		"  input HtoD 3.00 MiB: pick pinned\n"+
		"    route   memory  time      GB/s\n"+
		"    pinned  pinned  200.0 µs  15.70  pick\n"+
		"  output: the method does not say its output's size (plan.Outputs)\n", b.String())
	b.Reset()
	require.NoError(t, writeRouteTables(&b, nil))
	assert.Empty(t, b.String())
}
