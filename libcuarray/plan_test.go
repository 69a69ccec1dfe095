//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
)

func askPlan(t *testing.T, req string) (planAnswer, error) {
	t.Helper()
	b, err := planMaxSlices([]byte(req))
	var a planAnswer
	if err == nil {
		require.NoError(t, json.Unmarshal(b, &a), "%s", b)
	}
	return a, err
}

// httomo's worked example through the C entry point's JSON, by method and
// by terms: 9 slices raw, 8 as the device rounds them.
func TestPlanMaxSlicesSeed(t *testing.T) {
	a, err := askPlan(t, `{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float32", "available_memory": 14450, "raw": true}`)
	require.NoError(t, err)
	assert.Equal(t, planAnswer{MaxSlices: 9, OutDType: "float32", Arithmetic: "input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices"}, a)
	a, err = askPlan(t, `{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float32", "available_memory": 14450}`)
	require.NoError(t, err)
	assert.Equal(t, planAnswer{MaxSlices: 8, OutDType: "float32"}, a)
	terms := `"terms": [{"name": "input", "per_slice_bytes": 800, "fixed_bytes": 0}, {"name": "output", "per_slice_bytes": 800, "fixed_bytes": 0}]`
	a, err = askPlan(t, `{`+terms+`, "other_dims": [10, 20], "dtype": "float32", "out_dtype": "float64", "available_memory": 14450, "raw": true}`)
	require.NoError(t, err)
	assert.Equal(t, planAnswer{MaxSlices: 9, OutDType: "float64", Arithmetic: "input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices"}, a)
	a, err = askPlan(t, `{`+terms+`, "other_dims": [10, 20], "dtype": "float32", "available_memory": 14450}`)
	require.NoError(t, err)
	assert.Equal(t, planAnswer{MaxSlices: 8, OutDType: "float32"}, a)

	b, err := planMethods()
	require.NoError(t, err)
	var names []string
	require.NoError(t, json.Unmarshal(b, &names))
	assert.Equal(t, plan.Default.Names(), names)
	assert.Contains(t, names, "fbp.reconstruct", "the kernels' methods are registered")
}

// The entry point answers what the planner answers, for every method,
// random shapes, dtypes and memories, in both modes, with the arithmetic
// in raw mode where the method's memory is linear in the slices. (When it
// wanted arithmetic for every method it failed 9 runs of 200: those drew a
// shape where fbp.reconstruct's memory is not linear.)
func TestPlanMaxSlicesMatchesPlanner(t *testing.T) {
	for _, name := range plan.Default.Names() {
		m, err := plan.Default.Lookup(name)
		require.NoError(t, err)
		for range 20 {
			other := [2]int{1 + rand.IntN(300), 1 + rand.IntN(300)}
			dt := []devarray.DType{devarray.Float32, devarray.Float64}[rand.IntN(2)]
			avail := rand.Int64N(1 << 32)
			for _, mode := range []plan.Mode{plan.Device, plan.Raw} {
				req := fmt.Sprintf(`{"method": %q, "slice_dim": 0, "other_dims": [%d, %d], "dtype": %q, "available_memory": %d, "raw": %v}`,
					name, other[0], other[1], dt, avail, mode == plan.Raw)
				want, out, err := plan.Estimate(m, mode, 0, other, dt, avail, nil)
				require.NoError(t, err, req)
				a, err := askPlan(t, req)
				require.NoError(t, err, req)
				assert.Equal(t, want, a.MaxSlices, req)
				assert.Equal(t, out.String(), a.OutDType, req)
				// Raw mode explains a linear model's answer; a piecewise one
				// (fbp.reconstruct's workspace at some shapes) gets none.
				linear := false
				if model, ok := m.(plan.Model); ok {
					_, linear, err = plan.Terms(model, 0, other, dt, nil)
					require.NoError(t, err, req)
				}
				assert.Equal(t, mode == plan.Raw && linear, a.Arithmetic != "", "%s: arithmetic in raw mode, for a linear model", req)
			}
		}
	}
}

