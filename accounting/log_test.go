package accounting_test

import (
	"bytes"
	"encoding/json"
	"expvar"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestEventLogAndLeaks(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	_, err := l.Outstanding()
	assert.ErrorIs(t, err, accounting.ErrLogOff)
	_, _, err = l.StopLog()
	assert.ErrorIs(t, err, accounting.ErrLogOff)

	l.StartLog(accounting.LogConfig{Stacks: true})
	require.NoError(t, l.Alloc(accounting.Device, 0xa000, 256))
	require.NoError(t, l.Alloc(accounting.Pinned, 0xb000, 512))
	l.Free(accounting.Device, 0xa000, 256)
	l.RecordCopy(accounting.HtoD, accounting.PathPinned, 512, time.Microsecond)
	require.NoError(t, l.SetLimit(accounting.Device, 1))
	require.Error(t, l.Alloc(accounting.Device, 0, 2))

	out, err := l.Outstanding()
	require.NoError(t, err)
	require.Len(t, out, 1, "only the pinned allocation is still live")
	assert.Equal(t, uintptr(0xb000), out[0].Addr)

	assert.Contains(t, out[0].Stack, "TestEventLogAndLeaks", "the stack names the allocating test")

	var buf bytes.Buffer
	n, err := l.LeakReport(&buf)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Contains(t, buf.String(), "512 B pinned at 0xb000")

	events, dropped, err := l.StopLog()
	require.NoError(t, err)
	assert.Zero(t, dropped)
	ops := make([]accounting.Op, len(events))
	for i, e := range events {
		ops[i] = e.Op
	}
	assert.Equal(t, []accounting.Op{accounting.OpAlloc, accounting.OpAlloc, accounting.OpFree, accounting.OpCopy, accounting.OpFailed}, ops)
	assert.Equal(t, int64(256), events[0].Level, "device level after the allocation")
	assert.Equal(t, int64(512), events[1].Level, "pinned level after the allocation")
	assert.Equal(t, int64(0), events[2].Level, "device level after the free")
	_, err = l.Events()
	assert.ErrorIs(t, err, accounting.ErrLogOff, "stopped")
}

func TestEventLogDropsPastMax(t *testing.T) {
	var l accounting.Ledger
	l.StartLog(accounting.LogConfig{MaxEvents: 3})
	for i := range 5 {
		l.RecordCopy(accounting.DtoD, accounting.PathD2D, int64(i), 0)
	}
	events, dropped, err := l.StopLog()
	require.NoError(t, err)
	assert.Len(t, events, 3)
	assert.Equal(t, int64(2), dropped)
}

func TestTraceIsChromeTraceJSON(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	var buf bytes.Buffer
	assert.ErrorIs(t, l.Trace(&buf), accounting.ErrLogOff)

	l.StartLog(accounting.LogConfig{})
	require.NoError(t, l.Alloc(accounting.Device, 1, 1<<20))
	l.RecordCopy(accounting.HtoD, accounting.PathDirect, 1<<20, 5*time.Microsecond)
	l.RecordMemset(64, time.Microsecond)
	l.Free(accounting.Device, 1, 1<<20)
	require.NoError(t, l.SetLimit(accounting.Device, 1))
	require.Error(t, l.Alloc(accounting.Device, 2, 2))
	require.NoError(t, l.Trace(&buf))

	var tr struct {
		TraceEvents []struct {
			Name string
			Ph   string
			Ts   float64
			Dur  float64
			Tid  int
			Args map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &tr))
	var counters, slices, instants int
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "C":
			counters++
			assert.Equal(t, "device bytes", e.Name)
		case "X":
			slices++
			assert.Greater(t, e.Dur, 0.0)
		case "i":
			instants++
		}
	}
	assert.Equal(t, 2, counters, "one counter sample per alloc and free")
	assert.Equal(t, 2, slices, "the copy and the memset")
	assert.Equal(t, 1, instants, "the failed allocation")
	assert.True(t, strings.Contains(buf.String(), `"HtoD direct 1.00 MiB"`))
}

