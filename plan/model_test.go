package plan_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	_ "github.com/cuarray/cuarray/kernels" // the built-in methods
	"github.com/cuarray/cuarray/plan"
)

// httomo's worked example (docs/source/developers/memory_calculation.rst),
// line by line: calc_max_slices(0, (10, 20), np.float32(), 14450) of a
// method that needs its input and its output.
func TestSeedExample(t *testing.T) {
	other := [2]int{10, 20}
	// input_mem_per_slice = 800; output_mem_per_slice = 800
	terms, linear, err := plan.Terms(plan.Identity, 0, other, devarray.Float32, nil)
	require.NoError(t, err)
	require.True(t, linear)
	assert.Equal(t, []plan.Term{{Name: "input", PerSlice: 800}, {Name: "output", PerSlice: 800}}, terms)
	// max_slices = 14450 // 1600 = 9
	s, out, err := plan.Estimate(plan.Identity, plan.Raw, 0, other, devarray.Float32, 14450, nil)
	require.NoError(t, err)
	assert.Equal(t, 9, s, "14450 // (800 + 800)")
	assert.Equal(t, devarray.Float32, out, "the output dtype is the input's")
	// The device rounds each 7200-byte slab of 9 slices to 7424: 8 fit.
	s, _, err = plan.Estimate(plan.Identity, plan.Device, 0, other, devarray.Float32, 14450, nil)
	require.NoError(t, err)
	assert.Equal(t, 8, s, "2 × AlignUp(9×800) = 14848 > 14450")

	p, err := plan.ChunksRaw(plan.Identity, [3]int{1000, 10, 20}, 0, devarray.Float32, nil, 14450)
	require.NoError(t, err)
	assert.Equal(t, 9, p.MaxSlices)
	assert.True(t, p.Raw)
	assert.Equal(t, 1.0, p.Overhead, "no overhead factor")
	assert.Len(t, p.Chunks, 112, "1000 slices, 9 at a time")
	assert.Equal(t, "identity on [1000 10 20] float32 along axis 0, raw bytes (httomo's convention: unrounded, no overhead): "+
		"112 chunks of at most 9 slices (input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices)", p.Explain())

	dev := testdev.Open(t)
	led := dev.Ledger()
	require.NoError(t, led.SetLimit(accounting.Device, 14450))
	defer led.SetLimit(accounting.Device, 0)
	p, err = plan.ForDeviceRaw(dev, plan.Identity, [3]int{1000, 10, 20}, 0, devarray.Float32, nil)
	require.NoError(t, err)
	assert.Equal(t, 9, p.MaxSlices, "the limit, unrounded, no overhead")
	p, err = plan.ForDevice(dev, plan.Identity, [3]int{1000, 10, 20}, 0, devarray.Float32, nil)
	require.NoError(t, err)
	assert.Equal(t, 8, p.MaxSlices, "14450 / 1.1 = 13136: 8 slices of 2 × 6400")
}