func TestPlanMaxSlicesBadRequests(t *testing.T) {
	const ok = `"slice_dim": 0, "other_dims": [10, 20], "dtype": "float32", "available_memory": 14450`
	for _, req := range []string{
		``, `{`, `[]`, `{"method": "identity", ` + ok + `} {}`,
		`{"method": "nope", ` + ok + `}`,
		`{` + ok + `}`,
		`{"method": "identity", "terms": [], ` + ok + `}`,
		`{"method": "identity", "bogus": 1, ` + ok + `}`,
		`{"method": "identity", "slice_dim": 3, "other_dims": [10, 20], "dtype": "float32", "available_memory": 1}`,
		`{"method": "identity", "slice_dim": 0, "other_dims": [10], "dtype": "float32", "available_memory": 1}`,
		`{"method": "identity", "slice_dim": 0, "other_dims": [10, -20], "dtype": "float32", "available_memory": 1}`,
		`{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float7", "available_memory": 1}`,
		`{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float32"}`,
		`{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float32", "available_memory": -1}`,
		`{"method": "identity", "params": {"x": 1}, ` + ok + `}`,
		`{"method": "fbp.filter", "slice_dim": 1, "other_dims": [10, 20], "dtype": "float32", "available_memory": 1}`,
		`{"method": "fbp.filter", "slice_dim": 0, "other_dims": [10, 20], "dtype": "int8", "available_memory": 1}`,
		`{"terms": [{"name": "a", "per_slice_bytes": -1, "fixed_bytes": 0}], ` + ok + `}`,
		`{"terms": [], "params": {"x": 1}, ` + ok + `}`,
		`{"terms": [], "out_dtype": "float7", ` + ok + `}`,
	} {
		_, err := askPlan(t, req)
		require.Error(t, err, req)
		assert.True(t, strings.HasPrefix(err.Error(), "bad request: "), "%s: %v", req, err)
	}
}

// A scope on a device counts what is allocated on it while it is the
// innermost; popping it hands back its counts, once.
func TestScopePushPop(t *testing.T) {
	dev, err := openDevice("sim:0?mem=64MiB")
	require.NoError(t, err)
	outer, err := scopePush(dev, "outer")
	require.NoError(t, err)
	inner, err := scopePush(dev, "inner")
	require.NoError(t, err)
	a, err := empty(dev, "float32", []int{1000}, false)
	require.NoError(t, err)
	b, err := empty(dev, "float64", []int{1000}, false)
	require.NoError(t, err)
	require.NoError(t, releaseArray(a))

	_, err = scopePop(outer)
	require.ErrorContains(t, err, "not the innermost", "pop the inner one first")
	js, err := scopePop(inner)
	require.NoError(t, err)
	var snap struct {
		Name   string
		Memory map[string]struct{ Peak, Current, Allocs int64 }
	}
	require.NoError(t, json.Unmarshal(js, &snap))
	assert.Equal(t, "inner", snap.Name)
	assert.Equal(t, int64(4096+8192), snap.Memory["device"].Peak, "both arrays at once, each rounded to 256 bytes")
	assert.Equal(t, int64(8192), snap.Memory["device"].Current)
	assert.Equal(t, int64(2), snap.Memory["device"].Allocs)
	_, err = scopePop(inner)
	assert.ErrorIs(t, err, errHandle, "popped once")
	require.NoError(t, releaseArray(b))
	js, err = scopePop(outer)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &snap))
	assert.Equal(t, int64(4096+8192), snap.Memory["device"].Peak, "the inner scope's peak is the outer's too")
	assert.Zero(t, snap.Memory["device"].Current)

	_, err = scopePush(0, "none")
	assert.ErrorIs(t, err, errHandle)
	_, err = scopePush(a, "a freed array")
	assert.ErrorIs(t, err, errHandle)
	_, err = scopePop(dev)
	assert.ErrorIs(t, err, errHandle, "a device is not a scope")
}

// FuzzPlanRequest feeds cuarray_plan_max_slices anything: an answer or an
// error, never a panic; an answer is a count of at least 0 and a dtype.
func FuzzPlanRequest(f *testing.F) {
	for _, seed := range []string{
		`{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float32", "available_memory": 14450, "raw": true}`,
		`{"method": "fbp.reconstruct", "slice_dim": 0, "other_dims": [180, 256], "dtype": "float64", "available_memory": 1e9, "params": {"size": 64}}`,
		`{"terms": [{"name": "in", "per_slice_bytes": 800, "fixed_bytes": 9}], "other_dims": [1, 1], "dtype": "uint8", "available_memory": 9223372036854775807}`,
		`{"method": "fbp.project", "slice_dim": 0, "other_dims": [2147483647, 2147483647], "dtype": "float64", "available_memory": 9223372036854775807, "raw": true}`,
		`{"terms": [{"per_slice_bytes": 0, "fixed_bytes": 0}], "other_dims": [0, 0], "dtype": "bool", "available_memory": 0}`,
		`{`, `null`, `{"method": null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		b, err := planMaxSlices(req)
		if err != nil {
			return
		}
		var a planAnswer
		require.NoError(t, json.Unmarshal(b, &a))
		require.GreaterOrEqual(t, a.MaxSlices, 0)
		_, err = devarray.ParseDType(a.OutDType)
		require.NoError(t, err)
	})
}
