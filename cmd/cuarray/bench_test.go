package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/bench"
)

func TestBenchCommand(t *testing.T) {
	progress = io.Discard
	svg := filepath.Join(t.TempDir(), "bw.svg")
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "4KiB,256KiB", "-paths", "pinned,staged,d2d",
		"-budget", "1MiB", "-json", "-svg", svg)
	require.Equal(t, 0, code, stderr)
	var r bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, "sim:0", r.Device)
	assert.Len(t, r.Results, 2*(1+2+2+1))
	assert.True(t, r.CountsOK(), "bytes copied == bytes requested for every run")
	chart, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(chart), "<polyline")

	code, out, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "8KiB", "-paths", "direct", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "direct  HtoD")
	assert.Contains(t, out, " ok")
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-sizes", "4KiB,x"},
		{"-sizes", "0"},
		{"-paths", "teleport"},
		{"-paths", "peer"},
		{"-budget", "-1"},
		{"-nosuchflag"},
		{"extra"},
		{"-device", "nonsense:0"},
	} {
		code, _, stderr := runCmd(append([]string{"bench"}, args...)...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.True(t, strings.HasPrefix(stderr, "cuarray bench: "), stderr)
	}
}
