package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
	assert.Contains(t, out, "ceiling: host link", "the ceilings are shown")
	assert.Contains(t, out, "ceiling: device memory")
}

// A figure above its ceiling fails the run with status 1 and a message
// naming the figure and the ceiling; the report is still printed, its
// ledger column saying which rows cannot be true.
func TestBenchRefusesImpossibleFigures(t *testing.T) {
	progress = io.Discard
	kib := rand.IntN(192) + 64 // the bench copies fresh random data of its own
	size, sizeText := fmt.Sprintf("%dKiB", kib), fmt.Sprintf("%d.00 KiB", kib)
	for _, tc := range []struct {
		name    string
		args    []string
		refused []string // in the message
	}{
		{"table", []string{"-paths", "direct,d2d", "-pcie", "0.000001"}, []string{"direct HtoD " + sizeText, "direct DtoH " + sizeText}},
		{"json", []string{"-paths", "pinned", "-pcie", "0.001", "-json"}, []string{"pinned HtoD " + sizeText, "pinned DtoH " + sizeText}},
		{"staged", []string{"-paths", "staged", "-pcie", "0.0005", "-q"}, []string{"staged HtoD " + sizeText, "staged DtoH " + sizeText}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "-device", "sim:0?mem=64MiB", "-sizes", size, "-budget", "1MiB"}, tc.args...)
			code, out, stderr := runCmd(args...)
			require.Equal(t, 1, code, "an impossible figure fails the run: %s", stderr)
			assert.True(t, strings.HasPrefix(stderr, "cuarray bench: "), stderr)
			assert.Contains(t, stderr, "cannot be true")
			for _, r := range tc.refused {
				assert.Contains(t, stderr, r+": the median of ", "the figure is named")
			}
			assert.Contains(t, stderr, " are above the host link's ceiling of ", "the ceiling is named")
			assert.Contains(t, stderr, "(given as the PCIe bandwidth, -pcie)", "and where it comes from")
			if slices.Contains(tc.args, "-json") {
				var r bench.Report
				require.NoError(t, json.Unmarshal([]byte(out), &r), "the report is printed before the run fails")
				assert.True(t, r.CountsOK(), "the bytes were right")
				assert.False(t, r.Possible())
				for _, q := range r.Results {
					if q.Path != bench.GoCopy {
						assert.NotEmpty(t, q.Impossible, "%s %s", q.Path, q.Direction)
						assert.False(t, q.LedgerOK())
					}
				}
				return
			}
			assert.Contains(t, out, "IMPOSSIBLE", "the ledger column says so")
			assert.Contains(t, out, "figures that cannot be true:")
			if slices.Contains(tc.args, "d2d") {
				assert.Regexp(t, `d2d\s+DtoD.*\sok\n`, out, "d2d is within the device memory's ceiling")
			}
		})
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-sizes", "4KiB,x"},
		{"-sizes", "0"},
		{"-paths", "teleport"},
		{"-paths", "peer"},
		{"-budget", "-1"},
		{"-pcie", "0"},
		{"-pcie", "-64"},
		{"-pcie", "NaN"},
		{"-pcie", "+Inf"},
		{"-pcie", "fast"},
		{"-nosuchflag"},
		{"extra"},
		{"-device", "nonsense:0"},
	} {
		code, _, stderr := runCmd(append([]string{"bench"}, args...)...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.True(t, strings.HasPrefix(stderr, "cuarray bench: "), stderr)
	}
}