// Every built-in method lists its allocations, and rounding them as the
// device does gives its MaxSlices, for random shapes, dtypes, memories
// and parameters; raw mode never fits fewer slices.
func TestModelsAgree(t *testing.T) {
	params := map[string][]plan.Params{
		"kernels.scale":     {nil, {"factor": 3}},
		"fbp.backproject":   {nil, {"size": 37}},
		"fbp.reconstruct":   {nil, {"size": 100}},
		"fbp.project":       {nil, {"angles": 45, "detectors": 63}},
		"fbp.filter":        {nil},
		"kernels.transpose": {nil},
		"identity":          {nil},
	}
	names := plan.Default.Names()
	require.Subset(t, names, []string{"identity", "kernels.scale", "kernels.transpose", "fbp.filter", "fbp.backproject", "fbp.reconstruct", "fbp.project"})
	for _, name := range names {
		m, err := plan.Default.Lookup(name)
		require.NoError(t, err)
		model, ok := m.(plan.Model)
		require.True(t, ok, "%s lists its allocations", name)
		ps, ok := params[name]
		require.True(t, ok, "a test case for %s", name)
		for i := range 40 {
			other := [2]int{1 + rand.IntN(400), 1 + rand.IntN(400)}
			dt := []devarray.DType{devarray.Float32, devarray.Float64}[rand.IntN(2)]
			avail := rand.Int64N(1 << 31)
			p := ps[i%len(ps)]
			what := fmt.Sprintf("%s %v %v %d bytes %v", name, other, dt, avail, p)
			want, out, err := m.MaxSlices(0, other, dt, avail, p)
			require.NoError(t, err, what)
			got := plan.MaxFit(avail, func(s int64) int64 {
				a, err := model.Allocs(0, other, dt, s, p)
				require.NoError(t, err, what)
				return plan.Total(a, plan.Device)
			})
			assert.Equal(t, want, got, "%s: MaxSlices and the rounded allocations", what)
			raw, rawOut, err := plan.Estimate(m, plan.Raw, 0, other, dt, avail, p)
			require.NoError(t, err, what)
			assert.GreaterOrEqual(t, raw, want, what)
			assert.Equal(t, out, rawOut, what)
			terms, linear, err := plan.Terms(model, 0, other, dt, p)
			require.NoError(t, err, what)
			assertTermsHonest(t, model, other, dt, p, terms, linear, what)
			if name != "fbp.reconstruct" {
				assert.True(t, linear, "%s: lines in the number of slices", what)
			}
		}
		// Past int64 fits nothing, in either mode, and does not wrap.
		for _, mode := range []plan.Mode{plan.Device, plan.Raw} {
			s, _, err := plan.Estimate(m, mode, 0, [2]int{math.MaxInt32, math.MaxInt32}, devarray.Float64, math.MaxInt64, nil)
			require.NoError(t, err, name)
			assert.LessOrEqual(t, s, 1, "%s %v: a slice of 2^62 elements of 8 bytes", name, mode)
		}
	}
}

// assertTermsHonest checks Terms' claim: a linear model's terms give its
// allocations at any number of slices, and a model called not linear
// leaves its line somewhere. fbp.reconstruct grows one workspace to the
// larger of the filter's (per slice) and the backprojector's (fixed)
// needs, so it is linear only when one of them wins at every size.
func assertTermsHonest(t *testing.T, model plan.Model, other [2]int, dt devarray.DType, p plan.Params, terms []plan.Term, linear bool, what string) {
	t.Helper()
	off := false
	for _, s := range []int64{1, 2, 3, 7, 64, 1000, 1 + rand.Int64N(5000)} {
		a, err := model.Allocs(0, other, dt, s, p)
		require.NoError(t, err, what)
		require.Len(t, a, len(terms), what)
		for i, term := range terms {
			if a[i].Bytes != term.PerSlice*s+term.Fixed {
				off = true
				assert.False(t, linear && s <= 1000, "%s: %s at %d slices is %d bytes, not %d×%d+%d", what, term.Name, s, a[i].Bytes, s, term.PerSlice, term.Fixed)
			}
		}
	}
	if !linear {
		assert.True(t, off, "%s: called not linear, yet every size is on its line", what)
	}
}

func TestTermsOfAPiecewiseModel(t *testing.T) {
	m, err := plan.Default.Lookup("fbp.reconstruct")
	require.NoError(t, err)
	model := m.(plan.Model)
	// 236 angles of 1 detector: the backprojector's angle table wins at 1
	// and 2 slices, the filter's rows by 1000: not a line.
	_, linear, err := plan.Terms(model, 0, [2]int{236, 1}, devarray.Float64, nil)
	require.NoError(t, err)
	assert.False(t, linear, "the workspace is the larger of two needs")
	// Wide rows: the filter wins from one slice on, a line.
	_, linear, err = plan.Terms(model, 0, [2]int{180, 256}, devarray.Float32, nil)
	require.NoError(t, err)
	assert.True(t, linear)
}

