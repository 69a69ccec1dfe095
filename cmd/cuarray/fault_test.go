package main

import (
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
)

// faultCmdDeadline bounds one command of a fault sweep.
const faultCmdDeadline = 30 * time.Second

// faultRun is one command run with the devices it opened.
type faultRun struct {
	code           int
	stdout, stderr string
	devs           []device.Device
}

// runWatched runs the command in-process within faultCmdDeadline (failing
// with every goroutine's stack when it hangs) and returns what it printed
// and the devices it opened.
func runWatched(t *testing.T, args ...string) faultRun {
	t.Helper()
	var r faultRun
	saved := opened
	opened = func(d device.Device) { r.devs = append(r.devs, d) }
	defer func() { opened = saved }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.code, r.stdout, r.stderr = runCmd(args...)
	}()
	select {
	case <-done:
	case <-time.After(faultCmdDeadline):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("cuarray %s did not exit within %v\n%s", strings.Join(args, " "), faultCmdDeadline, b.String())
	}
	return r
}

// TestFaultCommands sweeps a sticky device fault (sim's fail-fault=N,
// CUDA's illegal address) over every device operation of the commands
// that do device work — demo, bench on every path, bench -bidir, bench
// -calibrate — and checks the others (info, plan, replay) with a fault
// armed (bench's sweeps sample the positions where the test device is
// not sim: faultStride). With latency 0 and 1 ms: every run exits within
// the deadline; a run whose device faulted exits 1 with one line on
// stderr that says the context failed, and prints no report on stdout; a
// run that exits 0 did not fault; every device a command opened is closed
// with its ledger at zero.
func TestFaultCommands(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "profile.json")
	for _, tc := range []struct {
		name      string
		args      []string // -device follows
		latencies []string // the device options swept (the slow ones only where they add a path)
	}{
		{"demo", []string{"demo"}, []string{"", "&latency=1ms"}},
		{"demo json", []string{"demo", "-json"}, []string{"", "&latency=1ms"}},
		{"bench", []string{"bench", "-sizes", "4KiB", "-budget", "12KiB", "-q"}, []string{""}},
		{"bench", []string{"bench", "-sizes", "4KiB", "-paths", "pinned,staged,mapped", "-budget", "12KiB", "-q"}, []string{"&latency=1ms"}},
		{"bench bidir", []string{"bench", "-sizes", "4KiB", "-paths", "pinned", "-bidir", "-budget", "12KiB", "-q", "-json"}, []string{"", "&latency=1ms"}},
		{"bench calibrate", []string{"bench", "-calibrate", "-sizes", "4KiB", "-paths", "direct,staged", "-profile", profile, "-q"}, []string{""}},
		{"info", []string{"info"}, []string{""}},
		{"plan", []string{"plan", "-method", "fbp.reconstruct", "-shape", "8,30,32"}, []string{""}},
		{"replay", []string{"replay", "testdata/fbp.alloclog", "-pool=on"}, []string{""}},
	} {
		for _, latency := range tc.latencies {
			t.Run(tc.name+latency, func(t *testing.T) {
				for n := 1; ; n += faultStride(tc.args[0], n) {
					require.Less(t, n, 1000, "the command never ran without a fault")
					spec := fmt.Sprintf("sim:0?mem=64MiB&fail-fault=%d%s", n, latency)
					r := runWatched(t, append(tc.args, "-device", spec)...)
					require.NotEmpty(t, r.devs, "the command opened its device")
					faulted := false
					for _, d := range r.devs {
						f, ok := d.(interface{ Fault() error })
						require.True(t, ok, "a sim device")
						faulted = faulted || f.Fault() != nil
						if c, ok := d.(interface{ Closed() bool }); ok {
							assert.True(t, c.Closed(), "fail-fault=%d: the command closed its device", n)
						}
						snap := d.Ledger().Snapshot()
						for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered} {
							assert.Zero(t, snap.Kinds[k].Current, "fail-fault=%d: %v bytes after the command", n, k)
						}
					}
					if !faulted {
						assert.Equal(t, 0, r.code, "fail-fault=%d: no fault: %s", n, r.stderr)
						if n == 1 {
							t.Logf("no device work")
						} else {
							if stride := faultStride(tc.args[0], n); stride == 1 {
								t.Logf("about %d device operations, the fault at each", n-1)
							} else {
								why := "the race detector"
								if sampledSweeps {
									why = "test device " + testdev.Spec()
								}
								t.Logf("about %d device operations, the fault at each of the first 8, then every %d (%s)", n-1, stride, why)
							}
						}
						return
					}
					assert.Equal(t, 1, r.code, "fail-fault=%d: the device faulted: exit 1", n)
					assert.Empty(t, r.stdout, "fail-fault=%d: no report from a run that faulted", n)
					lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
					assert.Len(t, lines, 1, "fail-fault=%d: one line on stderr: %q", n, r.stderr)
					assert.Contains(t, lines[0], "unrecoverable fault", "fail-fault=%d: the line says the context failed", n)
					assert.True(t, strings.HasPrefix(lines[0], "cuarray "+tc.args[0]+": "), "fail-fault=%d: %q", n, lines[0])
				}
			})
		}
	}
}

// faultStride is the step of a sweep after position n: every position,
// except for bench under the race detector, where the first 8 and every
// 5th after them keep the sweep to a few seconds, and for bench where the
// test device is not sim (sampledSweeps).
func faultStride(cmd string, n int) int {
	switch {
	case cmd != "bench" || n < 8:
		return 1
	case sampledSweeps:
		return 10
	case raceEnabled:
		return 5
	}
	return 1
}

// sampledSweeps: the test device is not sim (a GPU machine's run of the
// bundle, or the emulated CUDA driver). The sweeps' own devices are sim
// whatever the test device, so there they only repeat what the sim run
// checks (CI's, which takes every position), at a GPU run's cost: each
// bench and calibrate run first measures the host's memory copy curve,
// some 150 ms, and the bench sweeps made about 250 runs, 52 s of
// TestFaultCommands on the H100 of 2026-11-27, 18 s of them calibrate's.
// There bench takes the first 8 positions and every 10th after them: a
// test, not a benchmark.
var sampledSweeps = !strings.HasPrefix(testdev.Spec(), "sim")
