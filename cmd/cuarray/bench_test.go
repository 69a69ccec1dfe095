package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/transfer"
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
	assert.Contains(t, out, "ceiling: host link and device memory, GB/s by copy size: ", "the ceilings are shown: on sim one curve bounds both")
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
			// link=1000: -pcie would otherwise model sim's link at its rate, and the figures would be its
			args := append([]string{"bench", "-device", "sim:0?mem=64MiB&link=1000", "-sizes", size, "-budget", "1MiB"}, tc.args...)
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

// TestBenchManaged: -managed adds a row per managed path and direction,
// the ledger's page faults in it where pages faulted.
func TestBenchManaged(t *testing.T) {
	kib := rand.IntN(192) + 64
	sizeText := fmt.Sprintf("%d.00 KiB", kib)
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", fmt.Sprintf("%dKiB", kib), "-budget", "1MiB",
		"-paths", "pinned", "-managed", "all", "-q")
	require.Equal(t, 0, code, stderr)
	for _, row := range []struct{ path, dir, ledger string }{
		{"managed", "HtoD", `ok \d+ faults`}, {"managed", "DtoH", `ok \d+ faults`},
		{"managed-prefetch", "HtoD", "ok"}, {"managed-prefetch", "DtoH", "ok"},
		{"managed-read-mostly", "HtoD", `ok \d+ faults \d+ dup`},
	} {
		assert.Regexp(t, `\s`+row.path+`\s+`+row.dir+`\s+`+regexp.QuoteMeta(sizeText)+`\s.*\s`+row.ledger+`( pick[^\n]*)?\n`, out)
	}
	assert.NotRegexp(t, `managed-read-mostly\s+DtoH`, out, "read-mostly is advice for the input")
	for _, dir := range []string{"HtoD", "DtoH"} {
		picks := regexp.MustCompile(`(?m)^\s+managed[-a-z]*\s+`+dir+`\s.*\s(ok|faults|dup) pick`).FindAllString(out, -1)
		assert.Len(t, picks, 1, "%s: the planner's pick among the managed paths is marked once:\n%s", dir, out)
		assert.Regexp(t, `(?m)^  managed +`+dir+` +`+regexp.QuoteMeta(sizeText)+` +managed[-a-z]* `, out, "the list under the table has it")
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-sizes", "4KiB,x"},
		{"-sizes", "0"},
		{"-paths", "teleport"},
		{"-paths", "peer"},
		{"-managed", "managed,teleport"},
		{"-budget", "-1"},
		{"-pcie", "0"},
		{"-pcie", "-64"},
		{"-pcie", "NaN"},
		{"-pcie", "+Inf"},
		{"-pcie", "fast"},
		{"-device", "sim:0", "-pcie", "1e-9"},   // on sim a link so slow each copy would sleep for hours
		{"-device", "sim:0", "-pcie", "1e-300"}, // and one whose copy times overflow
		{"-nosuchflag"},
		{"extra"},
		{"-device", "nonsense:0"},
	} {
		code, _, stderr := runCmd(append([]string{"bench"}, args...)...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.True(t, strings.HasPrefix(stderr, "cuarray bench: "), stderr)
	}
}

