package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// TestBothModesJSON runs the command as `make run` does, smaller, with a
// limit that makes chunks, and reads its JSON and its PNG.
func TestBothModesJSON(t *testing.T) {
	pngPath := filepath.Join(t.TempDir(), "slice.png")
	var out, errb bytes.Buffer
	code := run([]string{"-device", "sim:0", "-size", "48", "-angles", "60", "-slices", "9", "-mode", "both",
		"-mem", "200KiB", "-json", "-png", pngPath}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Contains(t, errb.String(), "fbp: resident 9/9 slices", "progress on stderr")

	var rep struct {
		Geometry struct{ Size, Angles, Slices int }
		Runs     []struct {
			Mode    string
			RMSE    float64
			Slices  int
			Chunks  int
			Seconds float64
			Streams int
			Kernel  float64 `json:"kernel_seconds"`
			Over    float64 `json:"seconds_over_kernel_seconds"`
			Ledger  map[string]any
		}
		Comparison struct {
			SameVolume bool    `json:"same_volume"`
			BytesRatio float64 `json:"staged_over_resident_host_device_bytes"`
		}
		PNG string
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	require.Len(t, rep.Runs, 2)
	sino, vol := float64(9*60*48*4), float64(9*48*48*4)
	for i, mode := range []string{"resident", "staged"} {
		r := rep.Runs[i]
		assert.Equal(t, mode, r.Mode)
		assert.Equal(t, 9, r.Slices)
		assert.Greater(t, r.Chunks, 1, "-mem 200KiB makes chunks")
		assert.Positive(t, r.Seconds)
		assert.Less(t, r.RMSE, 0.4)
		for _, key := range []string{"htod_bytes", "dtoh_bytes", "htod_bytes_by_path", "dtoh_bytes_by_path", "device_peak_bytes"} {
			assert.Contains(t, r.Ledger, key)
		}
		assert.LessOrEqual(t, r.Ledger["device_peak_bytes"], float64(200<<10))
	}
	assert.Equal(t, 2, rep.Runs[0].Streams, "resident: two chunks in flight")
	assert.Positive(t, rep.Runs[0].Kernel, "resident: its kernels timed")
	assert.InDelta(t, rep.Runs[0].Seconds/rep.Runs[0].Kernel, rep.Runs[0].Over, 1e-9)
	assert.Equal(t, 1, rep.Runs[1].Streams, "staged: one chunk at a time")
	assert.Zero(t, rep.Runs[1].Kernel)
	assert.Equal(t, sino, rep.Runs[0].Ledger["htod_bytes"])
	assert.Equal(t, vol, rep.Runs[0].Ledger["dtoh_bytes"])
	assert.Equal(t, 2*sino, rep.Runs[1].Ledger["htod_bytes"])
	assert.True(t, rep.Comparison.SameVolume)
	assert.InDelta(t, (3*sino+vol)/(sino+vol), rep.Comparison.BytesRatio, 1e-9)
	assert.Equal(t, pngPath, rep.PNG)

	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, 3*48+2*gap, img.Bounds().Dx(), "three panels")
	assert.Equal(t, 48, img.Bounds().Dy())
}

// TestSave: -save writes the scan as raw float32 files and a JSON that
// says what they hold.
func TestSave(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "scan")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-size", "16", "-angles", "10", "-slices", "3", "-q", "-save", prefix}, &out, &errb), errb.String())
	var meta savedScan
	b, err := os.ReadFile(prefix + ".json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &meta))
	assert.Equal(t, [3]int{3, 10, 16}, meta.SinogramShape)
	assert.Equal(t, [3]int{3, 16, 16}, meta.PhantomShape)
	for file, n := range map[string]int{meta.SinogramFile: 3 * 10 * 16, meta.PhantomFile: 3 * 16 * 16} {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Len(t, raw, 4*n)
		var nonzero int
		for i := 0; i < len(raw); i += 4 {
			if math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])) != 0 {
				nonzero++
			}
		}
		assert.Greater(t, nonzero, n/4, "%s holds data", file)
	}
}