// The trace names the process after the ledger and gives each copy
// direction, memory and memsets a track of their own; every event sits at
// its time in microseconds, a copy or memset as a slice that ends when it
// was recorded.
func TestTraceTracksAndTimes(t *testing.T) {
	type traceEvent struct {
		Name string
		Ph   string
		Ts   float64
		Dur  float64
		Tid  int
		Args map[string]any
	}
	trace := func(l *accounting.Ledger) []traceEvent {
		var buf bytes.Buffer
		require.NoError(t, l.Trace(&buf))
		var tr struct{ TraceEvents []traceEvent }
		require.NoError(t, json.Unmarshal(buf.Bytes(), &tr))
		return tr.TraceEvents
	}
	for name, want := range map[string]string{"sim:2": "sim:2", "": "cuarray"} {
		l := accounting.NewLedger(name)
		l.StartLog(accounting.LogConfig{})
		events := trace(l)
		require.NotEmpty(t, events)
		assert.Equal(t, "process_name", events[0].Name)
		assert.Equal(t, want, events[0].Args["name"], "the process of ledger %q", name)
	}

	l := accounting.NewLedger("sim:0")
	l.StartLog(accounting.LogConfig{})
	n := rand.Int64N(1<<20) + 1
	require.NoError(t, l.Alloc(accounting.Device, 1, n))
	for d := range accounting.NumDirections {
		l.RecordCopy(d, accounting.PathDirect, n, time.Duration(1+rand.IntN(1e6))*time.Nanosecond)
	}
	l.RecordMemset(n, time.Duration(1+rand.IntN(1e6))*time.Nanosecond)
	l.RecordLaunch("saxpy", 2*n, n)
	l.Free(accounting.Device, 1, n)
	logged, err := l.Events()
	require.NoError(t, err)
	events := trace(l)

	tracks := map[int]string{}
	var timed []traceEvent
	for _, e := range events {
		if e.Name == "thread_name" {
			assert.NotContains(t, tracks, e.Tid, "track %d named twice", e.Tid)
			tracks[e.Tid] = e.Args["name"].(string)
		} else if e.Ph != "M" {
			timed = append(timed, e)
		}
	}
	want := map[int]string{0: "memory", 1 + int(accounting.NumDirections): "memset", 2 + int(accounting.NumDirections): "kernels"}
	for d := range accounting.NumDirections {
		want[1+int(d)] = "copy " + d.String()
	}
	assert.Equal(t, want, tracks, "one track per direction, memory, memsets and kernels")

	require.Len(t, timed, len(logged))
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	for i, e := range logged {
		got := timed[i]
		switch e.Op {
		case accounting.OpAlloc, accounting.OpFree:
			assert.Equal(t, 0, got.Tid, "%v on the memory track", e.Op)
			assert.InDelta(t, us(e.At), got.Ts, 1e-6, "%v at its time in µs", e.Op)
		case accounting.OpCopy, accounting.OpMemset:
			tid := 1 + int(accounting.NumDirections)
			if e.Op == accounting.OpCopy {
				tid = 1 + int(e.Dir)
			}
			assert.Equal(t, tid, got.Tid, "%v %v on its track", e.Op, e.Dir)
			assert.InDelta(t, us(e.Dur), got.Dur, 1e-6, "%v %v lasts its time in µs", e.Op, e.Dir)
			assert.InDelta(t, us(e.At-e.Dur), got.Ts, 1e-6, "%v %v ends when it was recorded", e.Op, e.Dir)
		case accounting.OpLaunch:
			assert.Equal(t, 2+int(accounting.NumDirections), got.Tid, "launches on the kernels track")
			assert.Equal(t, "saxpy", got.Name)
			assert.Equal(t, float64(2*n), got.Args["read_bytes"])
			assert.InDelta(t, us(e.At), got.Ts, 1e-6, "the launch at its time in µs")
		}
	}
}

func TestPublishExpvar(t *testing.T) {
	l := accounting.NewLedger("svc")
	require.NoError(t, l.Alloc(accounting.Host, 1, 42))
	// expvar names live as long as the process: unique per run, so that
	// -count=N runs the test N times.
	name := fmt.Sprintf("cuarray_test_%s_%d", strings.ReplaceAll(t.Name(), "/", "_"), rand.Uint64())
	require.NoError(t, l.Publish(name))
	assert.Error(t, l.Publish(name), "the name is taken: an error, not expvar's panic")

	var got struct {
		Memory map[string]accounting.KindStats
	}
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &got))
	assert.Equal(t, int64(42), got.Memory["host"].Current)
}

// Outstanding lists the live allocations oldest first, whatever their
// addresses, and leaves the freed ones out.
func TestOutstandingOldestFirst(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	l.StartLog(accounting.LogConfig{})
	addrs := randomAddrs(8)
	for _, a := range addrs {
		require.NoError(t, l.Alloc(accounting.Host, a, 64))
		time.Sleep(time.Microsecond) // each at a time of its own
	}
	gone := rand.IntN(len(addrs))
	l.Free(accounting.Host, addrs[gone], 64)
	out, err := l.Outstanding()
	require.NoError(t, err)
	var got []uintptr
	for _, a := range out {
		got = append(got, a.Addr)
	}
	want := append(append([]uintptr{}, addrs[:gone]...), addrs[gone+1:]...)
	assert.Equal(t, want, got, "oldest first")
	for _, a := range want {
		l.Free(accounting.Host, a, 64)
	}
}

// randomAddrs returns n distinct random addresses, in no order.
func randomAddrs(n int) []uintptr {
	seen := map[uintptr]bool{}
	var out []uintptr
	for len(out) < n {
		a := uintptr(rand.Uint64N(1<<40)) &^ 0xff
		if a != 0 && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