// On sim, -pcie models the host link at its rate (unless the spec gives
// link=): bench and calibrate measure the link, about -pcie GB/s, and
// -pcie is their ceiling. The calibration's sizes are three decades
// apart, so that a late wake-up from a sleep on a loaded machine does not
// tilt the fitted line. A calibration with figures above the ceiling (a
// link modelled faster than -pcie says) saves nothing and says why.
func TestBenchPCIeOnSim(t *testing.T) {
	progress = io.Discard
	rate := 0.03 + 0.02*rand.Float64()
	pcie := fmt.Sprintf("%.4f", rate)
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-pcie", pcie, "-sizes", "256KiB", "-paths", "pinned,direct", "-budget", "768KiB", "-json", "-q")
	require.Equal(t, 0, code, stderr)
	var r bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	for _, q := range r.Results {
		if q.Path != bench.GoCopy {
			// the link's rate, never above it; below it by a loaded machine's late wake-ups from sleep
			assert.LessOrEqual(t, q.GBps, rate*(1+bench.Tolerance), "%s %s: the link's rate", q.Path, q.Direction)
			assert.GreaterOrEqual(t, q.GBps, rate*0.4, "%s %s: the link's rate, not memory speed", q.Path, q.Direction)
			assert.Empty(t, q.Impossible)
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "profile.json")
	code, out, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-calibrate", "-pcie", pcie, "-sizes", "4KiB,4MiB", "-paths", "direct,pinned",
		"-profile", path, "-json", "-q")
	require.Equal(t, 0, code, stderr)
	p, err := transfer.LoadProfile(path)
	require.NoError(t, err)
	require.Len(t, p.Costs, 4)
	for _, c := range p.Costs {
		assert.LessOrEqual(t, c.GBps, rate*(1+bench.FitTolerance), "%s %s: the link's rate", c.Path, c.Direction)
		assert.GreaterOrEqual(t, c.GBps, rate*0.4, "%s %s: the link's rate, not memory speed", c.Path, c.Direction)
	}

	refused := filepath.Join(dir, "refused.json")
	code, _, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB&link=1000", "-calibrate", "-pcie", "0.001", "-sizes", "4KiB,16KiB", "-paths", "direct",
		"-profile", refused, "-q")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "cuarray bench: nothing saved to "+refused+": ")
	assert.Contains(t, stderr, "direct HtoD: the median at 4.00 KiB of ")
	assert.Contains(t, stderr, "above the host link's ceiling of 0.001 GB/s (given as the PCIe bandwidth, -pcie)")
	assert.NoFileExists(t, refused)
}

