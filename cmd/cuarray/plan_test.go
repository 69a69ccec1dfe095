package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/plan"
)

func TestPlanCommand(t *testing.T) {
	code, out, stderr := runCmd("plan", "-device", "sim:0?mem=64MiB", "-method", "fbp.reconstruct",
		"-shape", "100,180,256", "-mem", "8MiB", "-overhead", "1")
	require.Equal(t, 0, code, stderr)
	// Per slice: 180×256×4 sinogram + 180×256×4 filter scratch + 256×256×4
	// image = 630 KiB, plus the 1 KiB of taps: 8 MiB holds 13 slices.
	assert.Contains(t, out, "fbp.reconstruct on [100 180 256] float32 along axis 0: 8 chunks of at most 13 slices (8.00 MiB available / overhead 1.00 fits 13 slices) on sim:0")
	assert.Contains(t, out, "chunk 7: slices [88, 100)")

	code, out, stderr = runCmd("plan", "-device", "sim:0?mem=64MiB", "-method", "kernels.scale",
		"-shape", "10,1024,1024", "-dtype", "float64", "-json")
	require.Equal(t, 0, code, stderr)
	var rep struct {
		Device    string
		MaxSlices int `json:"max_slices"`
		DType     string
		Chunks    []struct{ Start, Len int }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "sim:0", rep.Device)
	assert.Equal(t, 7, rep.MaxSlices, "64 MiB / 1.1 = 58.2 MiB: 7 slices of 8 MiB")
	assert.Len(t, rep.Chunks, 2)
	assert.Equal(t, "float64", rep.DType)

	code, out, _ = runCmd("plan", "-method", "list", "-device", "sim:0")
	require.Equal(t, 0, code)
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		names = append(names, strings.Fields(line)[0])
	}
	assert.Equal(t, []string{"fbp.backproject", "fbp.filter", "fbp.project", "fbp.reconstruct", "identity", "kernels.scale", "kernels.transpose"}, names)
	assert.Regexp(t, `(?m)^fbp\.reconstruct +parameters: size ≥ 1$`, out, "the list shows each method's parameters")
	assert.Regexp(t, `(?m)^fbp\.project +parameters: angles ≥ 1, detectors ≥ 1$`, out)
	assert.Regexp(t, `(?m)^identity +parameters: none$`, out)

	// An unknown parameter is one short line naming what the method takes.
	code, _, stderr = runCmd("plan", "-method", "fbp.reconstruct", "-shape", "100,180,256", "-param", "bogus=1")
	require.Equal(t, 2, code)
	first, _, _ := strings.Cut(stderr, "\n")
	assert.Equal(t, `cuarray plan: -param: fbp.reconstruct takes no parameter "bogus" (its parameters: size ≥ 1)`, first)
}

func TestPlanCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"plan"}, 2, "want -method NAME"},
		{[]string{"plan", "-method", "nope", "-shape", "1,2,3"}, 2, `"nope"`},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2"}, 2, "want three sizes"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,-2,3"}, 2, "not a positive integer"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-dtype", "float7"}, 2, "float7"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-param", "size"}, 2, "want name=integer"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-mem", "lots"}, 2, "lots"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-overhead", "0.5"}, 2, "overhead"},
		{[]string{"plan", "-device", "sim:0", "-method", "fbp.filter", "-shape", "1,2,3", "-axis", "1"}, 2, "axis 0"},
		{[]string{"plan", "-device", "sim:0?mem=1MiB", "-method", "fbp.reconstruct", "-shape", "4,720,2048"}, 1, "not even one slice fits"},
		{[]string{"plan", "-method", "identity", "-shape", "1,2,3", "-raw", "-overhead", "1.2"}, 2, "-raw plans with no overhead factor"},
		{[]string{"plan", "-method", "identity,identity", "-shape", "1,2,3"}, 2, `"identity" twice`},
		{[]string{"plan", "-method", "identity,,kernels.scale", "-shape", "1,2,3"}, 2, "an empty name"},
		{[]string{"plan", "-method", "identity,nope", "-shape", "1,2,3"}, 2, `"nope"`},
		{[]string{"plan", "-method", "fbp.filter,fbp.project", "-shape", "1,2,3", "-axis", "1"}, 2, "no method takes this job"},
		{[]string{"plan", "-device", "sim:0?mem=1MiB", "-method", "identity,fbp.filter", "-shape", "4,720,2048"}, 1, "no method could plan the job"},
		{[]string{"plan", "-device", "sim:0?mem=1MiB", "-method", "identity", "-shape", "1,2,3", "-mem", "2MiB", "-raw"}, 2, "a plan cannot use memory the device does not have"},
	} {
		code, _, stderr := runCmd(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.msg, "%v", tc.args)
	}
}

