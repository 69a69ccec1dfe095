package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, []string{"fbp.backproject", "fbp.filter", "fbp.project", "fbp.reconstruct", "kernels.scale", "kernels.transpose"}, strings.Fields(out))
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
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,-2,3"}, 2, "not a non-negative integer"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-dtype", "float7"}, 2, "float7"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-param", "size"}, 2, "want name=integer"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-mem", "lots"}, 2, "lots"},
		{[]string{"plan", "-method", "fbp.filter", "-shape", "1,2,3", "-overhead", "0.5"}, 2, "overhead"},
		{[]string{"plan", "-device", "sim:0", "-method", "fbp.filter", "-shape", "1,2,3", "-axis", "1"}, 2, "axis 0"},
		{[]string{"plan", "-device", "sim:0?mem=1MiB", "-method", "fbp.reconstruct", "-shape", "4,720,2048"}, 1, "not even one slice fits"},
	} {
		code, _, stderr := runCmd(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.msg, "%v", tc.args)
	}
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
			require.GreaterOrEqual(t, d, 0)
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