// bench -calibrate measures and saves the planner's profile; bench
// -profile plans with it and reports the planner's pick per size; a bad or
// foreign profile named on the command line is an error, a bad one in
// CUARRAY_PROFILE a notice.
func TestBenchCalibrate(t *testing.T) {
	progress = io.Discard
	dir := t.TempDir()
	path := filepath.Join(dir, "profile.json")
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-calibrate", "-sizes", "4KiB,4MiB", "-paths", "direct,staged,pinned",
		"-profile", path, "-q")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "saved to "+path)
	for _, s := range []string{"direct  HtoD", "staged  DtoH", "pinned  DtoH", "host memcpy pageable→pinned", "staging ring"} {
		assert.Contains(t, out, s)
	}
	p, err := transfer.LoadProfile(path)
	require.NoError(t, err)
	assert.Equal(t, "sim:0", p.Device)
	assert.Len(t, p.Costs, 6)

	code, out, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-profile", path, "-sizes", "4KiB,64KiB", "-paths", "direct,staged",
		"-budget", "1MiB", "-json", "-q")
	require.Equal(t, 0, code, stderr)
	var r bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Contains(t, r.Profile, "cuarray bench -calibrate")
	pageable := 0
	for _, pl := range r.Plans {
		if pl.Host == "pageable" {
			pageable++
		}
		assert.Contains(t, []string{"direct", "staged"}, pl.Pick, "only direct and staged were measured")
		assert.GreaterOrEqual(t, pl.Slower, 0.0)
	}
	assert.Equal(t, 4, pageable, "a pick per size and direction for pageable memory")
	assert.NotEmpty(t, r.HostMemcpy, "the memcpy ceiling is measured")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"format":"cuarray-transfer-profile","version":9}`), 0o644))
	foreign := filepath.Join(dir, "foreign.json")
	p.Model = "NVIDIA H100"
	require.NoError(t, p.Save(foreign))
	for file, want := range map[string]string{bad: "version 9", foreign: `made for "NVIDIA H100"`, filepath.Join(dir, "none.json"): "no such file"} {
		code, _, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-profile", file, "-sizes", "4KiB", "-paths", "direct", "-q")
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "cuarray bench: -profile: ")
		assert.Contains(t, stderr, want)
	}
	t.Setenv(transfer.ProfileEnv, "") // as a user runs it: no profile named, none turned off
	require.NoError(t, os.Unsetenv(transfer.ProfileEnv))
	code, _, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-calibrate", "-sizes", "4KiB", "-q")
	assert.Equal(t, 2, code, "on sim, -calibrate needs -profile: %s", stderr)
	assert.Contains(t, stderr, "give -profile FILE")
	t.Setenv(transfer.ProfileEnv, bad)
	code, out, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "4KiB", "-paths", "direct", "-q")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "notice: transfer: profile "+bad+" not used, planning with")
	assert.Contains(t, out, "notice: ")
}

// -bidir adds a row per size with both directions at once, and every path
// a queued copy can be bracketed by events gets its event-timed figure;
// copies of at most 64 KiB get a latency in µs. With latency= the wall
// clock waits for the emulated completion while the events time the copy.
func TestBenchBidirAndEvents(t *testing.T) {
	progress = io.Discard
	for _, tc := range []struct {
		spec    string
		latency float64 // seconds
	}{
		{spec: "sim:0?mem=64MiB"},
		{spec: "sim:0?mem=64MiB&latency=2ms", latency: 0.002},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			code, out, stderr := runCmd("bench", "-device", tc.spec, "-sizes", "4KiB,256KiB", "-paths", "pinned,staged", "-bidir", "-budget", "1MiB", "-json", "-q")
			require.Equal(t, 0, code, stderr)
			var r bench.Report
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			assert.True(t, r.CountsOK())
			assert.Len(t, r.Results, 2*(1+2+2+1), "go-copy, pinned and staged each way, bidir per size")
			var bidirs int
			for _, q := range r.Results {
				switch q.Path {
				case bench.Bidir:
					bidirs++
					assert.Equal(t, bench.BidirDirection, q.Direction)
					require.NotNil(t, q.Ledger)
					assert.Equal(t, 2*q.Size*int64(q.Repeats), q.Ledger.Bytes)
					assert.NotNil(t, q.VsOneWay)
					assert.Positive(t, q.EventGBps)
				case "pinned":
					assert.Positive(t, q.EventGBps)
					if tc.latency > 0 {
						assert.GreaterOrEqual(t, q.MedianSeconds, tc.latency)
						assert.Less(t, q.EventMedianSeconds, q.MedianSeconds-tc.latency/2)
					}
				case "staged":
					assert.Zero(t, q.EventGBps)
				}
				if q.Path != bench.GoCopy && q.Path != bench.Bidir {
					assert.Equal(t, q.Size <= 64<<10, q.LatencyMicros != nil, "%s %s %d", q.Path, q.Direction, q.Size)
				}
			}
			assert.Equal(t, 2, bidirs)
		})
	}
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "4KiB", "-paths", "pinned", "-bidir", "-budget", "64KiB", "-q", "-wide")
	require.Equal(t, 0, code, stderr)
	header, _, _ := strings.Cut(out[strings.Index(out, "   path "):], "\n")
	for _, col := range []string{"events GB/s", "µs", "vs 1-way"} {
		assert.Contains(t, header, col)
	}
	for _, cell := range []string{"bidir", "HtoD+DtoH"} {
		assert.Contains(t, out, cell)
	}
}

// make run's bench (its command line, -q, -wide for every column): the
// columns that are "-" in every row on sim are not shown, and one note
// under the table names each with why; -pcie and -bidir bring theirs back.
// Without -wide the table leaves out the wide columns too, names them, and
// fits 120 columns.
func TestBenchTableHidesEmptyColumns(t *testing.T) {
	progress = io.Discard
	header := func(out string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "path") && strings.Contains(line, "GB/s") && strings.Contains(line, "reps") {
				return line
			}
		}
		t.Fatalf("no table header in %s", out)
		return ""
	}
	for _, tc := range []struct {
		name   string
		args   []string
		hidden []string // columns not shown, named in the note
		shown  []string
	}{
		{"make run", []string{"-sizes", "4KiB,1MiB", "-budget", "4MiB", "-wide"}, []string{"vs PCIe", "vs 1-way"},
			[]string{"events GB/s", "µs", "ceiling", "vs pinned", "vs copy()", "vs memcpy", "ledger GB/s", "ledger", "planner"}},
		{"make run, narrow", []string{"-sizes", "4KiB,1MiB,16MiB", "-budget", "64MiB"}, []string{"vs PCIe", "vs 1-way"},
			[]string{"ceiling", "vs pinned", "ledger", "planner"}},
		{"pinned only", []string{"-sizes", "4KiB", "-paths", "pinned", "-budget", "1MiB", "-wide"}, []string{"vs PCIe", "vs memcpy", "vs 1-way"},
			[]string{"vs pinned", "µs"}},
		{"large copies", []string{"-sizes", "256KiB", "-paths", "staged", "-budget", "1MiB", "-wide"}, []string{"events GB/s", "µs", "vs pinned", "vs PCIe", "vs 1-way"},
			[]string{"vs memcpy", "ledger"}},
		{"bidir and -pcie", []string{"-device", "sim:0?mem=64MiB&link=1000", "-pcie", "900", "-sizes", "4KiB", "-paths", "pinned", "-bidir", "-budget", "1MiB", "-wide"},
			[]string{"vs memcpy"}, []string{"vs PCIe", "vs 1-way"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "-device", "sim:0?mem=64MiB", "-q"}, tc.args...)
			code, out, stderr := runCmd(args...)
			require.Equal(t, 0, code, stderr)
			h := header(out)
			for _, c := range tc.hidden {
				assert.NotContains(t, h, c, "%s is - in every row", c)
			}
			for _, c := range tc.shown {
				assert.Contains(t, h, c)
			}
			note := regexp.MustCompile(`(?m)^not shown, "-" in every row: (.*(?:\n  .*)*)$`).FindStringSubmatch(out)
			require.NotNil(t, note, "one note says what was hidden: %s", out)
			hidden := strings.Join(strings.Fields(note[1]), " ") // wrapped at 100 characters
			for _, c := range tc.hidden {
				assert.Contains(t, hidden, c+" (", "%s is named with why", c)
			}
			for _, c := range tc.shown {
				assert.NotContains(t, hidden, c+" (")
			}
			wide := slices.Contains(tc.args, "-wide")
			more := regexp.MustCompile(`(?m)^more columns with -wide \(and in -json\): (.*)$`).FindStringSubmatch(out)
			if wide {
				assert.Nil(t, more, "-wide shows every column")
				return
			}
			require.NotNil(t, more, "the narrow table names the columns -wide adds: %s", out)
			assert.Equal(t, "events GB/s, µs, vs copy(), vs memcpy, ledger GB/s", more[1])
			for _, c := range []string{"events GB/s", "µs", "vs copy()", "vs memcpy", "ledger GB/s"} {
				assert.NotContains(t, h, c, "a wide column")
			}
			for _, l := range strings.Split(out, "\n") {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), 120, "make run's default output fits 120 columns: %q", l)
			}
		})
	}
}

// bench -record writes the run's allocation log, which replay reads: every
// measurement's device allocations, each freed, and replay's peak is the
// recorded one; a device smaller than it does not fit. Calibration records
// too. A file that cannot be made fails before anything is measured.
func TestBenchRecordReplays(t *testing.T) {
	progress = io.Discard
	dir := t.TempDir()
	kib := rand.IntN(512) + 256
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"bench", []string{"-sizes", fmt.Sprintf("4KiB,%dKiB", kib), "-paths", "direct,pinned,staged,d2d", "-budget", "2MiB"}},
		{"calibrate", []string{"-calibrate", "-sizes", fmt.Sprintf("4KiB,%dKiB", 8*kib), "-paths", "direct,staged", "-profile", filepath.Join(dir, "p.json")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".alloclog")
			args := append([]string{"bench", "-device", "sim:0?mem=64MiB", "-q", "-record", path}, tc.args...)
			code, _, stderr := runCmd(args...)
			require.Equal(t, 0, code, stderr)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			g, err := accounting.ReadLog(f)
			require.NoError(t, err)
			allocs, frees := 0, 0
			for _, e := range g.Events {
				if e.Kind != accounting.Device {
					continue
				}
				switch e.Op {
				case accounting.OpAlloc:
					allocs++
				case accounting.OpFree:
					frees++
				}
			}
			assert.Positive(t, allocs, "the run's device allocations are in the log")
			assert.Equal(t, allocs, frees, "each freed within the run")
			peak := g.Peak(accounting.Device)
			assert.GreaterOrEqual(t, peak, int64(kib)<<10, "the largest size was on the device")

			code, out, stderr := runCmd("replay", path, "-device", "sim:0?mem=64MiB", "-json")
			require.Equal(t, 0, code, stderr)
			var r struct {
				Fits         bool  `json:"fits"`
				PeakInUse    int64 `json:"peak_in_use_bytes"`
				RecordedPeak int64 `json:"recorded_peak_bytes"`
				Allocs       int   `json:"allocs"`
				Frees        int   `json:"frees"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			assert.True(t, r.Fits)
			assert.Equal(t, peak, r.RecordedPeak)
			assert.Equal(t, peak, r.PeakInUse, "replayed peak = recorded peak")
			assert.Equal(t, allocs, r.Allocs)
			assert.Equal(t, frees, r.Frees)

			code, out, stderr = runCmd("replay", path, "-device", "sim:0?mem="+strconv.FormatInt(peak/2, 10))
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, "fits           no: allocation", "half the peak does not fit")
		})
	}
	code, _, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "4KiB", "-q", "-record", filepath.Join(dir, "no", "such", "dir", "x.alloclog"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cuarray bench: record: ")
	// a log that cannot be written to the end (a full disk) fails the run: the log is not whole
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to stand for a full disk")
	}
	kib = rand.IntN(60) + 4
	code, _, stderr = runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", fmt.Sprintf("%dKiB", kib), "-paths", "pinned", "-q", "-record", "/dev/full")
	assert.Equal(t, 1, code, "a log lost to a full disk: %s", stderr)
	assert.Contains(t, stderr, "record /dev/full: ")
}