func TestRawModeErrors(t *testing.T) {
	_, _, err := plan.Estimate(copyMethod{"copy", 1}, plan.Raw, 0, [2]int{4, 4}, devarray.Float32, 1<<20, nil)
	assert.ErrorIs(t, err, plan.ErrNoModel, "a method that does not list its allocations")
	_, err = plan.ChunksRaw(copyMethod{"copy", 1}, [3]int{4, 4, 4}, 0, devarray.Float32, nil, 1<<20)
	assert.ErrorIs(t, err, plan.ErrNoModel)
	_, _, err = plan.Estimate(plan.Identity, plan.Mode(7), 0, [2]int{4, 4}, devarray.Float32, 1<<20, nil)
	assert.ErrorIs(t, err, accounting.ErrInvalidArgument)
	_, _, err = plan.Estimate(nil, plan.Raw, 0, [2]int{4, 4}, devarray.Float32, 1<<20, nil)
	assert.ErrorIs(t, err, plan.ErrNil)
	_, _, err = plan.Terms(nil, 0, [2]int{4, 4}, devarray.Float32, nil)
	assert.ErrorIs(t, err, plan.ErrNil)
	_, err = plan.ChunksRaw(plan.Identity, [3]int{4, 4, 4}, 0, devarray.Float32, nil, -1)
	assert.ErrorIs(t, err, accounting.ErrInvalidArgument)
	_, err = plan.ForDeviceRaw(nil, plan.Identity, [3]int{4, 4, 4}, 0, devarray.Float32, nil)
	assert.ErrorIs(t, err, plan.ErrNil)
	for _, tc := range []struct {
		name     string
		sliceDim int
		other    [2]int
		dt       devarray.DType
		params   plan.Params
		err      error
	}{
		{"axis", 3, [2]int{4, 4}, devarray.Float32, nil, devarray.ErrShape},
		{"negative", 0, [2]int{-4, 4}, devarray.Float32, nil, devarray.ErrShape},
		{"dtype", 0, [2]int{4, 4}, devarray.Invalid, nil, devarray.ErrDType},
		{"param", 0, [2]int{4, 4}, devarray.Float32, plan.Params{"bogus": 1}, plan.ErrParam},
	} {
		for _, mode := range []plan.Mode{plan.Device, plan.Raw} {
			_, _, err := plan.Estimate(plan.Identity, mode, tc.sliceDim, tc.other, tc.dt, 1<<20, tc.params)
			assert.ErrorIs(t, err, tc.err, "%s %v", tc.name, mode)
		}
	}
	s, _, err := plan.Estimate(plan.Identity, plan.Raw, 0, [2]int{10, 20}, devarray.Float32, 1599, nil)
	require.NoError(t, err)
	assert.Zero(t, s, "not one slice: 0, no error, as httomo's //")
	// A fit-nothing job is ErrTooLarge and its plan still explains itself.
	p, err := plan.ChunksRaw(plan.Identity, [3]int{3, 10, 20}, 0, devarray.Float32, nil, 1599)
	assert.ErrorIs(t, err, plan.ErrTooLarge)
	assert.Contains(t, p.Explain(), "1599 // 1600 = 0 slices")
}

func TestTotalAndFitTerms(t *testing.T) {
	a := []plan.Alloc{{"a", 1}, {"b", 300}, {"c", 0}}
	assert.Equal(t, int64(301), plan.Total(a, plan.Raw))
	assert.Equal(t, int64(256+512+256), plan.Total(a, plan.Device), "each rounded up, at least one granule")
	assert.Equal(t, int64(-1), plan.Total([]plan.Alloc{{"a", math.MaxInt64}, {"b", 1}}, plan.Raw))
	assert.Equal(t, int64(-1), plan.Total([]plan.Alloc{{"a", math.MaxInt64}}, plan.Device))
	assert.Equal(t, int64(-1), plan.Total([]plan.Alloc{{"a", -1}}, plan.Raw))
	x := rand.Int64N(1<<40) + 1
	assert.Equal(t, int64(math.MaxInt64), plan.Total([]plan.Alloc{{"a", math.MaxInt64 - x}, {"b", x}}, plan.Raw), "a sum of exactly MaxInt64 is a size")

	seed := []plan.Term{{"input", 800, 0}, {"output", 800, 0}}
	assert.Equal(t, 9, plan.FitTerms(seed, plan.Raw, 14450))
	assert.Equal(t, 8, plan.FitTerms(seed, plan.Device, 14450))
	assert.Equal(t, 8, plan.FitTerms([]plan.Term{{"in", 800, 0}, {"ws", 0, 1024}, {"out", 800, 0}}, plan.Raw, 14450), "(14450-1024)//1600")
	assert.Equal(t, 0, plan.FitTerms([]plan.Term{{"in", -800, 0}}, plan.Raw, 14450))
	assert.Equal(t, 0, plan.FitTerms([]plan.Term{{"in", math.MaxInt64, 0}, {"out", 1, 0}}, plan.Raw, math.MaxInt64))
	assert.Equal(t, 1<<40, plan.FitTerms(nil, plan.Raw, 0), "nothing to fit: as many as MaxFit counts")
	fixed := 807 + 1000*rand.Int64N(1<<20) // MaxInt64 ends in 807
	edge := []plan.Term{{"slab", (math.MaxInt64 - fixed) / 1000, fixed}}
	assert.Equal(t, 1000, plan.FitTerms(edge, plan.Raw, math.MaxInt64), "1000 slices take exactly MaxInt64 bytes, 1001 are past int64")

	p := plan.Plan{Raw: true, Available: 14450, MaxSlices: 8, Terms: []plan.Term{{"in", 800, 0}, {"ws", 0, 1024}, {"out", 800, 0}}}
	assert.Equal(t, "in 800 + out 800 = 1600 bytes per slice, ws 1024 bytes fixed; (14450 - 1024) // 1600 = 8 slices", p.Arithmetic())
	p.Terms = nil
	assert.Equal(t, "14450 bytes available fit 8 slices", p.Arithmetic())
	assert.Equal(t, "raw", plan.Raw.String())
	assert.Equal(t, "device", plan.Device.String())
}

