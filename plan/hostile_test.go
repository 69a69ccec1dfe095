package plan_test

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/hostile"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/plan"
)

// Every exported function and method of plan, given nil, zero, negative,
// overflowing and closed inputs, returns a typed error (zero values where
// it returns none), never panics nor hangs, and leaks nothing (testdev
// checks the ledger).
func TestHostileInputs(t *testing.T) {
	dev := testdev.Open(t)
	m := copyMethod{"copy", 1}
	var nilReg *plan.Registry
	closedDev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	require.NoError(t, closedDev.Close())
	big := math.MaxInt
	f32 := devarray.Float32

	hostile.Run(t, []hostile.Case{
		{"Chunks nil method", func() error { return hostile.Second(plan.Chunks(nil, [3]int{1, 1, 1}, 0, f32, nil, 1<<20, 1)) }, plan.ErrNil},
		{"Chunks axis -1", func() error { return hostile.Second(plan.Chunks(m, [3]int{1, 1, 1}, -1, f32, nil, 1<<20, 1)) }, devarray.ErrShape},
		{"Chunks axis 3", func() error { return hostile.Second(plan.Chunks(m, [3]int{1, 1, 1}, 3, f32, nil, 1<<20, 1)) }, devarray.ErrShape},
		{"Chunks negative shape", func() error { return hostile.Second(plan.Chunks(m, [3]int{4, -1, 1}, 0, f32, nil, 1<<20, 1)) }, devarray.ErrShape},
		{"Chunks negative available", func() error { return hostile.Second(plan.Chunks(m, [3]int{4, 1, 1}, 0, f32, nil, -1, 1)) }, accounting.ErrInvalidArgument},
		{"Chunks overhead NaN", func() error { return hostile.Second(plan.Chunks(m, [3]int{4, 1, 1}, 0, f32, nil, 1<<20, math.NaN())) }, accounting.ErrInvalidArgument},
		{"Chunks overhead 0", func() error { return hostile.Second(plan.Chunks(m, [3]int{4, 1, 1}, 0, f32, nil, 1<<20, 0)) }, accounting.ErrInvalidArgument},
		{"Chunks invalid dtype", func() error {
			return hostile.Second(plan.Chunks(m, [3]int{4, 1, 1}, 0, devarray.Invalid, nil, 1<<20, 1))
		}, devarray.ErrDType},
		{"Chunks shape bytes overflow", func() error { return hostile.Second(plan.Chunks(m, [3]int{big, big, 1}, 0, f32, nil, 1<<20, 1)) }, devarray.ErrOverflow},
		// 2^62 slices of 4 bytes, planned in a few hundred bytes: billions
		// of chunks. It hung (and grew without bound) before.
		{"Chunks billions of chunks", func() error {
			return hostile.Second(plan.Chunks(m, [3]int{1 << 40, 1, 1}, 0, devarray.Uint8, nil, 1<<10, 1))
		}, plan.ErrTooLarge},
		{"Chunks nothing fits", func() error { return hostile.Second(plan.Chunks(m, [3]int{4, 1 << 20, 1}, 0, f32, nil, 1<<10, 1)) }, plan.ErrTooLarge},
		{"Chunks MaxInt64 available", func() error { return hostile.Second(plan.Chunks(m, [3]int{4, 4, 4}, 0, f32, nil, math.MaxInt64, 1)) }, nil},
		{"Chunks empty job", func() error { return hostile.Second(plan.Chunks(m, [3]int{0, 0, 0}, 0, f32, nil, 0, 1)) }, nil},
		{"ForDevice nil device", func() error { return hostile.Second(plan.ForDevice(nil, m, [3]int{1, 1, 1}, 0, f32, nil)) }, plan.ErrNil},
		{"ForDevice nil method", func() error { return hostile.Second(plan.ForDevice(dev, nil, [3]int{1, 1, 1}, 0, f32, nil)) }, plan.ErrNil},
		{"ForDevice closed device", func() error { return hostile.Second(plan.ForDevice(closedDev, m, [3]int{1, 1, 1}, 0, f32, nil)) }, device.ErrClosed},
		{"Verify nil device", func() error {
			return hostile.Second(plan.Verify(nil, plan.Case{Method: m, Shape: [3]int{1, 1, 1}, DType: f32}))
		}, plan.ErrNil},
		{"Verify nil method", func() error { return hostile.Second(plan.Verify(dev, plan.Case{Shape: [3]int{1, 1, 1}, DType: f32})) }, plan.ErrNil},
		{"Verify zero case", func() error { return hostile.Second(plan.Verify(dev, plan.Case{})) }, plan.ErrNil},
		{"Verify axis 7", func() error {
			return hostile.Second(plan.Verify(dev, plan.Case{Method: m, Shape: [3]int{1, 1, 1}, SliceDim: 7, DType: f32}))
		}, devarray.ErrShape},
		{"Verify negative shape", func() error {
			return hostile.Second(plan.Verify(dev, plan.Case{Method: m, Shape: [3]int{2, -2, 2}, DType: f32}))
		}, devarray.ErrShape},
		{"Verify overflowing shape", func() error {
			return hostile.Second(plan.Verify(dev, plan.Case{Method: m, Shape: [3]int{big, big, 2}, DType: f32}))
		}, devarray.ErrOverflow},
		// 4 TiB of input: refused before the host data is made (a make of
		// 4 TiB killed the process before).
		{"Verify more than the device", func() error {
			return hostile.Second(plan.Verify(dev, plan.Case{Method: m, Shape: [3]int{1 << 20, 1 << 20, 1}, DType: f32}))
		}, plan.ErrTooLarge},
		{"Verify closed device", func() error {
			return hostile.Second(plan.Verify(closedDev, plan.Case{Method: m, Shape: [3]int{1, 1, 1}, DType: f32}))
		}, device.ErrClosed},
		{"Verify invalid dtype", func() error { return hostile.Second(plan.Verify(dev, plan.Case{Method: m, Shape: [3]int{1, 1, 1}})) }, devarray.ErrDType},
		{"Identity MaxSlices axis -1", func() error { _, _, err := plan.Identity.MaxSlices(-1, [2]int{4, 4}, f32, 1<<20, nil); return err }, devarray.ErrShape},
		{"Identity MaxSlices axis 3", func() error { _, _, err := plan.Identity.MaxSlices(3, [2]int{4, 4}, f32, 1<<20, nil); return err }, devarray.ErrShape},
		{"Identity Allocs axis 3", func() error { return hostile.Second(plan.Identity.Allocs(3, [2]int{4, 4}, f32, 1, nil)) }, devarray.ErrShape},
		{"Identity Allocs negative first axis", func() error { return hostile.Second(plan.Identity.Allocs(0, [2]int{-1, 4}, f32, 1, nil)) }, devarray.ErrShape},
		{"Identity Allocs negative second axis", func() error { return hostile.Second(plan.Identity.Allocs(2, [2]int{4, -1}, f32, 1, nil)) }, devarray.ErrShape},
		{"Identity MaxSlices invalid dtype", func() error {
			_, _, err := plan.Identity.MaxSlices(0, [2]int{4, 4}, devarray.Invalid, 1<<20, nil)
			return err
		}, devarray.ErrDType},
		{"Identity Allocs a parameter", func() error {
			return hostile.Second(plan.Identity.Allocs(1, [2]int{4, 4}, f32, 1, plan.Params{"x": 1}))
		}, plan.ErrParam},
		{"Identity Allocs axis 2", func() error { return hostile.Second(plan.Identity.Allocs(2, [2]int{0, 0}, f32, 1, nil)) }, nil},
		{"nil Registry Register", func() error { return nilReg.Register(m) }, plan.ErrNil},
		{"nil Registry Lookup", func() error { return hostile.Second(nilReg.Lookup("copy")) }, plan.ErrNil},
		{"nil Registry Names", func() error { assert.Nil(t, nilReg.Names()); return nil }, nil},
		{"Register nil method", func() error { return new(plan.Registry).Register(nil) }, plan.ErrNil},
		{"Register empty name", func() error { return new(plan.Registry).Register(copyMethod{"", 1}) }, accounting.ErrInvalidArgument},
		{"Lookup empty", func() error { return hostile.Second(new(plan.Registry).Lookup("")) }, plan.ErrUnknownMethod},
		{"MaxFit nil", func() error { assert.Zero(t, plan.MaxFit(1<<20, nil)); return nil }, nil},
		{"MaxFit negative available", func() error { assert.Zero(t, plan.MaxFit(-1, func(s int64) int64 { return s })); return nil }, nil},
		{"MaxFit overflowing total", func() error {
			assert.Equal(t, 3, plan.MaxFit(math.MaxInt64, func(s int64) int64 {
				if s > 3 {
					return -1 // what an overflowed product turns into
				}
				return s
			}))
			return nil
		}, nil},
		{"MaxFit everything fits", func() error {
			assert.Positive(t, plan.MaxFit(math.MaxInt64, func(int64) int64 { return 0 }))
			return nil
		}, nil},
		{"zero Plan Explain", func() error { assert.NotEmpty(t, plan.Plan{}.Explain()); return nil }, nil},
		{"zero Result String", func() error { assert.NotEmpty(t, plan.Result{}.String()); return nil }, nil},
	})
}

// Concurrent hostile use of a registry: registrations (duplicates
// included), lookups and listings from many goroutines.
func TestHostileConcurrentRegistry(t *testing.T) {
	var r plan.Registry
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := string(rune('a' + (g+i)%8))
				if err := r.Register(copyMethod{name, 1}); err != nil {
					assert.ErrorIs(t, err, plan.ErrDuplicate)
				}
				if _, err := r.Lookup(name); err != nil {
					assert.ErrorIs(t, err, plan.ErrUnknownMethod)
				}
				_ = r.Names()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, r.Names(), 8)
}