// TestBenchDefaultSizesFitSim: bench with no -sizes on sim stops at
// 64 MiB (a 1 GiB size peaks at about 6.3 GB of host memory there), and
// its help says which sizes each kind of device gets.
func TestBenchDefaultSizesFitSim(t *testing.T) {
	progress = io.Discard
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=512MiB", "-paths", "d2d", "-budget", "1MiB", "-json", "-q")
	require.Equal(t, 0, code, stderr)
	var r bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	sizes := map[int64]bool{}
	for _, q := range r.Results {
		sizes[q.Size] = true
	}
	assert.Equal(t, map[int64]bool{4 << 10: true, 1 << 20: true, 64 << 20: true}, sizes, "sim's default sizes")

	code, out, stderr = runCmd("bench", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out+stderr, "4KiB,1MiB,64MiB on sim", "the help names sim's default")
	assert.Contains(t, out+stderr, "4KiB,1MiB,64MiB,1GiB on a GPU", "and a GPU's")
}

// A path named twice in -paths or -managed is a usage error, not a second
// measurement of the same path whose rows repeat in the table.
func TestBenchPathNamedTwice(t *testing.T) {
	for _, tc := range []struct{ flag, list, name string }{
		{"-managed", "managed,managed", "managed"},
		{"-managed", "managed-prefetch,managed, managed-prefetch", "managed-prefetch"},
		{"-paths", "pinned,pinned", "pinned"},
		{"-paths", "direct,pinned, direct", "direct"},
	} {
		t.Run(tc.flag+" "+tc.list, func(t *testing.T) {
			code, _, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "4KiB", "-budget", "64KiB", "-q", tc.flag, tc.list)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, fmt.Sprintf("%q given twice", tc.name))
		})
	}
}
