package plan_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/plan"
)

// copyMethod copies its input into a new array through a temporary of the
// same size; its estimator counts what countTemps says it should.
type copyMethod struct {
	name       string
	countTemps int // 1 is the truth: input + temporary + output = 3 slabs
}

func (m copyMethod) Name() string { return m.name }

func (m copyMethod) MaxSlices(sliceDim int, other [2]int, dt devarray.DType, available int64, _ plan.Params) (int, devarray.DType, error) {
	return plan.MaxFit(available, func(s int64) int64 {
		return int64(2+m.countTemps) * accounting.AllocBytes(s*int64(other[0]*other[1])*dt.Size())
	}), dt, nil
}

func (m copyMethod) Run(env plan.Env, in *devarray.DevArray, _ int, _ plan.Params) (*devarray.DevArray, error) {
	tmp, err := devarray.Empty(env.Dev, in.DType(), in.Shape()...)
	if err != nil {
		return nil, err
	}
	defer tmp.Free()
	out, err := devarray.Empty(env.Dev, in.DType(), in.Shape()...)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, in.NBytes())
	if err := errors.Join(in.CopyTo(buf), tmp.CopyFrom(buf), out.CopyFrom(buf)); err != nil {
		return nil, errors.Join(err, out.Free())
	}
	return out, nil
}

func TestVerifyCatchesWrongEstimators(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		m     copyMethod
		ratio float64
		err   error
	}{
		{copyMethod{"exact", 1}, 1, nil},
		{copyMethod{"forgets the temporary", 0}, 1.5, plan.ErrEstimate},
		{copyMethod{"counts it three times", 3}, 0.6, plan.ErrEstimate},
	} {
		res, err := plan.Verify(dev, plan.Case{Method: tc.m, Shape: [3]int{20, 16, 32}, DType: devarray.Float32})
		assert.ErrorIs(t, err, tc.err, tc.m.name)
		assert.Equal(t, 20, res.Slices)
		assert.Equal(t, int64(3*20*16*32*4), res.Peak, "%s: input, temporary and output", tc.m.name)
		assert.InDelta(t, tc.ratio, res.Ratio, 0.001, tc.m.name)
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Device))

	_, err := plan.Verify(dev, plan.Case{Method: copyMethod{"exact", 1}, Shape: [3]int{2, 2, 2}, SliceDim: 3, DType: devarray.Float32})
	assert.ErrorIs(t, err, devarray.ErrShape)
}

func TestMaxFit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		available int64
		total     func(int64) int64
		want      int
	}{
		{"exact multiple", 1000, func(s int64) int64 { return 100 * s }, 10},
		{"rounded up", 1000, func(s int64) int64 { return accounting.AlignUp(300 * s) }, 2}, // 900 B take 1 KiB
		{"fixed cost", 1000, func(s int64) int64 { return 400 + 100*s }, 6},
		{"none fits", 99, func(s int64) int64 { return 100 * s }, 0},
		{"overflow is no fit", 1 << 62, func(s int64) int64 { return -1 }, 0},
		{"huge", 1 << 60, func(s int64) int64 { return s }, 1 << 40},
	} {
		assert.Equal(t, tc.want, plan.MaxFit(tc.available, tc.total), tc.name)
	}
}

func TestChunks(t *testing.T) {
	m := copyMethod{"copy", 1} // 3 slabs of 1 KiB per slice
	for _, tc := range []struct {
		name      string
		slices    int
		available int64
		overhead  float64
		want      []plan.Chunk
		err       error
	}{
		{"all at once", 10, 30 << 10, 1, []plan.Chunk{{0, 10}}, nil},
		{"even split", 10, 12 << 10, 1, []plan.Chunk{{0, 4}, {4, 3}, {7, 3}}, nil},
		{"overhead shrinks the room", 10, 30 << 10, 1.1, []plan.Chunk{{0, 5}, {5, 5}}, nil},
		{"one slice at a time", 3, 3 << 10, 1, []plan.Chunk{{0, 1}, {1, 1}, {2, 1}}, nil},
		{"empty job", 0, 3 << 10, 1, nil, nil},
		{"not one slice", 4, 3<<10 - 1, 1, nil, plan.ErrTooLarge},
		{"bad overhead", 4, 3 << 10, 0.5, nil, accounting.ErrInvalidArgument},
	} {
		p, err := plan.Chunks(m, [3]int{tc.slices, 16, 16}, 0, devarray.Float32, nil, tc.available, tc.overhead)
		assert.ErrorIs(t, err, tc.err, tc.name)
		assert.Equal(t, tc.want, p.Chunks, tc.name)
		if err == nil && tc.slices > 0 {
			assert.Contains(t, p.Explain(), "copy on [", tc.name)
		}
	}
}

