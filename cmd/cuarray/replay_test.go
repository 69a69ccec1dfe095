package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

var update = flag.Bool("update", false, "rewrite testdata/fbp.alloclog from a fresh FBP recording")

// fbpGeometry is the FBP run recorded for the replay tests: small, in
// several chunks under fbpLimit.
var fbpGeometry = tomo.Geometry{Size: 48, Angles: 60, Slices: 9}

const fbpLimit = 200 << 10

// recordFBP runs the FBP example's scan and both reconstructions on sim
// under fbpLimit (as `fbp -mode both -mem 200KiB` does) while recording the
// device's ledger, and returns the log and the ledger's device peak.
func recordFBP(t *testing.T) ([]byte, int64) {
	t.Helper()
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	defer dev.Close()
	led := dev.Ledger()
	require.NoError(t, led.SetLimit(accounting.Device, fbpLimit))
	var buf bytes.Buffer
	rec, err := led.Record(&buf)
	require.NoError(t, err)
	scan, err := tomo.Acquire(dev, fbpGeometry, nil)
	require.NoError(t, err)
	for _, m := range tomo.Modes {
		res, err := tomo.Reconstruct(dev, fbpGeometry, scan.Sinograms, m, nil)
		require.NoError(t, err)
		require.Greater(t, len(res.Plan.Chunks), 1, "the limit makes chunks")
	}
	require.NoError(t, rec.Close())
	require.Zero(t, led.Current(accounting.Device), "the run freed everything")
	return buf.Bytes(), led.Snapshot().Kinds[accounting.Device].Peak
}