// Identity runs, and its estimator passes Verify: its peak is its input
// and its output.
func TestIdentityVerify(t *testing.T) {
	dev := testdev.Open(t)
	for _, dt := range []devarray.DType{devarray.Float32, devarray.Float64, devarray.Uint8} {
		res, err := plan.Verify(dev, plan.Case{Method: plan.Identity, Shape: [3]int{30, 16, 32}, DType: dt})
		require.NoError(t, err, "%v", dt)
		assert.Equal(t, 2*accounting.AllocBytes(30*16*32*dt.Size()), res.Peak, "%v: input and output", dt)
		assert.Equal(t, 30, res.Estimated, "%v", dt)
	}
	in, err := devarray.FromBytes(dev, []byte{1, 2, 3, 4, 5, 6, 7, 8}, devarray.Uint8, 2, 2, 2)
	require.NoError(t, err)
	defer in.Free()
	out, err := plan.Identity.Run(plan.Env{Dev: dev}, in, 1, nil)
	require.NoError(t, err)
	got := make([]byte, 8)
	require.NoError(t, out.CopyTo(got))
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, got)
	require.NoError(t, out.Free())
	_, err = plan.Identity.Run(plan.Env{}, in, 0, nil)
	assert.ErrorIs(t, err, plan.ErrNil)
	_, err = plan.Identity.Run(plan.Env{Dev: dev}, in, 0, plan.Params{"x": 1})
	assert.ErrorIs(t, err, plan.ErrParam)
	assert.Equal(t, accounting.AllocBytes(8), dev.Ledger().Current(accounting.Device), "only the input is left")
}

// Identity's allocations are its input and output slabs, in bytes as the
// arrays hold them: none for no slices, the largest size int64 holds as
// itself, and -1 (fits nowhere) past it or for a negative count.
func TestIdentityAllocs(t *testing.T) {
	other := [2]int{1 + rand.IntN(400), 1 + rand.IntN(400)}
	s := 1 + rand.Int64N(1000)
	for _, tc := range []struct {
		name   string
		other  [2]int
		dtype  devarray.DType
		slices int64
		want   int64
	}{
		{"random", other, devarray.Float64, s, s * int64(other[0]*other[1]) * 8},
		{"no slices", other, devarray.Float32, 0, 0},
		{"negative slices", other, devarray.Float32, -s, -1},
		{"MaxInt64 bytes", [2]int{7 * 7 * 73 * 127 * 337, 92737 * 649657}, devarray.Uint8, 1, math.MaxInt64},
		{"2^63 bytes", [2]int{1 << 31, 1 << 30}, devarray.Float32, 1, -1},
		{"past 2^64 bytes", [2]int{1 << 31, 1 << 31}, devarray.Float64, 1 << 2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := plan.Identity.Allocs(0, tc.other, tc.dtype, tc.slices, nil)
			require.NoError(t, err)
			assert.Equal(t, []plan.Alloc{{Name: "input", Bytes: tc.want}, {Name: "output", Bytes: tc.want}}, a)
			if tc.want < 0 {
				assert.Equal(t, int64(-1), plan.Total(a, plan.Raw), "fits nowhere")
			}
		})
	}
}