// A job is planned along any of its three axes: the chunks cover that
// axis, each fits, and the other two axes size a slice.
func TestChunksAlongEachAxis(t *testing.T) {
	m := copyMethod{"copy", 1}
	for axis := range 3 {
		t.Run(fmt.Sprint("axis ", axis), func(t *testing.T) {
			var shape [3]int
			for i := range shape {
				shape[i] = 8 + rand.IntN(24)
			}
			slice := int64(shape[(axis+1)%3]*shape[(axis+2)%3]) * 4                         // float32
			bytes := func(s int) int64 { return 3 * accounting.AllocBytes(int64(s)*slice) } // input, temporary, output
			available := bytes(1) + rand.Int64N(bytes(shape[axis]-1)-bytes(1))              // fewer than all fit
			p, err := plan.Chunks(m, shape, axis, devarray.Float32, nil, available, 1)
			require.NoError(t, err)
			assert.Equal(t, axis, p.SliceDim)
			assert.LessOrEqual(t, bytes(p.MaxSlices), available, "a chunk of MaxSlices fits")
			assert.Greater(t, bytes(p.MaxSlices+1), available, "one more does not")
			next := 0
			for _, c := range p.Chunks {
				assert.Equal(t, next, c.Start, "chunks in order, each slice once")
				assert.LessOrEqual(t, c.Len, p.MaxSlices)
				next += c.Len
			}
			assert.Equal(t, shape[axis], next, "the chunks cover axis %d", axis)
		})
	}
}

// A job may take MaxChunks chunks, and no more.
func TestChunksUpToMaxChunks(t *testing.T) {
	m := copyMethod{"copy", 1}
	one := 3 * accounting.AllocBytes(16*16*4) // one float32 slice of 16×16: input, temporary, output
	for _, tc := range []struct {
		name   string
		slices int
		err    error
	}{
		{"MaxChunks", plan.MaxChunks, nil},
		{"one more", plan.MaxChunks + 1, plan.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.Chunks(m, [3]int{tc.slices, 16, 16}, 0, devarray.Float32, nil, one+rand.Int64N(one), 1)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				assert.Empty(t, p.Chunks)
				return
			}
			require.NoError(t, err)
			require.Len(t, p.Chunks, plan.MaxChunks)
			assert.Equal(t, plan.Chunk{Start: plan.MaxChunks - 1, Len: 1}, p.Chunks[plan.MaxChunks-1], "one slice at a time")
		})
	}
}

// inPlace works on its input in place and returns it: its run allocates
// nothing but the input.
type inPlace struct{}

func (inPlace) Name() string { return "in place" }

func (inPlace) MaxSlices(_ int, other [2]int, dt devarray.DType, available int64, _ plan.Params) (int, devarray.DType, error) {
	return plan.MaxFit(available, func(s int64) int64 {
		return accounting.AllocBytes(s * int64(other[0]*other[1]) * dt.Size())
	}), dt, nil
}

func (inPlace) Run(_ plan.Env, in *devarray.DevArray, _ int, _ plan.Params) (*devarray.DevArray, error) {
	return in, nil
}