// httomo's worked example from the command line: 14450 bytes hold 9
// slices of 10×20 float32 in and out, raw; 8 as the device rounds them.
func TestPlanRawSeed(t *testing.T) {
	seed := []string{"plan", "-device", "sim:0", "-method", "identity", "-shape", "1000,10,20", "-dtype", "float32", "-mem", "14450B"}
	code, out, stderr := runCmd(append(seed, "-raw")...)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, out, "identity on [1000 10 20] float32 along axis 0, raw bytes (httomo's convention: unrounded, no overhead): "+
		"112 chunks of at most 9 slices (input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices) on sim:0\n")
	assert.Contains(t, out, "chunk 111: slices [992, 1000)")

	code, out, stderr = runCmd(append(seed, "-raw", "-json")...)
	require.Equal(t, 0, code, stderr)
	var rep struct {
		MaxSlices int   `json:"max_slices"`
		Raw       bool  `json:"raw"`
		Available int64 `json:"available_bytes"`
		Overhead  float64
		Terms     []struct {
			Name     string
			PerSlice int64 `json:"per_slice_bytes"`
			Fixed    int64 `json:"fixed_bytes"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 9, rep.MaxSlices)
	assert.True(t, rep.Raw)
	assert.Equal(t, int64(14450), rep.Available, "-mem 14450B")
	assert.Equal(t, 1.0, rep.Overhead)
	require.Len(t, rep.Terms, 2)
	assert.Equal(t, int64(800), rep.Terms[0].PerSlice)
	assert.Equal(t, int64(800), rep.Terms[1].PerSlice)

	code, out, stderr = runCmd(append(seed, "-json")...)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 8, rep.MaxSlices, "device mode: 14450 / 1.1, each slab rounded to 256 bytes")
	assert.False(t, rep.Raw)

	// More than the device has is handled as without -raw: a sim at its
	// default size is made that large.
	code, out, stderr = runCmd("plan", "-device", "sim:0", "-method", "identity", "-shape", "1000,1024,1024", "-mem", "16GiB", "-raw")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "17179869184 // 8388608 = 2048 slices")
	assert.Contains(t, stderr, "planning on sim:0?mem=16GiB")
}

// Planning several methods prints a line each, and shows progress on
// stderr once it has run for planProgressAfter; -q and -json show none.
func TestPlanManyMethods(t *testing.T) {
	code, out, stderr := runCmd("plan", "-method", "all", "-shape", "100,180,256", "-mem", "64MiB", "-raw")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "under a second: no progress")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Len(t, lines, 7, "one line per method")
	assert.Contains(t, out, "identity on [100 180 256] float32 along axis 0, raw bytes")
	assert.Contains(t, out, "(67108864 - 2048) // 630784 = 106 slices", "fbp.reconstruct")

	code, out, stderr = runCmd("plan", "-method", "identity, kernels.scale,fbp.filter", "-shape", "100,180,256", "-axis", "1", "-json")
	require.Equal(t, 0, code, stderr)
	var reps []struct {
		Method    string
		MaxSlices int `json:"max_slices"`
		Error     string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &reps))
	require.Len(t, reps, 3)
	assert.Equal(t, "identity", reps[0].Method)
	assert.Positive(t, reps[1].MaxSlices)
	assert.Contains(t, reps[2].Error, "sliced along axis 0", "fbp.filter takes sinograms along axis 0 only")

	defer func(d time.Duration) { planProgressAfter = d }(planProgressAfter)
	planProgressAfter = 0
	code, _, stderr = runCmd("plan", "-method", "all", "-shape", "100,180,256")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "cuarray plan: 0 of 7 methods planned in ")
	assert.Contains(t, stderr, "next fbp.backproject\n")
	assert.Contains(t, stderr, "cuarray plan: 6 of 7 methods planned in ")
	assert.Contains(t, stderr, "cuarray plan: 7 methods planned in ")
	for _, quiet := range []string{"-q", "-json"} {
		code, _, stderr = runCmd("plan", "-method", "all", "-shape", "100,180,256", quiet)
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stderr, quiet)
	}
}

func FuzzParseMethods(f *testing.F) {
	for _, s := range []string{"all", "identity", "identity,kernels.scale", " identity , fbp.filter", "", ",", "identity,identity", "nope", "all,identity"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseMethods(s, plan.Default)
		if err != nil {
			require.Empty(t, ms)
			return
		}
		require.NotEmpty(t, ms)
		var names []string
		for _, m := range ms {
			require.NotContains(t, names, m.Name(), "no method twice")
			names = append(names, m.Name())
		}
		again, err := parseMethods(strings.Join(names, ","), plan.Default)
		require.NoError(t, err)
		assert.Equal(t, ms, again)
	})
}

func FuzzParseShape(f *testing.F) {
	for _, s := range []string{"1,2,3", "2048,720,1024", "", "1,,3", " 4, 5 ,6", "-1,2,3", "1,2,3,4", "9999999999999999999999,1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		shape, err := parseShape(s)
		if err != nil {
			return
		}
		for _, d := range shape {
			require.Positive(t, d, "a size of 0 is an error")
		}
		again, err := parseShape(strings.Trim(strings.ReplaceAll(strings.Join(strings.Fields(strings.ReplaceAll(s, ",", " , ")), ""), " ", ""), " "))
		require.NoError(t, err)
		assert.Equal(t, shape, again)
	})
}

func FuzzParseParam(f *testing.F) {
	for _, s := range []string{"size=512", "a=-3", "=1", "x", "x=y", "k==2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, v, err := parseParam(s)
		if err != nil {
			return
		}
		require.NotEmpty(t, name)
		n2, v2, err := parseParam(name + "=" + strconv.Itoa(v))
		require.NoError(t, err)
		assert.Equal(t, name, n2)
		assert.Equal(t, v, v2)
	})
}
