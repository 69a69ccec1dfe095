package transfer_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// A cost set that Validate would refuse is refused by its setter, with an
// error matching ErrProfile, and the profile keeps what it had; a nil
// profile is an error, not a panic.
func TestProfileSettersRefuse(t *testing.T) {
	r := testrand.For(t)
	good := transfer.Cost{Latency: time.Duration(1+r.IntN(100)) * time.Microsecond, GBps: 1 + r.Float64()*50}
	for _, tc := range []struct {
		name string
		set  func(p *transfer.Profile) error
		want string
	}{
		{"auto is not saved", func(p *transfer.Profile) error {
			return p.SetCost(transfer.PathAuto, accounting.HtoD, good, 0)
		}, `path "auto" is not one of`},
		{"d2d does not move HtoD", func(p *transfer.Profile) error {
			return p.SetCost(transfer.PathD2D, accounting.HtoD, good, 0)
		}, `d2d path does not move "HtoD"`},
		{"read-mostly does not move DtoH", func(p *transfer.Profile) error {
			return p.SetRouteCost(transfer.RouteManagedReadMostly, accounting.DtoH, good, 0)
		}, `managed-read-mostly path does not move "DtoH"`},
		{"no such route", func(p *transfer.Profile) error {
			return p.SetRouteCost(transfer.Route(200), accounting.HtoD, good, 0)
		}, `path "Route(200)" is not one of`},
		{"zero bandwidth", func(p *transfer.Profile) error {
			return p.SetCost(transfer.PathPinned, accounting.HtoD, transfer.Cost{Latency: good.Latency}, 0)
		}, "want a positive figure"},
		{"NaN bandwidth", func(p *transfer.Profile) error {
			return p.SetCost(transfer.PathPinned, accounting.DtoH, transfer.Cost{GBps: math.NaN()}, 0)
		}, "want a positive figure"},
		{"negative latency", func(p *transfer.Profile) error {
			return p.SetRouteCost(transfer.RouteManaged, accounting.HtoD, transfer.Cost{Latency: -time.Microsecond, GBps: good.GBps}, 0)
		}, "want 0 to 10 s"},
		{"latency over 10 s", func(p *transfer.Profile) error {
			return p.SetCost(transfer.PathStaged, accounting.HtoD, transfer.Cost{Latency: 11 * time.Second, GBps: good.GBps}, 0)
		}, "want 0 to 10 s"},
		{"infinite fit error", func(p *transfer.Profile) error {
			return p.SetCost(transfer.PathStaged, accounting.HtoD, good, math.Inf(1))
		}, "fit error"},
		{"registration at 0 GB/s", func(p *transfer.Profile) error {
			return p.SetRegistrationCost(transfer.Cost{Latency: good.Latency})
		}, "registration"},
		{"registration in negative time", func(p *transfer.Profile) error {
			return p.SetRegistrationCost(transfer.Cost{Latency: -1, GBps: good.GBps})
		}, "registration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := transfer.DefaultProfile(driver.Info{Name: "cuda:0", Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"})
			before, err := p.JSON()
			require.NoError(t, err)
			err = tc.set(p)
			assert.ErrorIs(t, err, transfer.ErrProfile)
			assert.ErrorContains(t, err, tc.want)
			after, err := p.JSON()
			require.NoError(t, err)
			assert.Equal(t, string(before), string(after), "a refused cost changes nothing")
		})
	}
	var none *transfer.Profile
	assert.ErrorIs(t, none.SetCost(transfer.PathPinned, accounting.HtoD, good, 0), transfer.ErrProfile)
	assert.ErrorIs(t, none.SetRouteCost(transfer.RouteManaged, accounting.HtoD, good, 0), transfer.ErrProfile)
	assert.ErrorIs(t, none.SetRegistrationCost(good), transfer.ErrProfile)
}

// A cost in range is set, replacing the one the path had, and reads back.
func TestProfileSetterReplaces(t *testing.T) {
	r := testrand.For(t)
	p := transfer.DefaultProfile(driver.Info{Name: "cuda:0", Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"})
	n := len(p.Costs)
	c := transfer.Cost{Latency: time.Duration(1+r.IntN(1000)) * time.Microsecond, GBps: 1 + r.Float64()*100}
	require.NoError(t, p.SetRouteCost(transfer.RouteManagedPrefetch, accounting.DtoH, c, r.Float64()))
	got, ok := p.RouteCost(transfer.RouteManagedPrefetch, accounting.DtoH)
	require.True(t, ok)
	assert.Equal(t, c, got)
	assert.Len(t, p.Costs, n, "replaced, not added")
	reg := transfer.Cost{Latency: time.Duration(r.IntN(100)) * time.Microsecond, GBps: 1 + r.Float64()}
	require.NoError(t, p.SetRegistrationCost(reg))
	gotReg, ok := p.RegistrationCost()
	require.True(t, ok)
	assert.Equal(t, reg, gotReg)
}