// Identity on an empty array returns an empty array of the same shape
// and copies nothing, as the ledger shows.
func TestIdentityOfNothing(t *testing.T) {
	dev := testdev.Open(t)
	shape := []int{0, 1 + rand.IntN(9), 1 + rand.IntN(9)}
	for axis := range 3 {
		in, err := devarray.Empty(dev, devarray.Float32, shape...)
		require.NoError(t, err)
		before := dev.Ledger().Snapshot()
		out, err := plan.Identity.Run(plan.Env{Dev: dev}, in, axis, nil)
		require.NoError(t, err, "axis %d", axis)
		assert.Equal(t, shape, out.Shape(), "axis %d", axis)
		diff := accounting.Diff(before, dev.Ledger().Snapshot())
		assert.Zero(t, diff.CopyTotal(accounting.DtoD).Count, "axis %d: no copy", axis)
		require.NoError(t, out.Free())
		require.NoError(t, in.Free())
	}
}

// line is a Model of one allocation, its term: PerSlice*s + Fixed bytes,
// -1 past int64.
type line struct{ term plan.Term }

func (l line) Name() string { return "line" }

func (l line) MaxSlices(_ int, _ [2]int, dt devarray.DType, available int64, _ plan.Params) (int, devarray.DType, error) {
	return plan.FitTerms([]plan.Term{l.term}, plan.Device, available), dt, nil
}

func (l line) Run(plan.Env, *devarray.DevArray, int, plan.Params) (*devarray.DevArray, error) {
	return nil, plan.ErrNoModel
}

func (l line) Allocs(_ int, _ [2]int, _ devarray.DType, s int64, _ plan.Params) ([]plan.Alloc, error) {
	b := int64(-1)
	if hi, lo := bits.Mul64(uint64(l.term.PerSlice), uint64(s)); hi == 0 && lo <= uint64(math.MaxInt64-l.term.Fixed) {
		b = int64(lo) + l.term.Fixed
	}
	return []plan.Alloc{{Name: l.term.Name, Bytes: b}}, nil
}

// Terms reads a model's lines up to where int64 ends: a line whose 1000
// slices take exactly MaxInt64 bytes is a line, one that passes it at
// 1000 slices is not (its bytes there are -1), and allocations of no bytes
// at all (slices of an empty shape) are lines too.
func TestTermsToTheEndOfInt64(t *testing.T) {
	fixed := 807 + 1000*rand.Int64N(1<<20) // MaxInt64 ends in 807
	per := (math.MaxInt64 - fixed) / 1000
	for _, tc := range []struct {
		name   string
		model  plan.Model
		other  [2]int
		want   []plan.Term
		linear bool
	}{
		{"MaxInt64 at 1000 slices", line{plan.Term{Name: "slab", PerSlice: per, Fixed: fixed}}, [2]int{1, 1}, []plan.Term{{"slab", per, fixed}}, true},
		{"past MaxInt64 at 1000 slices", line{plan.Term{Name: "slab", PerSlice: per + 1, Fixed: fixed}}, [2]int{1, 1}, []plan.Term{{"slab", per + 1, fixed}}, false},
		{"empty slices", plan.Identity, [2]int{0, 1 + rand.IntN(100)}, []plan.Term{{"input", 0, 0}, {"output", 0, 0}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			terms, linear, err := plan.Terms(tc.model, 0, tc.other, devarray.Float32, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, terms)
			assert.Equal(t, tc.linear, linear)
		})
	}
}

// capped is a line that refuses runs of more than max slices.
type capped struct {
	line
	max int64
}

func (c capped) Allocs(sliceDim int, other [2]int, dt devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if s > c.max {
		return nil, fmt.Errorf("%d slices: at most %d: %w", s, c.max, plan.ErrParam)
	}
	return c.line.Allocs(sliceDim, other, dt, s, p)
}

// A raw estimate counts no run the model refuses: the most slices is the
// most it takes, however much memory there is.
func TestRawEstimateOfARefusingModel(t *testing.T) {
	max := 1 + rand.Int64N(1000)
	m := capped{line{plan.Term{Name: "slab", PerSlice: 1 + rand.Int64N(1<<20)}}, max}
	s, _, err := plan.Estimate(m, plan.Raw, 0, [2]int{1, 1}, devarray.Float32, math.MaxInt64, nil)
	require.NoError(t, err)
	assert.Equal(t, int(max), s)
}