// A method that runs in place verifies on a device whose memory its input
// fills exactly, and the input is freed once.
func TestVerifyFillsTheDevice(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	shape := [3]int{1 + rand.IntN(64), 16, 32}
	need, err := accounting.EstimateBytes(shape[:], devarray.Float32)
	require.NoError(t, err)
	require.NoError(t, led.SetLimit(accounting.Device, led.Current(accounting.Device)+need))
	defer led.SetLimit(accounting.Device, 0)
	res, err := plan.Verify(dev, plan.Case{Method: inPlace{}, Shape: shape, DType: devarray.Float32})
	require.NoError(t, err, "the input alone fits")
	assert.Equal(t, need, res.Peak)
	assert.Equal(t, shape[0], res.Estimated)

	require.NoError(t, led.SetLimit(accounting.Device, led.Current(accounting.Device)+need-1))
	_, err = plan.Verify(dev, plan.Case{Method: inPlace{}, Shape: shape, DType: devarray.Float32})
	assert.ErrorIs(t, err, plan.ErrTooLarge, "a byte less: the input does not fit")
}

// short is inPlace with an estimator that answers fewer slices by under.
type short struct {
	inPlace
	under int
}

func (m short) MaxSlices(sliceDim int, other [2]int, dt devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	n, out, err := m.inPlace.MaxSlices(sliceDim, other, dt, available, p)
	return n - m.under, out, err
}

// Verify takes an estimate down to exactly MinRatio of the slices run (95 %:
// 19 of 20), and refuses one slice less.
func TestVerifyMinRatio(t *testing.T) {
	dev := testdev.Open(t)
	k := 1 + rand.IntN(3)
	shape := [3]int{20 * k, 8, 8}
	for _, tc := range []struct {
		name  string
		under int
		err   error
	}{
		{"exact", 0, nil},
		{"95 %", k, nil},
		{"a slice less", k + 1, plan.ErrEstimate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := plan.Verify(dev, plan.Case{Method: short{under: tc.under}, Shape: shape, DType: devarray.Float64})
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, shape[0]-tc.under, res.Estimated)
		})
	}
}

func TestForDeviceUsesTheLimit(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	require.NoError(t, led.SetLimit(accounting.Device, 33<<10))
	defer led.SetLimit(accounting.Device, 0)
	require.NoError(t, led.SetOverhead(1.1))
	p, err := plan.ForDevice(dev, copyMethod{"copy", 1}, [3]int{25, 16, 16}, 0, devarray.Float32, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(33<<10), p.Available)
	assert.Equal(t, 10, p.MaxSlices, "33 KiB / 1.1 = 30 KiB: 10 slices of 3 KiB")
	assert.Equal(t, []plan.Chunk{{0, 9}, {9, 8}, {17, 8}}, p.Chunks)
	assert.Equal(t, "copy on [25 16 16] float32 along axis 0: 3 chunks of at most 9 slices (33.00 KiB available / overhead 1.10 fits 10 slices)", p.Explain())
}

func TestRegistry(t *testing.T) {
	var r plan.Registry
	require.NoError(t, r.Register(copyMethod{"b", 1}))
	require.NoError(t, r.Register(copyMethod{"a", 1}))
	assert.ErrorIs(t, r.Register(copyMethod{"a", 2}), plan.ErrDuplicate)
	assert.Equal(t, []string{"a", "b"}, r.Names())
	m, err := r.Lookup("a")
	require.NoError(t, err)
	assert.Equal(t, 1, m.(copyMethod).countTemps, "the first registration stays")
	_, err = r.Lookup("c")
	assert.ErrorIs(t, err, plan.ErrUnknownMethod)
	assert.ErrorContains(t, err, "known: a, b)", "the names as a list, not a Go slice")
	var empty plan.Registry
	_, err = empty.Lookup("a")
	assert.ErrorIs(t, err, plan.ErrUnknownMethod)
	assert.ErrorContains(t, err, "(none are registered)", "an empty registry says so, not an empty list")
	assert.Equal(t, 7, plan.Params{"x": 7}.Get("x", 1))
	assert.Equal(t, 1, plan.Params(nil).Get("x", 1))
}