// writeLog writes a log to a temporary file and returns its path.
func writeLog(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.alloclog")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// replayJSON runs `cuarray replay` with -json and reads its result.
func replayJSON(t *testing.T, args ...string) replayResult {
	t.Helper()
	code, out, stderr := runCmd(append([]string{"replay"}, append(args, "-json")...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var r replayResult
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// A recorded FBP run replays on sim to its ledger's peak exactly; on a
// device too small for it, the replay names the first allocation that
// fails; through the pool it reserves at least what it uses. Every replay
// frees all it allocated.
func TestReplayFBP(t *testing.T) {
	log, peak := recordFBP(t)
	g, err := accounting.ReadLog(bytes.NewReader(log))
	require.NoError(t, err)
	require.Equal(t, peak, g.Peak(accounting.Device), "the log's own count of the peak")
	perEvent := float64(len(log)) / float64(len(g.Events))
	assert.Less(t, perEvent, 16.0, "compact: %d bytes for %d events", len(log), len(g.Events))
	t.Logf("FBP recording: %d events, %d bytes (%.1f an event), peak %s", len(g.Events), len(log), perEvent, accounting.FormatBytes(peak))
	path := writeLog(t, log)

	t.Run("fits without the pool: the recorded peak exactly", func(t *testing.T) {
		r := replayJSON(t, path, "-device", "sim:0?mem=24GiB")
		assert.True(t, r.Fits)
		assert.Nil(t, r.Failure)
		assert.Equal(t, peak, r.PeakInUse, "replayed peak = recorded ledger peak")
		assert.Equal(t, peak, r.PeakReserved)
		assert.Equal(t, peak, r.RecordedPeak)
		assert.InDelta(t, 1.0, r.ReservedOverInUse, 0)
		assert.Equal(t, r.Allocs, r.Frees, "every allocation freed in the log")
		assert.Zero(t, r.NotFreed)
	})

	t.Run("too small: the first allocation that fails", func(t *testing.T) {
		small := peak / 2
		r := replayJSON(t, path, "-device", "sim:0?mem="+strconv.FormatInt(small, 10))
		require.False(t, r.Fits)
		f := r.Failure
		require.NotNil(t, f)
		// The first allocation that takes the bytes in use past small, counted from the log.
		var cur int64
		want := -1
		for i, e := range g.Events {
			if e.Kind != accounting.Device {
				continue
			}
			if e.Op == accounting.OpAlloc {
				if cur+e.Bytes > small {
					want = i
					break
				}
				cur += e.Bytes
			} else if e.Op == accounting.OpFree {
				cur -= e.Bytes
			}
		}
		require.GreaterOrEqual(t, want, 0)
		assert.Equal(t, want, f.Event, "the first allocation past %s", accounting.FormatBytes(small))
		assert.Equal(t, g.Events[want].ID, f.ID)
		assert.Equal(t, g.Events[want].Bytes, f.Bytes)
		assert.Equal(t, cur, f.InUse, "the bytes in use when it failed")
		assert.InDelta(t, g.Events[want].At.Seconds(), f.Seconds, 1e-9)
		assert.Equal(t, g.ScopeName(g.Events[want].Scope), f.Scope)
		assert.Contains(t, f.Error, "out of memory")
		assert.LessOrEqual(t, r.PeakInUse, small)
		assert.Positive(t, r.Skipped.AfterFailure)

		code, out, stderr := runCmd("replay", path, "-device", "sim:0?mem="+strconv.FormatInt(small, 10))
		require.Equal(t, 0, code, "not fitting is an answer: %s", stderr)
		assert.Contains(t, out, "fits           no: allocation")
	})

	t.Run("through the pool: reserved at least in use", func(t *testing.T) {
		r := replayJSON(t, path, "-device", "sim:0?mem=24GiB", "-pool=on")
		assert.True(t, r.Fits)
		assert.True(t, r.Pool)
		assert.GreaterOrEqual(t, r.PeakReserved, r.PeakInUse)
		assert.GreaterOrEqual(t, r.ReservedOverInUse, 1.0)
		assert.Positive(t, r.PeakInUse)
		require.NotNil(t, r.PoolStats)
		assert.Positive(t, r.PoolStats.FromCache, "the pool reuses blocks across chunks")
		assert.GreaterOrEqual(t, r.Fragmentation, 0.0)
		assert.Less(t, r.Fragmentation, 1.0)

		code, out, stderr := runCmd("replay", "-pool", "on", "-device", "sim:0?mem=24GiB", path)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, out, "reserved from the device")
		assert.Contains(t, out, "fits           yes")
	})
}

// The replay frees what it allocated on every path: the device's ledger
// is back to zero after a fit, a failure, and through the pool.
func TestReplayFreesEverything(t *testing.T) {
	g := syntheticLog(t)
	for _, c := range []struct {
		name string
		spec string
		pool bool
		fits bool
	}{
		{"fits", "sim:0?mem=64MiB", false, true},
		{"fits, pool", "sim:0?mem=64MiB", true, true},
		{"fails", "sim:0?mem=2MiB", false, false},
		{"fails, pool", "sim:0?mem=2MiB", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev, err := device.Open(c.spec)
			require.NoError(t, err)
			defer dev.Close()
			r, err := replay(dev, g, c.pool)
			require.NoError(t, err)
			assert.Equal(t, c.fits, r.Fits)
			assert.Zero(t, dev.Ledger().Current(accounting.Device), "all freed")
			assert.GreaterOrEqual(t, r.PeakReserved, r.PeakInUse)
			if c.fits {
				assert.Equal(t, 1, r.NotFreed, "the log leaves one allocation live")
			}
		})
	}
}

// syntheticLog records a ledger whose allocations need 3 MiB at the peak,
// one of them never freed, a pool's segment with its blocks, and a
// failed allocation.
func syntheticLog(t *testing.T) *accounting.Log {
	t.Helper()
	l := accounting.NewLedger("synthetic")
	var buf bytes.Buffer
	rec, err := l.Record(&buf)
	require.NoError(t, err)
	require.NoError(t, l.Alloc(accounting.Device, 0x1000_0000, 1<<20))
	require.NoError(t, l.Alloc(accounting.Device, 0x2000_0000, 2<<20))
	l.NoteSegment(accounting.Device, 0x2000_0000)
	l.NoteBlockAlloc(accounting.Device, 0x2000_0000, 1<<20, 0x77)
	l.NoteBlockAlloc(accounting.Device, 0x2010_0000, 1<<20, 0)
	require.NoError(t, l.Alloc(accounting.Pinned, 0x3000_0000, 8<<20))
	l.NoteBlockFree(accounting.Device, 0x2000_0000, 1<<20, 0x77)
	require.NoError(t, l.Alloc(accounting.Device, 0x4000_0000, 1<<20))
	require.NoError(t, l.SetLimit(accounting.Device, 1))
	require.Error(t, l.Alloc(accounting.Device, 0x5000_0000, 1<<20))
	l.NoteBlockFree(accounting.Device, 0x2010_0000, 1<<20, 0)
	l.Free(accounting.Device, 0x2000_0000, 2<<20)
	l.Free(accounting.Device, 0x1000_0000, 1<<20)
	require.NoError(t, rec.Close())
	g, err := accounting.ReadLog(&buf)
	require.NoError(t, err)
	return g
}

// The shipped log (the help's examples replay it) reads, fits a 64 MiB
// sim and not a 64 KiB one. With -update it is recorded afresh.
func TestReplayTestdataLog(t *testing.T) {
	const path = "testdata/fbp.alloclog"
	if *update {
		log, _ := recordFBP(t)
		require.NoError(t, os.WriteFile(path, log, 0o644))
	}
	r := replayJSON(t, path, "-device", "sim:0?mem=64MiB")
	assert.True(t, r.Fits)
	assert.Positive(t, r.PeakInUse)
	assert.Equal(t, r.RecordedPeak, r.PeakInUse)
	r = replayJSON(t, path, "-device", "sim:0?mem=64KiB", "-pool=on")
	assert.False(t, r.Fits)
	require.NotNil(t, r.Failure)
}

// Bad command lines exit 2 with the usage line; an unreadable log exits 1.
func TestReplayBadInput(t *testing.T) {
	bad := writeLog(t, []byte("CUALLOG\x01\x00\x00\x07"))
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "no LOG"},
		{[]string{"a", "b"}, 2, "one LOG at a time"},
		{[]string{"testdata/fbp.alloclog", "-pool", "maybe"}, 2, "want on or off"},
		{[]string{"testdata/fbp.alloclog", "-device", "gpu:9"}, 2, "gpu"},
		{[]string{"testdata/fbp.alloclog", "-frobnicate"}, 2, "frobnicate"},
		{[]string{filepath.Join(t.TempDir(), "missing")}, 1, "no such file"},
		{[]string{bad}, 1, "not a valid allocation log"},
	}
	for _, c := range cases {
		code, out, stderr := runCmd(append([]string{"replay"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v: %s", c.args, stderr)
		assert.Empty(t, out, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
}

// An allocation larger than any device is a failure the replay reports,
// with or without the pool, not an error.
func TestReplayHugeAllocation(t *testing.T) {
	g := &accounting.Log{Name: "x", Events: []accounting.LogEvent{
		{Op: accounting.OpAlloc, ID: 1, Bytes: 1 << 62},
		{Op: accounting.OpAlloc, ID: 2, Bytes: 1<<63 - 1},
	}}
	var buf bytes.Buffer
	_, err := g.WriteTo(&buf)
	require.NoError(t, err)
	path := writeLog(t, buf.Bytes())
	for _, p := range []string{"off", "on"} {
		r := replayJSON(t, path, "-device", "sim:0?mem=1MiB", "-pool="+p)
		assert.False(t, r.Fits, "-pool=%s", p)
		require.NotNil(t, r.Failure)
		assert.Equal(t, 1, r.Failure.ID)
		assert.Equal(t, int64(1<<63-1), r.RecordedPeak, "the log's peak saturates")
	}
}

// The largest allocation a log can hold (8 EiB less a byte), alone: the
// pool refuses it as a size it cannot round up, not as out of memory, and
// the replay still reports it as the failure to fit (it exited 1 with the
// pool's "invalid value" before), with or without the pool.
func TestReplayLargestAllocation(t *testing.T) {
	g := &accounting.Log{Name: "x", Events: []accounting.LogEvent{
		{Op: accounting.OpAlloc, ID: 1, Bytes: 1<<63 - 1},
		{Op: accounting.OpFree, ID: 1, Bytes: 1<<63 - 1},
	}}
	var buf bytes.Buffer
	_, err := g.WriteTo(&buf)
	require.NoError(t, err)
	path := writeLog(t, buf.Bytes())
	for _, p := range []string{"off", "on"} {
		r := replayJSON(t, path, "-device", "sim:0?mem=1MiB", "-pool="+p)
		assert.False(t, r.Fits, "-pool=%s", p)
		require.NotNil(t, r.Failure, "-pool=%s", p)
		assert.Equal(t, 1, r.Failure.ID)
		assert.Equal(t, int64(1<<63-1), r.Failure.Bytes)
	}
}

// The log the binary carries, example:fbp, replays as the file it was made
// from does, from any directory, so that replay -h's examples run where an
// installed binary is.
func TestReplayExampleLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"on a small device", []string{"-device", "sim:0?mem=128KiB"}},
		{"through the pool", []string{"-device", "sim:0?mem=64MiB", "-pool=on"}},
		{"as JSON", []string{"-device", "sim:0?mem=1MiB", "-json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, fromFile, stderr := runCmd(append([]string{"replay", "testdata/fbp.alloclog"}, tc.args...)...)
			require.Equal(t, 0, code, stderr)
			t.Chdir(t.TempDir())
			code, carried, stderr := runCmd(append([]string{"replay", "example:fbp"}, tc.args...)...)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, strings.ReplaceAll(fromFile, "testdata/fbp.alloclog", "example:fbp"), carried)
		})
	}
}