// Each mode's plan line names its mode; -summary ends the text with three
// lines (what was shown, the headline ratio, where to read on), as make run
// prints them.
func TestSummaryAndPlanLines(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		plans    []string
		headline string
	}{
		{[]string{"-mode", "both"}, []string{"plan, resident: ", "plan, staged: "}, "summary: headline: staged: "},
		{[]string{"-mode", "staged"}, []string{"plan, staged: "}, "summary: headline: -mode both compares"},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			var out, errb bytes.Buffer
			size := 16 + rand.IntN(9)
			args := append([]string{"-size", fmt.Sprint(size), "-angles", "12", "-slices", "3", "-q", "-summary"}, tc.args...)
			require.Equal(t, 0, run(args, &out, &errb), errb.String())
			for _, p := range tc.plans {
				assert.Contains(t, out.String(), "\n"+p, "the plan line says its mode")
			}
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			require.GreaterOrEqual(t, len(lines), 3)
			last := lines[len(lines)-3:]
			assert.True(t, strings.HasPrefix(last[0], "summary: shown: "), "%q", last[0])
			assert.True(t, strings.HasPrefix(last[1], tc.headline), "%q", last[1])
			assert.True(t, strings.HasPrefix(last[2], "summary: next: docs/guide.md"), "%q", last[2])
			assert.Equal(t, 3, strings.Count(out.String(), "summary:"), "three lines")
			for _, l := range lines {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), 120, "a line fits a terminal: %q", l)
			}
		})
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-size", "16", "-angles", "12", "-slices", "2", "-q"}, &out, &errb), errb.String())
	assert.NotContains(t, out.String(), "summary:", "only with -summary")
}

func TestText(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-size", "24", "-angles", "20", "-slices", "3", "-mode", "both", "-q"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Empty(t, errb.String(), "-q: no progress")
	for _, want := range []string{"resident", "staged", "host↔device", "device peak", "staged / resident:", "same volume, bit for bit", "its kernels' time"} {
		assert.Contains(t, out.String(), want)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-mode", "fast"}, 2, "want resident or staged"},
		{[]string{"-size", "0"}, 2, "at least 1"},
		{[]string{"-angles", "-3"}, 2, "at least 1"},
		{[]string{"-mem", "lots"}, 2, "want a positive size"},
		{[]string{"-device", "tpu:0"}, 2, "not sim or cuda"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"-nope"}, 2, "flag provided but not defined"},
		{[]string{"-streams", "0"}, 2, "want 1 to 8"},
		{[]string{"-streams", "9"}, 2, "want 1 to 8"},
		{[]string{"-memory", "unified"}, 2, `memory "unified": want device or managed`},
		{[]string{"-memory", "managed", "-mode", "staged"}, 2, "-memory managed is for the resident mode"},
		{[]string{"-size", "64", "-mem", "1KiB", "-q"}, 1, "not even one slice fits"},
		{[]string{"-record", filepath.Join(t.TempDir(), "no", "such", "dir", "x.alloclog"), "-q"}, 1, "record:"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, tc.code, run(tc.args, &out, &errb), "%v: %s", tc.args, errb.String())
		assert.Contains(t, errb.String(), tc.msg, "%v", tc.args)
	}
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errb))
	assert.Contains(t, out.String(), "-angles", "help asked for goes to stdout")
	assert.Contains(t, out.String(), "-record")
	assert.Contains(t, out.String(), "-memory")
	assert.Empty(t, errb.String())
}

// -record writes the run's allocation log: what cuarray replay reads. It
// holds every device allocation of the scan and the reconstructions, each
// freed, and the recorded peak is the run's.
func TestRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fbp.alloclog")
	var out, errb bytes.Buffer
	size := 8 + rand.IntN(9)
	require.Equal(t, 0, run([]string{"-size", fmt.Sprint(size), "-angles", "12", "-slices", "3", "-mode", "both", "-q", "-record", path}, &out, &errb), errb.String())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	log, err := accounting.ReadLog(f)
	require.NoError(t, err)
	allocs, frees := 0, 0
	for _, e := range log.Events {
		switch e.Op {
		case accounting.OpAlloc:
			allocs++
		case accounting.OpFree:
			frees++
		}
	}
	assert.Positive(t, allocs, "the run's allocations are in the log")
	assert.Equal(t, allocs, frees, "each freed within the run")
	assert.Positive(t, log.Peak(accounting.Device), "the run's peak")
}
